-- Where the agent itself exposed a secret: one row per event and kind of secret, never the value. In a
-- trace the screen quarantines, noted before its content is deleted (stage/exposures.sql, or the
-- markers of its redacted values); in a kept trace, from the markers its redacted values left in its
-- events (facts/exposure_markers.sql, at every detect, a redetect too). The detector secret_exposed
-- reads it.
--   sealed    the trace's key in findings and lessons: for a quarantined trace a salted hash of its id,
--             never the id itself; for a kept trace its id
--   event_id  the event (findings name it only in a kept trace)
--   how       'output' (a call's result showed it), 'command' (the agent's call carried it), 'reply'
--             (the agent's own message held it)
--   command   the program and sub-command of the call (lw_tool_key), never its arguments
CREATE TEMP TABLE IF NOT EXISTS exposures (
    sealed VARCHAR, trace_id VARCHAR, seq INTEGER, event_id VARCHAR, kind VARCHAR, how VARCHAR, tool VARCHAR, command VARCHAR,
    tenant VARCHAR, source VARCHAR, project VARCHAR, file VARCHAR
);
