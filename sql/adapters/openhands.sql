-- format: openhands
-- title: OpenHands event histories: an evaluation's output.jsonl (one run a line) and a session's event stream
-- match: CASE WHEN list_has_all(json_keys(doc), ['instance_id', 'history']) THEN json_type(doc, '$.history') = 'ARRAY'
--   WHEN list_has_all(json_keys(doc), ['agent_class', 'llm_config', 'max_iterations']) THEN true
--   WHEN list_has_all(json_keys(doc), ['id', 'source', 'timestamp'])
--     THEN doc->>'source' IN ('agent', 'user', 'environment')
--          AND (json_type(doc, '$.action') = 'VARCHAR' OR json_type(doc, '$.observation') = 'VARCHAR')
--   ELSE false END
-- priority: 335
-- gathers: yes
-- whole: json_exists(doc, '$.history')
-- roles: by file. An evaluation's output.jsonl (a run a line): user = harness (source user: the task
--   statement and the evaluation harness's fake user, "Please continue working on the task…"; no person takes
--   part). A session's event stream: user = human (source user: what the person typed), but the fake user's
--   reply of an evaluation run (its fixed text) = harness; a user_rejected observation (the person refused an
--   action in confirmation mode) = human (a human_correction with no words). Both: agent = agent (actions and
--   messages), environment = tool (observations), the system prompt = context. Read in All-Hands-AI/OpenHands
--   openhands/events/event.py (EventSource), evaluation/utils/shared.py (codeact_user_response, the fake
--   user), evaluation/benchmarks/swe_bench/run_infer.py (the instruction sent as the user's message),
--   openhands/events/observation/reject.py (UserRejectObservation).
--
-- OpenHands (All-Hands-AI/OpenHands) keeps a run as a stream of events, each an action or an observation
-- with an `id`, its `source` (agent, user, environment), a `timestamp` and, for an observation, the
-- `cause` (the id of the action it answers). Two files hold them:
--   - an evaluation's output.jsonl, one run a line: {instance_id, instruction, history, metadata, error,
--     test_result, ...}; the run is a trace (its id the instance_id), its outcome the `error` the run
--     stopped with ("Agent reached maximum iteration ...", "AgentStuckInLoopError ..."), else `finished`
--     when the agent called finish;
--   - a session's event stream, sessions/<sid>/events/<id>.json, one event a file: the session is a trace
--     (its id the folder's name), its outcome the agent's last state (finished, error, stopped...).
-- Events: a user `message` of a session is a user_message of the person (the task when it is the first);
-- one of an evaluation run, and the fake user's fixed reply anywhere ("Please continue working on the
-- task..."), is a workflow_step of the harness (the first, its task statement); an agent `message` an
-- assistant_message; `finish` the final_answer (its final thought); the
-- other actions (run, run_ipython, edit, read, browse, ...) tool_calls named by the function the model
-- called (tool_call_metadata.function_name: execute_bash, str_replace_editor) else the action, their
-- arguments in metadata; observations tool_results of their cause, failed on a non-zero exit code
-- (extras.exit_code, or extras.metadata.exit_code), `success: false`, an `error` observation or an editor's
-- `ERROR:`; a `user_rejected` observation (an action the person refused in confirmation mode) a
-- tool_result with status rejected and a human_correction. The system prompt is the trace's context (traces.extra.system); recall, agent state and null
-- events are bookkeeping (no event; linked). The same run read from both files is two traces: give one.
-- An evaluation's metadata.json is linked to the runs of the output.jsonl beside it (rejected, with that
-- reason, when read alone). A run whose `history` is not a list, or an event with no id, is rejected.

CREATE OR REPLACE TEMP TABLE oh_meta AS
SELECT file_id, file, line, record FROM records_in
WHERE NOT json_exists(doc, '$.history') AND list_has_all(json_keys(doc), ['agent_class', 'llm_config', 'max_iterations']);

CREATE OR REPLACE TEMP TABLE oh_docs AS
SELECT file_id, file, line, record, doc, json_type(doc, '$.history') = 'ARRAY' AS is_run,
       -- the trace a record is of: a run's instance, or the session folder an event file sits in
       CASE WHEN json_exists(doc, '$.history') THEN nullif(trim(doc->>'instance_id'), '')
            ELSE coalesce(nullif(regexp_extract(file, '([^/\\]+)[/\\]events[/\\][^/\\]+$', 1), ''),
                          'openhands-' || substr(md5(file), 1, 12)) END AS trace_id
FROM records_in ANTI JOIN oh_meta USING (file_id, record);

INSERT INTO rejects (file_id, line, record, reason)
SELECT file_id, line, record, 'field ''history'' must be a list'
FROM oh_docs WHERE json_exists(doc, '$.history') AND NOT is_run
UNION ALL
SELECT file_id, line, record, 'event has no id'
FROM oh_docs WHERE NOT json_exists(doc, '$.history') AND TRY_CAST(doc->>'id' AS BIGINT) IS NULL;

-- every event with its trace and place: a run's history in order, a session's files by event id. A run
-- or an event read twice (a copy of the file) is read once: the first copy (by file, then place).
CREATE OR REPLACE TEMP TABLE oh_events AS
SELECT * FROM (
SELECT *, row_number() OVER (PARTITION BY trace_id, coalesce(e->>'id', pos::VARCHAR), run_record IS NULL
                             ORDER BY file, record) AS copy
FROM (
SELECT d.file_id, d.file, d.record, d.trace_id, h.pos, h.e, d.record AS run_record
FROM oh_docs d, LATERAL (SELECT generate_subscripts(items, 1) AS pos, unnest(items) AS e
                         FROM (SELECT json_extract(d.doc, '$.history[*]') AS items)) h
WHERE d.is_run AND d.trace_id IS NOT NULL
  -- a run in two files: the first file's copy
  AND (d.file, d.record) = (SELECT min((x.file, x.record)) FROM oh_docs x WHERE x.is_run AND x.trace_id = d.trace_id)
UNION ALL
SELECT file_id, file, record, trace_id, TRY_CAST(doc->>'id' AS BIGINT), doc, NULL
FROM oh_docs WHERE NOT json_exists(doc, '$.history') AND TRY_CAST(doc->>'id' AS BIGINT) IS NOT NULL
)) WHERE copy = 1;


INSERT INTO rejects (file_id, line, record, reason)
SELECT file_id, line, record, 'missing required field ''instance_id'''
FROM oh_docs WHERE is_run AND trace_id IS NULL;

-- The evaluation harness's fake user (evaluation/utils/shared.py, codeact_user_response): its fixed reply
-- whenever the agent asks the user something.
CREATE OR REPLACE TEMP MACRO oh_fake_user(t) AS
    regexp_matches(coalesce(t, ''), '^\s*Please continue working on the task on whatever approach you think is suitable');

CREATE OR REPLACE TEMP TABLE oh_parts AS
WITH typed AS (
    SELECT file_id, record, trace_id, pos, e, run_record IS NOT NULL AS in_run,
           e->>'source' AS src, e->>'action' AS act, e->>'observation' AS obs,
           e->>'id' AS id, e->>'cause' AS cause, e->'tool_call_metadata'->>'function_name' AS fn,
           lw_utc(e->>'timestamp') AS ts
    FROM oh_events
)
SELECT file_id, record, trace_id, pos, id, cause, ts, coalesce(act, obs) AS raw_type, fn,
       CASE WHEN act = 'system' OR act IN ('recall', 'change_agent_state') OR obs IN ('recall', 'agent_state_changed', 'null')
                 OR (act IS NULL AND obs IS NULL) THEN NULL
            -- who wrote the user's message: the harness in an evaluation run, the person in a session
            WHEN act = 'message' AND src = 'user'
                 THEN CASE WHEN in_run OR oh_fake_user(coalesce(e->'args'->>'content', e->>'message')) THEN 'workflow_step'
                           ELSE 'user_message' END
            WHEN act = 'message' THEN 'assistant_message'
            WHEN act = 'finish' THEN 'final_answer'
            WHEN act IS NOT NULL THEN 'tool_call'
            ELSE 'tool_result' END AS kind,
       CASE WHEN act = 'message' THEN coalesce(e->'args'->>'content', e->>'message')
            WHEN act = 'finish' THEN coalesce(nullif(e->'args'->>'final_thought', ''), nullif(e->'args'->>'thought', ''), e->>'message')
            WHEN act IS NOT NULL THEN coalesce(e->'args'->>'command', e->'args'->>'code', e->'args'->>'path', e->'args'->>'url', e->>'message')
            ELSE e->>'content' END AS text,
       CASE WHEN act IS NOT NULL AND act NOT IN ('message', 'finish', 'system') THEN e->'args' END AS args,
       obs IS NOT NULL AND (obs = 'error'
           OR coalesce(TRY_CAST(coalesce(e->'extras'->>'exit_code', e->'extras'->'metadata'->>'exit_code') AS INTEGER), 0) NOT IN (0)
           OR lower(coalesce(e->>'success', '')) = 'false'
           OR regexp_matches(coalesce(e->>'content', ''), '^\s*ERROR:')) AS failed,
       CASE WHEN act = 'system' THEN coalesce(e->'args'->>'content', e->>'message') END AS system_text,
       obs = 'user_rejected' AS rejected, src = 'user' AND act = 'message' AS said,
       CASE WHEN obs = 'agent_state_changed' THEN e->'extras'->>'agent_state' END AS state
FROM typed;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
WITH per AS (
    SELECT trace_id, min(file_id) AS file_id, min(record) AS record, min(ts) AS started_at, max(ts) AS ended_at,
           arg_min(text, pos) FILTER (WHERE said) AS first_said,
           string_agg(system_text, chr(10) || chr(10) ORDER BY pos) AS system,
           arg_max(state, pos) FILTER (WHERE state IS NOT NULL) AS state,
           bool_or(kind = 'final_answer') AS finished
    FROM oh_parts GROUP BY trace_id
),
runs AS (
    SELECT doc->>'instance_id' AS trace_id, any_value(doc) AS doc FROM oh_docs WHERE is_run GROUP BY 1
)
SELECT p.trace_id, 'openhands',
       'openhands' || coalesce('/' || (r.doc->'metadata'->>'agent_class'), ''),
       lw_clip(coalesce(r.doc->>'instruction', p.first_said), 300),
       coalesce(nullif(trim(r.doc->>'error'), ''), CASE WHEN p.finished THEN 'finished' END, p.state),
       NULL, f.path, d.line, p.started_at, p.ended_at,
       json_object('instance_id', r.doc->'instance_id', 'agent_class', r.doc->'metadata'->'agent_class',
                   'model', r.doc->'metadata'->'llm_config'->'model', 'max_iterations', r.doc->'metadata'->'max_iterations'),
       CASE WHEN p.system IS NOT NULL THEN json_object('system', p.system) END,
       p.file_id, p.record
FROM per p LEFT JOIN runs r USING (trace_id)
JOIN oh_docs d ON d.file_id = p.file_id AND d.record = p.record
JOIN files f ON f.file_id = p.file_id;

-- an action the person rejected did not run (its observation, status rejected) and is their correction (a
-- copy, after it, with no words: OpenHands records none)
INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT p.trace_id, row_number() OVER (PARTITION BY p.trace_id ORDER BY p.pos, p.copy)::INTEGER,
       p.id || CASE WHEN p.copy THEN '/correction' ELSE '' END,
       CASE WHEN p.copy THEN 'human_correction' ELSE p.kind END, p.raw_type,
       CASE WHEN p.copy THEN '' ELSE p.text END,
       CASE WHEN p.copy THEN NULL WHEN p.rejected THEN 'rejected'
            WHEN p.kind = 'tool_result' THEN CASE WHEN p.failed THEN 'error' ELSE 'ok' END END,
       CASE WHEN p.copy THEN NULL WHEN p.rejected THEN false WHEN p.kind = 'tool_result' THEN NOT p.failed END,
       CASE WHEN p.kind IN ('tool_call', 'tool_result') THEN coalesce(p.fn, c.fn, c.act, p.raw_type) END,
       p.ts, CASE WHEN p.kind = 'tool_result' THEN p.cause END,
       CASE WHEN p.kind = 'tool_call' THEN json_object('arguments', p.args) END,
       NULL, p.file_id, p.record,
       CASE WHEN p.kind = 'workflow_step' THEN 'harness' WHEN p.kind = 'user_message' OR p.copy THEN 'human' END
FROM (SELECT *, false AS copy FROM oh_parts WHERE kind IS NOT NULL
      UNION ALL
      SELECT *, true FROM oh_parts WHERE rejected) p
-- a rejection names no tool: the action it refused does
LEFT JOIN (SELECT trace_id, id, fn, raw_type AS act FROM oh_parts WHERE kind = 'tool_call') c
       ON p.rejected AND c.trace_id = p.trace_id AND c.id = p.cause;

-- bookkeeping events (recall, agent state, the system prompt) and second copies of a run or an event
-- belong to the trace they are of
INSERT INTO record_links (file_id, record, trace_id)
SELECT d.file_id, d.record, d.trace_id
FROM oh_docs d
WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.file_id = d.file_id AND e.record = d.record)
  AND NOT EXISTS (SELECT 1 FROM traces t WHERE t.file_id = d.file_id AND t.record = d.record)
  AND NOT EXISTS (SELECT 1 FROM rejects r WHERE r.file_id = d.file_id AND r.record = d.record);

-- an evaluation's metadata.json (its configuration) describes the runs of output.jsonl beside it: linked
-- to them when read with them, else there is nothing to load from it alone
INSERT INTO record_links (file_id, record, trace_id)
SELECT m.file_id, m.record, t.trace_id
FROM oh_meta m JOIN traces t ON t.format = 'openhands'
                            AND regexp_replace(t.file, '[^/\\]*$', '') = regexp_replace(m.file, '[^/\\]*$', '');
INSERT INTO rejects (file_id, line, record, reason)
SELECT file_id, line, record, 'OpenHands run metadata (the configuration of an evaluation), read without the output.jsonl of its runs: nothing to load from it alone'
FROM oh_meta m WHERE NOT EXISTS (SELECT 1 FROM record_links l WHERE l.file_id = m.file_id AND l.record = m.record);

DROP TABLE oh_meta;
DROP TABLE oh_docs;
DROP TABLE oh_events;
DROP TABLE oh_parts;
DROP MACRO oh_fake_user;
