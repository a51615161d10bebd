-- format: stream
-- title: WebSocket stream events, one event per record, wire or documented shape (../shared/formats/stream-events.md)
-- match: json_exists(doc, '$.event_type') AND NOT json_exists(doc, '$.payload')
--   AND NOT json_exists(doc, '$.schema_version') AND NOT json_exists(doc, '$.events')
--   AND (coalesce(doc->>'type', '') = 'trace_event' OR json_exists(doc, '$.scope') OR json_exists(doc, '$.task_id'))
-- priority: 300
-- gathers: yes
--
-- Reads records_in(file_id, file, line, record, doc) and fills staging traces, events, rejects and record_links.
-- A trace is a task_id, gathered across the records (and files) of the batch. Records come in two shapes:
-- the wire envelope the server sends (event_id, older names such as tool_execution_start) and the
-- documented one (id, scope/action/category, names such as action_start_tool); both route onto the same
-- scope/action/category and from there onto canonical types. An event id seen twice in a task (a replay
-- on reconnect, or the same run delivered again or in the other shape) is kept once: a later copy whose
-- canonical fields agree is linked to the trace (record_links), one that differs is rejected.

-- The older names the server still sends, as the scope/action/category they stand for.
CREATE OR REPLACE TEMP TABLE stream_legacy_names (name VARCHAR, scope VARCHAR, action VARCHAR, category VARCHAR);
INSERT INTO stream_legacy_names VALUES
    ('user_message', 'task', 'start', 'message'),
    ('ai_message', 'task', 'end', 'message'),
    ('task_completion', 'task', 'end', 'general'),
    -- the public name of every task and step error, whatever produced it
    ('trace_error', 'task', 'error', 'general'),
    ('dag_plan_start', 'task', 'start', 'dag_plan'),
    ('dag_plan_end', 'task', 'end', 'dag_plan'),
    ('dag_execute_start', 'task', 'start', 'dag'),
    ('dag_execution', 'task', 'update', 'dag'),
    ('dag_execute_end', 'task', 'end', 'dag'),
    ('dag_step_start', 'step', 'start', 'dag'),
    ('dag_step_end', 'step', 'end', 'dag'),
    ('react_task_start', 'task', 'start', 'react'),
    ('react_task_end', 'task', 'end', 'react'),
    ('react_step_start', 'step', 'start', 'react'),
    ('react_step_end', 'step', 'end', 'react'),
    ('react_action_start', 'action', 'start', 'react'),
    ('react_action_end', 'action', 'end', 'react'),
    ('llm_call_start', 'action', 'start', 'llm'),
    ('llm_call_end', 'action', 'end', 'llm'),
    ('llm_call_failed', 'action', 'error', 'llm'),
    ('tool_execution_start', 'action', 'start', 'tool'),
    ('tool_execution_end', 'action', 'end', 'tool'),
    ('tool_execution_failed', 'action', 'error', 'tool'),
    ('skill_select_start', 'task', 'start', 'skill'),
    ('skill_select_end', 'task', 'end', 'skill'),
    ('visualization_update', 'system', 'update', 'visualization'),
    -- a task handed to a worker agent, which the server runs as a tool
    ('workforce_delegation_start', 'action', 'start', 'delegation'),
    ('workforce_delegation_end', 'action', 'end', 'delegation'),
    ('workforce_delegation_error', 'action', 'error', 'delegation');

CREATE OR REPLACE TEMP TABLE stream_docs AS
SELECT file_id, file, line, record, doc,
       doc->>'task_id' AS task_id,
       coalesce(doc->>'id', doc->>'event_id') AS event_id,
       doc->>'event_type' AS raw_type,
       json_type(doc, '$.data') AS t_data,
       json_type(doc, '$.timestamp') AS t_timestamp,
       try_cast(doc->>'timestamp' AS DOUBLE) AS unix_ts
FROM records_in;

-- The first thing wrong with each record. Redacted public events (a fixed message and a few whitelisted
-- data fields) are well-formed records and pass.
CREATE OR REPLACE TEMP TABLE stream_problems AS
SELECT file_id, record, problem FROM (
    SELECT file_id, record,
           CASE
             WHEN lw_field_problem(doc, 'task_id', true) IS NOT NULL THEN lw_field_problem(doc, 'task_id', true)
             WHEN lw_field_problem(doc, 'event_type', false) IS NOT NULL THEN lw_field_problem(doc, 'event_type', false)
             WHEN t_data NOT IN ('OBJECT', 'NULL') THEN 'field ''data'' must be an object'
             WHEN t_timestamp <> 'NULL' AND unix_ts IS NULL THEN 'field ''timestamp'' must be Unix seconds'
             WHEN unix_ts < 0 OR unix_ts >= 1e13 THEN 'field ''timestamp'' is out of range'
           END AS problem
    FROM stream_docs
) WHERE problem IS NOT NULL;

-- Each well-formed event with its route: scope/action/category as written, else what its name stands for.
CREATE OR REPLACE TEMP TABLE stream_routed AS
WITH named AS (
    SELECT d.*, lower(trim(d.raw_type)) AS name,
           CASE WHEN d.t_data = 'OBJECT' THEN d.doc->'data' END AS data,
           regexp_extract(lower(trim(d.raw_type)),
                          '^(task|step|action|system)_(start|end|error|info|update)_([a-z_]+)$',
                          ['scope', 'action', 'category']) AS parsed
    FROM stream_docs d
    ANTI JOIN stream_problems p USING (file_id, record)
)
SELECT n.file_id, n.file, n.line, n.record, n.doc, n.data, n.raw_type,
       n.task_id AS trace_id,
       n.event_id AS written_id,
       coalesce(n.event_id, 'record-' || n.record) AS event_id,
       CASE WHEN n.doc->>'scope' IS NOT NULL AND n.doc->>'action' IS NOT NULL AND n.doc->>'category' IS NOT NULL
                 THEN {'scope': lower(trim(n.doc->>'scope')), 'action': lower(trim(n.doc->>'action')),
                       'category': lower(trim(n.doc->>'category'))}
            WHEN l.name IS NOT NULL THEN {'scope': l.scope, 'action': l.action, 'category': l.category}
            WHEN n.parsed.scope <> '' THEN n.parsed
       END AS route,
       coalesce(n.data->>'status', n.data->'result'->>'status') AS status_written,
       coalesce(n.data->>'success', n.data->'result'->>'success') AS success_written,
       -- Unix seconds; a value this large can only be milliseconds
       to_timestamp(CASE WHEN n.unix_ts >= 1e11 THEN n.unix_ts / 1000 ELSE n.unix_ts END) AT TIME ZONE 'UTC' AS ts
FROM named n LEFT JOIN stream_legacy_names l ON l.name = n.name;

CREATE OR REPLACE TEMP TABLE stream_typed AS
SELECT r.*,
       -- an error action is a failure even when its (redacted) data says nothing more
       CASE WHEN route.action = 'error' THEN coalesce(status_written, 'failed') ELSE status_written END AS status,
       coalesce(lw_bool(success_written), CASE WHEN route.action = 'error' THEN false END) AS success,
       route.scope = 'task' AND route.action = 'end' AND route.category IN ('general', 'dag', 'react') AS is_run_end,
       CASE
         WHEN route.category IN ('tool', 'delegation') THEN
              CASE route.action WHEN 'start' THEN 'tool_call' WHEN 'end' THEN 'tool_result'
                                WHEN 'error' THEN 'tool_result' ELSE 'unknown' END
         WHEN route.category = 'llm' AND route.action IN ('start', 'end', 'error') THEN 'model_call'
         WHEN route.category = 'message' THEN
              CASE WHEN route.action = 'start' THEN 'user_message'
                   WHEN route.action = 'end' THEN 'assistant_message'
                   -- the documented shape sends both as task_info_message: the reply carries content,
                   -- the user's turn a message
                   WHEN json_exists(data, '$.content') THEN 'assistant_message'
                   WHEN json_exists(data, '$.message') THEN 'user_message'
                   ELSE 'unknown' END
         WHEN route.action = 'error' THEN 'error'
         WHEN is_run_end THEN CASE WHEN lw_failed(status, success) THEN 'workflow_step' ELSE 'final_answer' END
         WHEN route.category IN ('dag', 'dag_plan', 'react') THEN 'workflow_step'
         ELSE 'unknown'
       END AS type,
       nullif(trim(coalesce(data->>'tool_name',
                            CASE WHEN route.category IN ('tool', 'delegation')
                                 THEN coalesce(data->>'name', data->>'tool', data->>'agent_name') END)),
              '') AS tool_name,
       CASE json_type(data, '$.result') WHEN 'VARCHAR' THEN data->>'result' WHEN 'NULL' THEN NULL
            ELSE CAST(data->'result' AS VARCHAR) END AS result_text,
       coalesce(data->>'error_message', data->>'error') AS error_text
FROM stream_routed r;

-- Every well-formed record as the event it would become.
CREATE OR REPLACE TEMP TABLE stream_mapped AS
SELECT trace_id, written_id, event_id, type, raw_type,
       CASE type
         WHEN 'user_message' THEN coalesce(data->>'message', data->>'content')
         WHEN 'assistant_message' THEN coalesce(data->>'content', data->>'message')
         WHEN 'tool_call' THEN tool_name
         WHEN 'tool_result' THEN CASE WHEN lw_failed(status, success) THEN coalesce(error_text, result_text)
                                      ELSE result_text END
         WHEN 'model_call' THEN coalesce(error_text, nullif(data->'response'->>'content', ''))
         WHEN 'error' THEN coalesce(error_text, data->>'message')
         WHEN 'final_answer' THEN coalesce(data->'result'->>'output', data->'result'->>'response',
                                           data->'result'->>'content',
                                           CASE WHEN json_type(data, '$.result') = 'VARCHAR' THEN result_text END,
                                           data->>'content')
         WHEN 'workflow_step' THEN coalesce(data->>'step_name', data->>'name', data->>'description',
                                            route.category || ' ' || route.scope || ' ' || route.action
                                                || coalesce(': ' || status, ''))
         ELSE coalesce(data->>'message', data->>'content')
       END AS content,
       status, success, tool_name, ts,
       doc->>'parent_id' AS parent_id,
       -- envelope fields with no column of their own (step_id, scope/action/category, the wire's type)
       nullif(CAST(json_merge_patch(doc, '{"id":null,"event_id":null,"event_type":null,"task_id":null,
                                           "timestamp":null,"data":null,"parent_id":null}') AS VARCHAR),
              '{}')::JSON AS metadata,
       data AS extra,
       -- what pairs a tool start with its result: the call id, else the tool
       CASE WHEN type IN ('tool_call', 'tool_result') THEN coalesce(data->>'tool_call_id', tool_name) END AS call_key,
       route, is_run_end, doc->>'step_id' AS step_id, file_id, file, line, record
FROM stream_typed;

-- Later records with an event id already seen in their task (in any file): a replay on reconnect, the same
-- run delivered again, or in the other shape. They repeat the event when its canonical fields agree (type,
-- content, status, success, tool, time, parent, step and data; not the name or envelope, which differ
-- between the shapes): linked to the trace. Otherwise they conflict and are rejected. The first wins.
CREATE OR REPLACE TEMP TABLE stream_repeats AS
SELECT file_id, record, trace_id, identical,
       'conflicting duplicate of event ' || written_id || ' of trace ' || trace_id || ' (first at ' || first_file
           || coalesce(' line ' || first_line, ' record ' || first_record) || ')' AS problem
FROM (
    SELECT file_id, record, trace_id, written_id,
           first_value(file) OVER w AS first_file, first_value(line) OVER w AS first_line,
           first_value(record) OVER w AS first_record,
           canonical IS NOT DISTINCT FROM first_value(canonical) OVER w AS identical,
           row_number() OVER w AS nth
    FROM (SELECT *, {'type': type, 'content': content, 'status': status, 'success': success, 'tool_name': tool_name,
                     'ts': ts, 'parent_id': parent_id, 'step_id': step_id, 'data': extra::VARCHAR} AS canonical
          FROM stream_mapped WHERE written_id IS NOT NULL)
    WINDOW w AS (PARTITION BY trace_id, written_id ORDER BY file_id, record)
) WHERE nth > 1;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem
FROM (SELECT file_id, record, problem FROM stream_problems
      UNION ALL SELECT file_id, record, problem FROM stream_repeats WHERE NOT identical) p
JOIN stream_docs d USING (file_id, record);

INSERT INTO record_links (file_id, record, trace_id)
SELECT file_id, record, trace_id FROM stream_repeats WHERE identical;

-- Ordered by timestamp, then file and position; an event without one keeps the time of the event before it.
CREATE OR REPLACE TEMP TABLE stream_events AS
SELECT CAST(row_number() OVER (PARTITION BY trace_id ORDER BY sort_ts NULLS FIRST, file_id, record) AS INTEGER) AS seq,
       *
FROM (
    SELECT m.*, coalesce(ts, last_value(ts IGNORE NULLS) OVER (
                    PARTITION BY trace_id ORDER BY file_id, record
                    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS sort_ts
    FROM stream_mapped m ANTI JOIN stream_repeats r USING (file_id, record)
);

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT trace_id, 'stream',
       'stream' || coalesce('/' || pattern, ''),
       coalesce(task_description, first_request, task_preview, 'unnamed ' || coalesce(pattern, 'stream') || ' task'),
       CASE WHEN any_failure THEN 'failed' WHEN any_success_end THEN 'success' ELSE 'incomplete' END,
       NULL, first_at.file, first_at.line, started_at, ended_at, NULL, NULL, first_at.file_id, first_at.record
FROM (
    SELECT trace_id,
           arg_min({'file_id': file_id, 'file': file, 'line': line, 'record': record}, (file_id, record)) AS first_at,
           -- the pattern that ran the task ('ReActPattern' -> react), else the category of its start
           coalesce(regexp_replace(lower(regexp_replace(
                        arg_min(extra->>'pattern', seq) FILTER (WHERE extra->>'pattern' <> ''), 'Pattern$', '')),
                        '[^a-z0-9]+', '_', 'g'),
                    arg_min(route.category, seq)
                        FILTER (WHERE route.scope = 'task' AND route.category IN ('dag', 'react'))) AS pattern,
           -- the server adds the task's description to events when it has one
           arg_min(extra->>'task_description', seq) FILTER (WHERE trim(extra->>'task_description') <> '')
               AS task_description,
           left(split_part(ltrim(arg_min(content, seq) FILTER (WHERE type = 'user_message' AND trim(content) <> ''),
                                 chr(10) || chr(13) || chr(9) || ' '), chr(10), 1), 200) AS first_request,
           -- kept even on redacted pattern-end events
           arg_min(extra->>'task_preview', seq) FILTER (WHERE trim(extra->>'task_preview') <> '') AS task_preview,
           bool_or(type = 'error' OR (is_run_end AND lw_failed(status, success))) AS any_failure,
           bool_or(is_run_end AND NOT lw_failed(status, success)) AS any_success_end,
           min(ts) AS started_at, max(ts) AS ended_at
    FROM stream_events
    GROUP BY trace_id
);

-- A tool start with no result before the same call starts again (or, with nothing after it, before the
-- tool is called again) did not complete: its failure event was lost or never sent. Marking it failed lets
-- the retry detector see the re-run.
INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT trace_id, seq, event_id, type, raw_type, content,
       CASE WHEN unanswered THEN 'no_result' ELSE status END,
       CASE WHEN unanswered THEN false ELSE success END,
       tool_name, ts, parent_id, metadata, extra, file_id, record
FROM (
    SELECT *,
           type = 'tool_call' AND status IS NULL AND success IS NULL
           AND (next_of_call = 'tool_call' OR (next_of_call IS NULL AND next_call_of_tool IS NOT NULL)) AS unanswered
    FROM (
        SELECT *,
               lead(type) OVER (PARTITION BY trace_id, call_key ORDER BY seq) AS next_of_call,
               lead(seq) OVER (PARTITION BY trace_id, tool_name, type ORDER BY seq) AS next_call_of_tool
        FROM stream_events
    )
);

DROP TABLE stream_legacy_names;
DROP TABLE stream_docs;
DROP TABLE stream_problems;
DROP TABLE stream_routed;
DROP TABLE stream_typed;
DROP TABLE stream_mapped;
DROP TABLE stream_repeats;
DROP TABLE stream_events;
