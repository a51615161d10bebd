-- Where the agent itself exposed a secret, in a trace the screen quarantines (stage/exposures.sql fills
-- it, before the trace's content is deleted): one row per event and kind of secret, never the value.
-- Empty where nothing was staged (redetect over stored traces: their exposures were recorded as they
-- loaded). The detector secret_exposed reads it.
--   sealed    the trace's key in findings and lessons: a salted hash of its id, never the id itself
--   how       'output' (a call's result showed it), 'command' (the agent's call carried it), 'reply'
--             (the agent's own message held it)
--   command   the program and sub-command of the call (lw_tool_key), never its arguments
CREATE TEMP TABLE IF NOT EXISTS exposures (
    sealed VARCHAR, trace_id VARCHAR, seq INTEGER, kind VARCHAR, how VARCHAR, tool VARCHAR, command VARCHAR,
    tenant VARCHAR, source VARCHAR, project VARCHAR, file VARCHAR
);
