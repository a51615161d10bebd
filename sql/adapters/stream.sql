-- format: stream
-- title: WebSocket stream events, one event or frame per record: wire, documented or v2 display shape (../shared/formats/stream-events.md)
-- match: NOT json_exists(doc, '$.payload') AND NOT json_exists(doc, '$.schema_version') AND NOT json_exists(doc, '$.events')
--   AND ((json_exists(doc, '$.event_type')
--         AND (coalesce(doc->>'type', '') = 'trace_event' OR json_exists(doc, '$.scope') OR json_exists(doc, '$.task_id')))
--     OR (NOT json_exists(doc, '$.event_type') AND (json_exists(doc, '$.task_id') OR json_exists(doc, '$.task.id'))
--         AND coalesce(doc->>'type', '') IN ('final_answer_start', 'final_answer_delta', 'final_answer_end',
--             'final_answer_error', 'task_completed', 'task_continuation_completed', 'task_error', 'agent_error', 'error',
--             'task_started', 'task_resumed', 'task_paused', 'task_pause_requested', 'task_waiting_for_user', 'task_info',
--             'task-info', 'historical_data_complete', 'agent_message', 'agent_progress', 'input_accepted',
--             'assistant_message', 'recovery_state', 'input_applied', 'input_delivery_changed', 'command_accepted',
--             'control_state_changed', 'interaction_requested', 'execution_settled', 'execution_log', 'message_received',
--             'chat', 'chat_message')))
-- priority: 290
-- gathers: yes
-- roles: user = human (the person's message in xagent's chat: task start and message events, scope/category
--   message; a reply after waiting_for_user); assistant (ai messages, final answers) = agent; tool and
--   delegation start/end = the agent's call and the tool's (or sub-agent's) result; dag, react, memory,
--   lifecycle and goal-check events = harness. Read in xorbitsai/xagent src/xagent/core/agent/trace.py
--   (TraceCategory MESSAGE: user and AI messages) and its end-to-end tests' recorded payloads
--   (../shared/formats/stream-events.md). A child run's first message is written as the user's too: the
--   stream does not say whether a person or the workforce wrote it.
--
-- Reads records_in(file_id, file, line, record, doc) and fills staging traces, events, rejects and record_links.
-- A trace is a task_id, gathered across the records (and files) of the batch. Records come in four shapes:
-- the wire envelope the server sends (type trace_event, event_id, older names such as tool_execution_start),
-- the documented one (id, scope/action/category, names such as action_start_tool), the v2 display envelope
-- (the wire one with execution_sequence and parent_event_id), and frames with a top-level type and no
-- event_type (the final-answer stream, task lifecycle, v2 execution facts). Trace events route onto
-- scope/action/category and from there onto canonical types; the other names are read from
-- stream_kinds. Bookkeeping records (checkpoints, status snapshots, stream chunks, control state) and
-- records that only repeat a message or an answer already kept are linked to their trace (record_links):
-- loaded, not events. An event id seen twice in a task (a replay on reconnect, or the same run delivered
-- again or in the other shape) is kept once: a later copy whose canonical fields agree is linked too,
-- one that differs is rejected.
-- Each record is parsed once into its envelope fields and its payload once into the fields read here; the
-- steps from the payload to the mapped events are views, so the wide rows are not copied between them.

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
    ('workforce_delegation_error', 'action', 'error', 'delegation'),
    -- names only the web client still reads (no current producer), read the same way
    ('dag_step_info', 'step', 'info', 'dag'),
    ('dag_step_failed', 'step', 'error', 'dag'),
    ('dag_step_skipped', 'step', 'end', 'dag'),
    ('react_task_failed', 'task', 'error', 'react'),
    ('task_failed_react', 'task', 'error', 'react'),
    ('tool_using', 'action', 'start', 'tool'),
    ('llm_call_info', 'action', 'info', 'llm'),
    ('llm_call_result', 'action', 'end', 'llm');

-- The names outside the scope_action_category scheme: frames sent with a top-level type (the streamed final
-- answer, task lifecycle), the agent's outbound messages, and the v2 execution facts. Each may come as a
-- frame or inside a trace_event envelope. type is what it becomes; NULL is bookkeeping (linked to its
-- trace, not an event); 'by_role' reads data.role.
CREATE OR REPLACE TEMP TABLE stream_kinds (name VARCHAR, type VARCHAR);
INSERT INTO stream_kinds VALUES
    ('final_answer_start', NULL),
    ('final_answer_delta', NULL),                      -- a chunk; the end frame carries the whole answer
    ('final_answer_end', 'final_answer'),              -- linked when task_completion repeats it
    ('final_answer_error', 'error'),
    ('task_completed', 'final_answer'),                -- the settlement broadcast: see stream_typed
    ('task_continuation_completed', 'final_answer'),   -- its older form
    ('task_error', 'error'),
    ('agent_error', 'error'),
    ('error', 'error'),
    ('task_started', NULL),
    ('task_pause_requested', NULL),
    ('task_paused', 'workflow_step'),
    ('task_waiting_for_user', 'workflow_step'),
    ('task_resumed', 'workflow_step'),
    ('task_info', NULL),                               -- a status snapshot
    ('task-info', NULL),
    ('historical_data_complete', NULL),                -- the end of a replay on reconnect
    ('agent_message', 'assistant_message'),            -- a question (expect_response) or a chat message
    ('agent_progress', 'assistant_message'),           -- an update on the timeline
    ('input_accepted', 'user_message'),
    ('assistant_message', 'assistant_message'),
    ('recovery_state', NULL),                          -- a checkpoint
    ('input_applied', NULL),
    ('input_delivery_changed', NULL),
    ('command_accepted', NULL),
    ('control_state_changed', NULL),
    ('interaction_requested', NULL),                   -- the question itself is the agent_message
    ('execution_settled', NULL),                       -- the run's outcome: see stream_typed
    ('execution_log', NULL),
    ('message_received', NULL),
    ('chat', 'by_role'),
    ('chat_message', 'by_role');

CREATE OR REPLACE TEMP TABLE stream_docs AS
WITH e AS (
    -- the envelope, in one typed parse of each record: each field as its JSON text (a JSON null, like a
    -- missing field, is NULL); what else the record holds is read from these fragments, not from the record
    SELECT file_id, file, line, record, doc,
           from_json(doc, '{"event_type": "JSON", "type": "JSON", "task_id": "JSON", "task": "JSON", "id": "JSON",
                            "event_id": "JSON", "timestamp": "JSON", "execution_sequence": "JSON", "data": "JSON",
                            "scope": "JSON", "action": "JSON", "category": "JSON", "parent_id": "JSON",
                            "parent_event_id": "JSON", "step_id": "JSON"}') AS f
    FROM records_in
), d AS (
    -- a frame has no event_type: its type names it
    SELECT *, f.event_type IS NULL AND lw_json_kind(f.type) = 'VARCHAR'
                  AND list_contains((SELECT list(name) FROM stream_kinds), lower(trim(f.type->>'$'))) AS is_frame,
           f.task->'$.id' AS task_dot_id
    FROM e
)
SELECT file_id, file, line, record, doc, f, is_frame, json_type(f.data) AS t_data,
       -- some frames name their task only in task.id
       is_frame AND f.task_id IS NULL AND coalesce(json_type(task_dot_id), 'NULL') <> 'NULL' AS task_in_task,
       json_type(task_dot_id) AS t_task_dot_id,
       coalesce(f.task_id->>'$', CASE WHEN is_frame THEN task_dot_id->>'$' END) AS task_id,
       coalesce(f.id->>'$', f.event_id->>'$') AS event_id,
       CASE WHEN is_frame THEN f.type->>'$' ELSE f.event_type->>'$' END AS raw_type,
       lw_json_kind(f.timestamp) AS t_timestamp,
       try_cast(f.timestamp->>'$' AS DOUBLE) AS unix_ts,
       coalesce(lw_json_kind(f.execution_sequence), 'NULL') AS t_sequence,
       try_cast(f.execution_sequence->>'$' AS BIGINT) AS execution_sequence
FROM d;

-- The first thing wrong with each record. Redacted public events (a fixed message and a few whitelisted
-- data fields) are well-formed records and pass.
CREATE OR REPLACE TEMP TABLE stream_problems AS
SELECT file_id, record, problem FROM (
    SELECT file_id, record,
           CASE
             WHEN task_in_task AND t_task_dot_id NOT IN ('VARCHAR', 'BIGINT', 'UBIGINT')
                  THEN 'field ''task.id'' must be a string'
             WHEN task_in_task AND trim(task_id) = '' THEN 'field ''task.id'' is empty'
             WHEN NOT task_in_task AND lw_value_problem(f.task_id, 'task_id', true) IS NOT NULL
                  THEN lw_value_problem(f.task_id, 'task_id', true)
             WHEN NOT is_frame AND lw_value_problem(f.event_type, 'event_type', false) IS NOT NULL
                  THEN lw_value_problem(f.event_type, 'event_type', false)
             WHEN t_data NOT IN ('OBJECT', 'NULL') THEN 'field ''data'' must be an object'
             WHEN t_timestamp IS NOT NULL AND unix_ts IS NULL THEN 'field ''timestamp'' must be Unix seconds'
             WHEN unix_ts < 0 OR unix_ts >= 1e13 THEN 'field ''timestamp'' is out of range'
             WHEN t_sequence <> 'NULL' AND execution_sequence IS NULL
                  THEN 'field ''execution_sequence'' must be a whole number'
           END AS problem
    FROM stream_docs
) WHERE problem IS NOT NULL;

-- Each well-formed record with its name and route: a name of stream_kinds is read by its name; a trace
-- event by scope/action/category as written, else what its name stands for.
CREATE OR REPLACE TEMP VIEW stream_routed AS
WITH payload AS (
    SELECT d.*, lower(trim(d.raw_type)) AS written_name,
           -- the payload: data, or a frame's own fields
           CASE WHEN d.t_data = 'OBJECT' THEN d.f.data
                WHEN d.is_frame THEN json_merge_patch(d.doc, '{"type":null,"id":null,"event_id":null,"task_id":null,
                    "timestamp":null,"execution_sequence":null,"step_id":null,"parent_id":null,"parent_event_id":null,
                    "data":null}')
           END AS data
    FROM stream_docs d
    ANTI JOIN stream_problems p USING (file_id, record)
), parsed AS (
    -- the payload's fields this adapter reads, in one typed parse (each as its JSON text)
    SELECT *, from_json(data, '{"event_type": "JSON", "status": "JSON", "result": "JSON", "task": "JSON",
                                "success": "JSON", "goal_achieved": "JSON", "role": "JSON", "output": "JSON",
                                "tool_name": "JSON", "name": "JSON", "tool": "JSON", "agent_name": "JSON",
                                "error_message": "JSON", "error": "JSON", "message": "JSON", "content": "JSON",
                                "response": "JSON", "goal_reason": "JSON", "step_name": "JSON",
                                "description": "JSON", "tool_call_id": "JSON", "turn_id": "JSON",
                                "message_id": "JSON", "pattern": "JSON", "task_description": "JSON",
                                "task_preview": "JSON"}') AS p
    FROM payload
), named AS (
    SELECT *,
           -- a stored task_update_general that summarises a delegation is read as the public name it gets
           CASE WHEN written_name = 'task_update_general'
                     AND p.event_type->>'$' IN ('workforce_delegation_start', 'workforce_delegation_end',
                                                'workforce_delegation_error') THEN p.event_type->>'$'
                ELSE written_name END AS name,
           regexp_extract(written_name, '^(task|step|action|system)_(start|end|error|info|update)_([a-z_]+)$',
                          ['scope', 'action', 'category']) AS parsed
    FROM parsed
)
SELECT n.file_id, n.file, n.line, n.record, n.doc, n.f, n.data, n.p, n.raw_type, n.name, n.is_frame, n.t_data,
       n.execution_sequence,
       n.task_id AS trace_id,
       n.event_id AS written_id,
       coalesce(n.event_id, 'record-' || n.record) AS event_id,
       k.name IS NOT NULL AS is_kind,
       k.type AS kind_type,
       CASE WHEN k.name IS NOT NULL THEN NULL
            WHEN n.name <> n.written_name THEN {'scope': l.scope, 'action': l.action, 'category': l.category}
            WHEN n.f.scope->>'$' IS NOT NULL AND n.f.action->>'$' IS NOT NULL AND n.f.category->>'$' IS NOT NULL
                 THEN {'scope': lower(trim(n.f.scope->>'$')), 'action': lower(trim(n.f.action->>'$')),
                       'category': lower(trim(n.f.category->>'$'))}
            WHEN l.name IS NOT NULL THEN {'scope': l.scope, 'action': l.action, 'category': l.category}
            WHEN n.parsed.scope <> '' THEN n.parsed
       END AS route,
       coalesce(n.p.status->>'$', n.p.result->>'status',
                -- the settlement broadcast carries the task's final status
                CASE WHEN n.name IN ('task_completed', 'task_continuation_completed') THEN n.p.task->>'status' END)
           AS status_written,
       coalesce(n.p.success->>'$', n.p.result->>'success') AS success_written,
       -- Unix seconds; a value this large can only be milliseconds
       to_timestamp(CASE WHEN n.unix_ts >= 1e11 THEN n.unix_ts / 1000 ELSE n.unix_ts END) AT TIME ZONE 'UTC' AS ts
FROM named n
LEFT JOIN stream_kinds k ON k.name = n.name
LEFT JOIN stream_legacy_names l ON l.name = n.name;

CREATE OR REPLACE TEMP VIEW stream_typed AS
WITH flagged AS (
    SELECT r.*,
           coalesce(route.action = 'error' OR kind_type = 'error'
                    -- a DAG step that ends failed is the step's error
                    OR (route.scope = 'step' AND route.category = 'dag' AND route.action = 'end'
                        AND lw_failed(status_written, lw_bool(success_written))), false) AS is_failure,
           -- the end of the task or of the pattern that ran it
           coalesce(route.scope = 'task' AND route.action = 'end' AND route.category IN ('general', 'dag', 'react'),
                    false) AS is_run_end,
           -- the goal check of a DAG run: a task-level model call that judges the run
           coalesce(route.category = 'llm' AND route.action = 'end' AND json_exists(data, '$.goal_achieved'),
                    false) AS is_goal_check
    FROM stream_routed r
), judged AS (
    SELECT f.*,
           CASE WHEN is_goal_check THEN CASE lw_bool(p.goal_achieved->>'$') WHEN true THEN 'passed'
                                                                            WHEN false THEN 'failed' END
                -- an error action is a failure even when its (redacted) data says nothing more
                WHEN is_failure THEN coalesce(status_written, 'failed')
                ELSE status_written END AS status,
           CASE WHEN is_goal_check THEN lw_bool(p.goal_achieved->>'$')
                ELSE coalesce(lw_bool(success_written), CASE WHEN is_failure THEN false END) END AS success
    FROM flagged f
), verdicts AS (
    -- What a record says about how the run ended; the last one in the trace decides its outcome. A run
    -- that waits for the user, is paused or resumes is not over; a waiting run may also say success false.
    SELECT j.*,
           CASE
             WHEN name = 'task_error' OR (route.scope = 'task' AND route.action = 'error'
                                          AND route.category IN ('general', 'dag', 'react')) THEN 'failed'
             WHEN name IN ('task_started', 'task_paused', 'task_waiting_for_user', 'task_resumed') THEN 'pending'
             WHEN is_run_end OR name IN ('execution_settled', 'task_completed', 'task_continuation_completed') THEN
                  CASE WHEN lower(status) IN ('waiting_for_user', 'interrupted', 'paused', 'pause_requested',
                                              'resume_requested', 'pending', 'running', 'cancelled') THEN 'pending'
                       WHEN lw_failed(status, success) OR lower(status) = 'quota_exceeded' THEN 'failed'
                       WHEN is_run_end OR lw_succeeded(status, success) THEN 'success'
                  END
           END AS verdict
    FROM judged j
)
SELECT v.*,
       CASE
         WHEN is_kind THEN
              CASE WHEN kind_type = 'by_role' THEN
                        CASE lower(p.role->>'$') WHEN 'user' THEN 'user_message'
                                                  WHEN 'assistant' THEN 'assistant_message' ELSE 'unknown' END
                   -- the settlement broadcast is an answer only when it settles a success with a text
                   WHEN name IN ('task_completed', 'task_continuation_completed')
                        AND (verdict IS DISTINCT FROM 'success'
                             OR trim(coalesce(p.output->>'$', CASE WHEN json_type(p.result) = 'VARCHAR'
                                                                    THEN p.result->>'$' END, '')) = '') THEN NULL
                   ELSE kind_type END
         WHEN route.category IN ('tool', 'delegation') THEN
              CASE route.action WHEN 'start' THEN 'tool_call' WHEN 'end' THEN 'tool_result'
                                WHEN 'error' THEN 'tool_result' ELSE 'unknown' END
         WHEN is_goal_check THEN 'evaluation_result'
         WHEN route.category = 'llm' AND route.action <> 'error' THEN 'model_call'
         WHEN route.category = 'message' THEN
              CASE WHEN route.action = 'start' THEN 'user_message'
                   WHEN route.action = 'end' THEN 'assistant_message'
                   -- the documented shape sends both as task_info_message: the reply carries content,
                   -- the user's turn a message
                   WHEN json_exists(data, '$.content') THEN 'assistant_message'
                   WHEN json_exists(data, '$.message') THEN 'user_message'
                   ELSE 'unknown' END
         WHEN is_failure THEN 'error'
         WHEN is_run_end THEN CASE WHEN verdict = 'success' THEN 'final_answer' ELSE 'workflow_step' END
         WHEN route.category IN ('dag', 'dag_plan', 'react', 'skill', 'compact')
              OR route.category LIKE 'memory%' THEN 'workflow_step'
         -- the client's DAG picture, checkpoints and status notes
         WHEN route.category = 'visualization'
              OR (route.category = 'general' AND route.action IN ('update', 'info')) THEN NULL
         ELSE 'unknown'
       END AS base_type,
       nullif(trim(coalesce(p.tool_name->>'$',
                            CASE WHEN route.category IN ('tool', 'delegation')
                                 THEN coalesce(p.name->>'$', p.tool->>'$', p.agent_name->>'$') END)),
              '') AS tool_name,
       CASE json_type(p.result) WHEN 'VARCHAR' THEN p.result->>'$' ELSE CAST(p.result AS VARCHAR) END AS result_text,
       coalesce(p.error_message->>'$', p.error->>'$') AS error_text,
       -- what a step of a pattern is called when its data names none: 'dag task end: failed'
       route.category || ' ' || route.scope || ' ' || route.action || coalesce(': ' || status, '') AS step_label
FROM verdicts v;

-- Every well-formed record as the event it would become (base_type NULL: bookkeeping).
CREATE OR REPLACE TEMP TABLE stream_mapped AS
SELECT trace_id, written_id, event_id, base_type, raw_type, name, verdict, is_run_end,
       CASE base_type
         WHEN 'user_message' THEN coalesce(p.message->>'$', p.content->>'$')
         WHEN 'assistant_message' THEN coalesce(p.content->>'$', p.message->>'$')
         WHEN 'tool_call' THEN tool_name
         -- a delegation's result is its output
         WHEN 'tool_result' THEN CASE WHEN lw_failed(status, success) THEN coalesce(error_text, result_text)
                                      ELSE coalesce(result_text, p.output->>'$') END
         WHEN 'model_call' THEN coalesce(error_text, nullif(p.response->>'content', ''))
         WHEN 'evaluation_result' THEN coalesce(p.goal_reason->>'$', 'goal ' || status)
         WHEN 'error' THEN coalesce(error_text, p.message->>'$', p.step_name->>'$' || ': ' || status)
         WHEN 'final_answer' THEN coalesce(p.result->>'output', p.result->>'response',
                                           p.result->>'content',
                                           CASE WHEN json_type(p.result) = 'VARCHAR' THEN result_text END,
                                           p.output->>'$', p.content->>'$')
         WHEN 'workflow_step' THEN coalesce(p.step_name->>'$', p.name->>'$', p.description->>'$', step_label,
                                            -- a lifecycle frame: its message, else its name
                                            p.message->>'$', replace(name, '_', ' '))
         ELSE coalesce(p.message->>'$', p.content->>'$')
       END AS content,
       step_label, status, success, tool_name, ts,
       coalesce(f.parent_id->>'$', f.parent_event_id->>'$') AS parent_id,
       -- envelope fields with no column of their own (step_id, scope/action/category, the wire's type,
       -- execution_sequence); a frame's other fields are its payload
       nullif(CAST(CASE WHEN is_frame AND t_data IS DISTINCT FROM 'OBJECT'
                        THEN json_merge_patch('{}', json_object('type', f.type, 'step_id', f.step_id,
                                                                'execution_sequence', f.execution_sequence))
                        ELSE json_merge_patch(doc, '{"id":null,"event_id":null,"event_type":null,"task_id":null,
                                                     "timestamp":null,"data":null,"parent_id":null,
                                                     "parent_event_id":null}') END AS VARCHAR),
              '{}')::JSON AS metadata,
       data AS extra,
       -- what pairs a tool start with its result: the call id, else the tool
       CASE WHEN base_type IN ('tool_call', 'tool_result') THEN coalesce(p.tool_call_id->>'$', tool_name) END AS call_key,
       -- what ties a streamed answer, a completion and a repeated turn together
       p.turn_id->>'$' AS turn_id,
       CASE WHEN name = 'final_answer_end' THEN p.message_id->>'$' END AS stream_id,
       p.result->>'stream_message_id' AS completion_stream_id,
       route, execution_sequence, f.step_id->>'$' AS step_id, file_id, file, line, record,
       -- what the trace takes from its events' payloads (read once here, not again per trace)
       p.pattern->>'$' AS pattern, p.task_description->>'$' AS task_description,
       p.task_preview->>'$' AS task_preview,
       CASE WHEN name IN ('task_info', 'task-info', 'task_completed', 'task_continuation_completed')
            THEN coalesce(p.task->>'description', p.description->>'$') END AS frame_task
FROM stream_typed;

-- Later records with an event id already seen in their task (in any file): a replay on reconnect, the same
-- run delivered again, or in the other shape. They repeat the event when its canonical fields agree (type,
-- content, status, success, tool, time, parent, step and data; not the name or envelope, which differ
-- between the shapes, nor what a v2 replay rewrites: a question's expect_response and an unfinished
-- answer stream's status): linked to the trace. Otherwise they conflict and are rejected. The first wins.
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
    FROM (SELECT *, {'type': base_type, 'content': content,
                     'status': CASE WHEN name <> 'final_answer_start' THEN status END,
                     'success': success, 'tool_name': tool_name, 'ts': ts, 'parent_id': parent_id,
                     'step_id': step_id,
                     'data': CASE name WHEN 'agent_message' THEN json_merge_patch(extra, '{"expect_response":null}')
                                       WHEN 'final_answer_start' THEN json_merge_patch(extra, '{"status":null}')
                                       ELSE extra END::VARCHAR} AS canonical
          FROM stream_mapped WHERE written_id IS NOT NULL)
    WINDOW w AS (PARTITION BY trace_id, written_id ORDER BY file_id, record)
) WHERE nth > 1;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem
FROM (SELECT file_id, record, problem FROM stream_problems
      UNION ALL SELECT file_id, record, problem FROM stream_repeats WHERE NOT identical) p
JOIN stream_docs d USING (file_id, record);

-- The records of each trace in order: by timestamp, then file and position; an event without a timestamp
-- keeps the time of the record before it. Records with an execution_sequence keep its order among
-- themselves: each takes the latest time of those before it in the sequence. (The decisions below work on
-- these narrow rows; the payloads join back once.)
CREATE OR REPLACE TEMP TABLE stream_order AS
WITH timed AS (
    SELECT trace_id, file_id, record, execution_sequence,
           coalesce(ts, last_value(ts IGNORE NULLS) OVER (
               PARTITION BY trace_id ORDER BY file_id, record
               ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS base_ts
    FROM stream_mapped m ANTI JOIN stream_repeats r USING (file_id, record)
), sequenced AS (
    SELECT *, CASE WHEN execution_sequence IS NULL THEN base_ts
                   ELSE max(base_ts) OVER (PARTITION BY trace_id, execution_sequence IS NULL
                                           ORDER BY execution_sequence, file_id, record
                                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) END AS sort_ts
    FROM timed
)
SELECT trace_id, file_id, record,
       row_number() OVER (PARTITION BY trace_id
                          ORDER BY sort_ts NULLS FIRST, execution_sequence NULLS LAST, file_id, record) AS pos
FROM sequenced;

-- One message, one answer. The same user turn under two names (input_accepted and user_message, same
-- turn_id and text), or the same assistant text under two names in a turn (ai_message, the v2
-- assistant_message fact, its agent_message copy), is kept once. A turn's answer is its task_completion;
-- the streamed final_answer_end it repeats (same message id or text) and the settlement broadcast are then
-- linked, and the pattern end (react_task_end, dag_execute_end) that carries the answer too is a
-- workflow_step. Without a task_completion the stream end is the answer, then the pattern end, then the
-- broadcast. type NULL: linked to the trace.
CREATE OR REPLACE TEMP TABLE stream_decided AS
WITH kept AS (
    SELECT o.trace_id, o.file_id, o.record, o.pos, m.base_type, m.name, m.turn_id, m.stream_id,
           m.completion_stream_id,
           CASE WHEN m.base_type IN ('user_message', 'assistant_message', 'final_answer') THEN trim(m.content) END
               AS text,
           CASE WHEN m.base_type = 'final_answer' THEN
                CASE WHEN m.route.category = 'general' THEN 1 WHEN m.name = 'final_answer_end' THEN 2
                     WHEN m.is_run_end THEN 3 ELSE 4 END END AS answer_rank
    FROM stream_order o JOIN stream_mapped m USING (file_id, record)
), users AS (
    SELECT *,
           base_type = 'user_message' AND turn_id IS NOT NULL
           AND name <> first_value(name) OVER (PARTITION BY trace_id, base_type = 'user_message', turn_id, text
                                               ORDER BY pos) AS repeated_user
    FROM kept
), turns AS (
    -- a turn runs from a user message to the next
    SELECT *,
           sum(CASE WHEN base_type = 'user_message' AND NOT repeated_user THEN 1 ELSE 0 END) OVER (
               PARTITION BY trace_id ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS turn
    FROM users
), carriers AS (
    SELECT *,
           bool_or(answer_rank IN (1, 2)) OVER per_turn AS turn_streamed,
           bool_or(answer_rank IN (1, 2, 3)) OVER per_turn AS turn_answered,
           first_value(name) OVER (PARTITION BY trace_id, turn, base_type = 'assistant_message', text
                                   ORDER BY pos) AS first_name_of_text
    FROM turns
    WINDOW per_turn AS (PARTITION BY trace_id, turn)
), repeated_ends AS (
    -- stream ends a task_completion repeats: its stream_message_id, or the same text in the turn
    SELECT DISTINCT e.file_id, e.record
    FROM turns e JOIN turns c ON c.trace_id = e.trace_id AND c.answer_rank = 1
    WHERE e.answer_rank = 2 AND (c.completion_stream_id = e.stream_id OR (c.turn = e.turn AND c.text = e.text))
), decided AS (
    SELECT c.trace_id, c.file_id, c.record, c.pos,
           CASE
             WHEN repeated_user OR r.record IS NOT NULL THEN NULL
             WHEN base_type = 'assistant_message' AND text <> '' AND name <> first_name_of_text THEN NULL
             WHEN answer_rank = 3 AND turn_streamed THEN 'workflow_step'
             WHEN answer_rank = 4 AND turn_answered THEN NULL
             ELSE base_type
           END AS type,
           -- a pattern end that is not the answer is named as a step
           answer_rank = 3 AND turn_streamed AS named_as_step
    FROM carriers c LEFT JOIN repeated_ends r USING (file_id, record)
)
SELECT *,
       CASE WHEN type IS NOT NULL THEN row_number() OVER (PARTITION BY trace_id, type IS NOT NULL ORDER BY pos) END
           AS seq
FROM decided;

INSERT INTO record_links (file_id, record, trace_id)
SELECT file_id, record, trace_id FROM stream_repeats WHERE identical
UNION ALL
SELECT file_id, record, trace_id FROM stream_decided WHERE type IS NULL;

CREATE OR REPLACE TEMP VIEW stream_events AS
SELECT CAST(d.seq AS INTEGER) AS seq, d.type,
       m.* EXCLUDE (content), CASE WHEN d.named_as_step THEN m.step_label ELSE m.content END AS content
FROM stream_decided d JOIN stream_mapped m USING (file_id, record)
WHERE d.type IS NOT NULL;

-- A trace is every record kept of its task, bookkeeping included: a trace may have only bookkeeping.
INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT trace_id, 'stream',
       'stream' || coalesce('/' || pattern, ''),
       coalesce(task_description, first_request, task_preview, frame_task,
                'unnamed ' || coalesce(pattern, 'stream') || ' task'),
       -- the last record that tells how the run ended decides (a settlement, a completion, a run end, a
       -- task error); without one, any error means failed
       CASE last_verdict WHEN 'failed' THEN 'failed' WHEN 'success' THEN 'success' WHEN 'pending' THEN 'incomplete'
            ELSE CASE WHEN any_error THEN 'failed' ELSE 'incomplete' END END,
       NULL, first_at.file, first_at.line, started_at, ended_at, NULL, NULL, first_at.file_id, first_at.record
FROM (
    SELECT d.trace_id,
           arg_min({'file_id': file_id, 'file': file, 'line': line, 'record': record}, (file_id, record)) AS first_at,
           -- the pattern that ran the task ('ReActPattern' -> react), else the category of its start
           coalesce(regexp_replace(lower(regexp_replace(
                        arg_min(m.pattern, pos) FILTER (WHERE m.pattern <> ''), 'Pattern$', '')),
                        '[^a-z0-9]+', '_', 'g'),
                    arg_min(route.category, pos)
                        FILTER (WHERE route.scope = 'task' AND route.category IN ('dag', 'react'))) AS pattern,
           -- the server adds the task's description to events when it has one
           arg_min(m.task_description, pos) FILTER (WHERE trim(m.task_description) <> '')
               AS task_description,
           left(split_part(ltrim(arg_min(content, pos) FILTER (WHERE d.type = 'user_message' AND trim(content) <> ''),
                                 chr(10) || chr(13) || chr(9) || ' '), chr(10), 1), 200) AS first_request,
           -- kept even on redacted pattern-end events
           arg_min(m.task_preview, pos) FILTER (WHERE trim(m.task_preview) <> '') AS task_preview,
           -- the task a status snapshot or the settlement broadcast describes
           left(arg_min(m.frame_task, pos) FILTER (WHERE trim(m.frame_task) <> ''), 200) AS frame_task,
           arg_max(verdict, pos) FILTER (WHERE verdict IS NOT NULL) AS last_verdict,
           bool_or(d.type = 'error') AS any_error,
           min(ts) AS started_at, max(ts) AS ended_at
    FROM stream_decided d JOIN stream_mapped m USING (file_id, record)
    GROUP BY d.trace_id
);

-- A tool start with no result before the same call starts again (or, with nothing after it, before the
-- tool is called again) did not complete: its failure event was lost or never sent. Marking it failed lets
-- the retry detector see the re-run.
INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT trace_id, seq, event_id, type, raw_type, content,
       CASE WHEN unanswered THEN 'no_result' ELSE status END,
       CASE WHEN unanswered THEN false ELSE success END,
       tool_name, ts, parent_id, metadata, extra, file_id, record,
       -- what the person typed in xagent's chat
       CASE WHEN type = 'user_message' THEN 'human' END
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
DROP TABLE stream_kinds;
DROP TABLE stream_docs;
DROP TABLE stream_problems;
DROP VIEW stream_routed;
DROP VIEW stream_typed;
DROP TABLE stream_mapped;
DROP TABLE stream_repeats;
DROP TABLE stream_order;
DROP TABLE stream_decided;
DROP VIEW stream_events;
