-- format: chat
-- title: chat transcripts: OpenAI chat-completions messages, Anthropic Messages content blocks, tau-bench results
-- match: CASE WHEN list_has_any(json_keys(doc), ['messages', 'traj', 'role', 'history'])
--   THEN json_type(doc, '$.messages') = 'ARRAY'
--     OR (json_type(doc, '$.history') = 'ARRAY' AND json_exists(doc, '$.trajectory'))
--     OR (json_type(doc, '$.traj') = 'ARRAY' AND json_exists(doc, '$.task_id'))
--     OR (json_type(doc, '$.role') = 'VARCHAR'
--         AND (json_exists(doc, '$.content') OR json_exists(doc, '$.tool_calls') OR json_exists(doc, '$.function_call')))
--   ELSE false END
-- priority: 250
-- gathers: yes
-- whole: NOT (json_type(doc, '$.role') = 'VARCHAR')
-- roles: by producer, from the record's shape.
--   tau-bench results: user = counterpart (the user simulator, or a person, playing the customer:
--     sierra-research/tau-bench tau_bench/envs/user.py, tau_bench/agents/tool_calling_agent.py); assistant =
--     agent; tool = tool.
--   OpenHands LLM completion logs (log_completions: messages, response, args, kwargs, timestamp, cost;
--     All-Hands-AI/OpenHands openhands/llm/llm.py): user = harness (the task statement, observations and
--     continue prompts of an evaluation run); assistant = agent; tool = tool.
--   mini-swe-agent `.traj.json` (trajectory_format mini-swe-agent-*; SWE-agent/mini-swe-agent
--     src/minisweagent/agents/default.py, interactive.py, exceptions.py): user = harness (the instance
--     template, observations, format errors, time-outs), except, in its interactive mode, what a person typed:
--     human (an interruption, `extra.interrupt_type` UserInterruption; a new task, UserNewTask; commands
--     rejected with their words, UserRejection, a human_correction; a command run in human mode); exit =
--     harness (how the run ended); assistant = agent.
--   SWE-agent 1.x `.traj` (`history` with `message_type`, `replay_config`; SWE-agent/SWE-agent
--     sweagent/agent/agents.py: DefaultAgent.setup, _add_demonstration_to_history,
--     _add_templated_messages_to_history, add_step_to_history): no person takes part. user = harness (the
--     instance template with the task, the next-step template around each observation); demonstrations
--     (`is_demo`) are not part of the run and are skipped; tool = tool (an observation answering a function
--     call); assistant = agent (a person who plays the model through its HumanModel writes there too, as
--     the agent). SWE-agent 0.x files are `swe_agent0`'s.
--   Other chat transcripts (OpenAI messages, Anthropic content blocks) of unknown origin: user = human
--     (actor NULL: as the type says), or harness where the text is an agent framework's template
--     (lw_harness_text, the fallback for producers that do not say); assistant = agent; tool = tool.
--
-- A conversation is a trace. It is written three ways:
--   - a record with `messages` (the fine-tuning and API request shape; JSON Lines, or one object per file):
--     its `id`, `conversation_id` or `trace_id` is the trace id, else a hash of the file and the record;
--   - a file of bare messages (a JSON array of them, or one per line): the file is the conversation,
--     its trace id a hash of the file's path;
--   - a tau-bench results file, a JSON array of {task_id, trial, reward, info, traj}: each item is a
--     conversation (`traj`), `reward` an evaluation (1 passed, below 1 failed). `info` holds the grader's
--     expected actions: it is not part of the conversation and is not read.
-- The system prompt is the trace's context (traces.extra.system), not an event; the first user message
-- is the task (for a producer whose user role is its harness, the first text in that role). Who wrote the
-- user role's text is the producer's (the roles above): a person's or a counterpart's text is a
-- user_message, the harness's a workflow_step (actor harness). For a transcript of unknown origin, text
-- that is an agent framework's template (lw_harness_text: an observation wrapped as a user turn, a format
-- error, a continue notice) is the harness's, the rest a person's.
-- Assistant text becomes an assistant_message (the last assistant text
-- is the final_answer); assistant tool calls (OpenAI `tool_calls`, `function_call`, Anthropic `tool_use`
-- blocks) become tool_call events, and `tool` / `function` messages and Anthropic `tool_result` blocks
-- tool_result events, paired with their call by its id. A tool result that reports an error (`is_error`,
-- text starting with Error or Exception, a JSON object with an `error` key, a shell's non-zero exit code
-- as agent frameworks report it: lw_exit_code) is a failed tool result. A record that logs one model call
-- (`messages` and the model's `response`, as OpenHands' completion logs and LLM proxies write them) is the
-- conversation with the answer the model gave as its last message; a run logs every call with the
-- conversation so far, so the logs of one run (same folder, same start) are one trace: the longest stands
-- for it, the others are linked. An agent that writes its action in its text (mini-swe-agent, SWE-agent's
-- thought_action: one fenced shell block, or SWE-agent's own `action` field) makes a `bash` tool_call
-- when the next message is the harness's observation (lw_observation: `<returncode>N</returncode>`, a
-- time-out template), and that observation is its tool_result, failed at a non-zero return code or a
-- time-out.
-- SWE-agent's `.traj` is read from its `history` (`trajectory` repeats it step by step and is not read
-- again). `info.exit_status` (Submitted, LimitsExceeded, exit_cost...) is the trace's outcome;
-- mini-swe-agent's `exit` message is a workflow_step.

CREATE OR REPLACE TEMP TABLE chat_docs AS
SELECT file_id, file, line, record, doc,
       CASE WHEN json_type(doc, '$.traj') = 'ARRAY' AND json_exists(doc, '$.task_id') THEN 'tau'
            WHEN json_exists(doc, '$.messages') THEN 'conversation'
            -- SWE-agent's .traj: `history` is the conversation (`trajectory` repeats it step by step)
            WHEN json_type(doc, '$.history') = 'ARRAY' AND json_exists(doc, '$.trajectory') THEN 'history'
            ELSE 'message' END AS shape
FROM records_in;
-- the field that holds a conversation's messages, by shape
CREATE OR REPLACE TEMP MACRO chat_list(shape) AS CASE shape WHEN 'tau' THEN 'traj' WHEN 'history' THEN 'history' ELSE 'messages' END;

-- One conversation per record, or per file for bare messages: `unit` is the record a conversation starts at.
CREATE OR REPLACE TEMP TABLE chat_units AS
SELECT file_id, record AS unit, any_value(file) AS file, any_value(line) AS line, any_value(shape) AS shape,
       any_value(doc) AS doc,
       -- the producer, as far as the record's shape tells (the roles of the header)
       CASE WHEN any_value(shape) = 'tau' THEN 'tau-bench'
            WHEN any_value(shape) = 'history' THEN 'swe-agent'
            WHEN coalesce(any_value(doc)->>'trajectory_format', '') LIKE 'mini-swe-agent%' THEN 'mini-swe-agent'
            WHEN json_exists(any_value(doc), '$.response')
                 AND list_has_all(json_keys(any_value(doc)), ['args', 'kwargs', 'timestamp', 'cost']) THEN 'openhands'
            ELSE 'chat' END AS producer,
       CASE any_value(shape)
         WHEN 'tau' THEN 'tau-' || (any_value(doc)->>'task_id') || '-' || coalesce(any_value(doc)->>'trial', '0')
                         || '-' || substr(md5(any_value(file)), 1, 6)
         ELSE coalesce(nullif(trim(coalesce(any_value(doc)->>'id', any_value(doc)->>'conversation_id',
                                            any_value(doc)->>'trace_id')), ''),
                       'chat-' || substr(md5(any_value(file) || '#' || record), 1, 16))
       END AS trace_id
FROM chat_docs WHERE shape <> 'message' GROUP BY file_id, record
UNION ALL
SELECT file_id, min(record), any_value(file), arg_min(line, record), 'message', NULL, 'chat',
       'chat-' || substr(md5(any_value(file)), 1, 16)
FROM chat_docs WHERE shape = 'message' GROUP BY file_id;

-- A model call's log with no id of its own: the run it belongs to is its folder and how its conversation
-- starts (each call of a run logs the conversation so far).
UPDATE chat_units
SET trace_id = 'chat-' || substr(md5(regexp_replace(file, '[^/\\]*$', '') || '#'
                                     || coalesce(lw_content_text(json_extract(doc, '$.messages[0].content')), '') || '#'
                                     || coalesce(lw_content_text(json_extract(doc, '$.messages[1].content')), '')), 1, 16)
WHERE shape = 'conversation' AND json_exists(doc, '$.response')
  AND nullif(trim(coalesce(doc->>'id', doc->>'conversation_id', doc->>'trace_id')), '') IS NULL;

-- The calls of one run, each logged with the conversation so far: the log with the most messages (the
-- last call) stands for the run, and the earlier calls' logs are linked to it.
CREATE OR REPLACE TEMP TABLE chat_superseded AS
SELECT file_id, unit, trace_id FROM (
    SELECT file_id, unit, trace_id,
           row_number() OVER (PARTITION BY trace_id ORDER BY json_array_length(doc, '$.messages') DESC, file DESC, unit DESC) AS rank
    FROM chat_units WHERE shape = 'conversation' AND json_exists(doc, '$.response'))
WHERE rank > 1;
INSERT INTO record_links (file_id, record, trace_id) SELECT file_id, unit, trace_id FROM chat_superseded;
DELETE FROM chat_units u WHERE EXISTS (SELECT 1 FROM chat_superseded x WHERE x.file_id = u.file_id AND x.unit = u.unit);

-- Every message in conversation order (pos), with the record it came from.
CREATE OR REPLACE TEMP TABLE chat_messages AS
SELECT file_id, unit, record, pos, msg, json_type(msg) AS t_msg,
       from_json(msg, '{"role": "VARCHAR", "content": "JSON", "name": "VARCHAR", "tool_call_id": "VARCHAR",
                        "tool_calls": "JSON", "function_call": "JSON"}') AS m
FROM (
    SELECT file_id, record AS unit, record, generate_subscripts(items, 1) AS pos, unnest(items) AS msg
    FROM (SELECT file_id, record, CASE shape WHEN 'tau' THEN json_extract(doc, '$.traj[*]')
                                             WHEN 'history' THEN json_extract(doc, '$.history[*]')
                                             -- an LLM call's log (OpenHands' log_completions, a proxy's log):
                                             -- the messages sent, then the message the model answered with
                                             ELSE list_concat(json_extract(doc, '$.messages[*]'),
                                                              CASE WHEN json_type(doc, '$.response.choices[0].message') = 'OBJECT'
                                                                   THEN [json_extract(doc, '$.response.choices[0].message')]
                                                                   ELSE [] END) END AS items
          FROM chat_docs WHERE shape <> 'message'
            AND json_type(doc, '$.' || chat_list(shape)) = 'ARRAY')
    UNION ALL
    SELECT d.file_id, u.unit, d.record, d.record, d.doc
    FROM chat_docs d JOIN chat_units u ON u.file_id = d.file_id AND u.shape = 'message'
    WHERE d.shape = 'message'
);

-- The first thing wrong with each record.
CREATE OR REPLACE TEMP TABLE chat_problems AS
SELECT file_id, record, 'field ''' || chat_list(shape) || ''' must be a list' AS problem
FROM chat_docs
WHERE shape <> 'message' AND json_type(doc, '$.' || chat_list(shape)) <> 'ARRAY'
UNION ALL
SELECT file_id, record, arg_min(problem, pos) FROM (
    SELECT m.file_id, m.record, m.pos,
           CASE WHEN d.shape = 'message' THEN '' ELSE chat_list(d.shape) || '[' || (m.pos - 1) || ']: ' END
           || CASE WHEN m.t_msg <> 'OBJECT' THEN 'not an object'
                   WHEN nullif(trim(m.m.role), '') IS NULL THEN 'missing required field ''role'''
                   WHEN coalesce(json_type(m.msg, '$.tool_calls'), 'NULL') NOT IN ('NULL', 'ARRAY')
                        THEN 'field ''tool_calls'' must be a list' END AS problem
    FROM chat_messages m JOIN chat_docs d USING (file_id, record)
) WHERE problem IS NOT NULL GROUP BY file_id, record;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem FROM chat_problems p JOIN chat_docs d USING (file_id, record);

-- The parts of each message that become events, in order: its text (sub 0), then its tool calls or
-- tool result blocks. A file of bare messages loses only its bad records; a conversation record with a
-- bad message is rejected whole.
CREATE OR REPLACE TEMP TABLE chat_parts AS
WITH own AS (
    -- an action an agent writes in its text (mini-swe-agent, SWE-agent's thought_action) is answered by
    -- the harness's observation in the next message
    SELECT *, CASE WHEN lower(m.role) IN ('assistant', 'ai', 'model')
                   THEN coalesce(nullif(trim(msg->>'action', e' \n\r\t'), ''), lw_text_action(content_text)) END AS action,
           lower(m.role) IN ('user', 'human') AND lw_observation(content_text) AS observes,
           -- what a person typed into mini-swe-agent's interactive mode (the rest of its user role is the
           -- harness's): an interruption, a new task, commands rejected with their words, a command of their own
           CASE WHEN producer = 'mini-swe-agent' AND lower(m.role) = 'user' THEN
                CASE WHEN msg->'extra'->>'interrupt_type' = 'UserRejection' THEN 'rejection'
                     WHEN msg->'extra'->>'interrupt_type' = 'UserInterruption' THEN 'interruption'
                     WHEN msg->'extra'->>'interrupt_type' = 'UserNewTask'
                          OR (json_type(msg, '$.extra.actions') = 'ARRAY' AND json_array_length(msg, '$.extra.actions') > 0)
                          THEN 'said' END END AS person
    -- a message's text, worked out once: every use below reads it
    FROM (SELECT c.*, lw_content_text(c.m.content) AS content_text, u.producer
          FROM chat_messages c ANTI JOIN chat_problems USING (file_id, record) JOIN chat_units u USING (file_id, unit)
          -- SWE-agent's demonstrations: an example run in the history, not this run
          WHERE NOT (u.producer = 'swe-agent' AND coalesce(TRY_CAST(c.msg->>'is_demo' AS BOOLEAN), false)))
),
ok AS (
    -- each message with what its neighbours are (small values only: the messages themselves stay put)
    SELECT *, lower(lag(m.role) OVER unit_order) AS prev_role, lag(action) OVER unit_order AS prev_action,
           coalesce(lead(observes) OVER unit_order, false) AS answered
    FROM own
    WINDOW unit_order AS (PARTITION BY file_id, unit ORDER BY pos)
),
blocks AS (
    SELECT file_id, unit, record, pos, lower(m.role) AS role, generate_subscripts(items, 1) AS sub, unnest(items) AS b
    FROM (SELECT *, json_extract(m.content, '$[*]') AS items FROM ok WHERE json_type(m.content) = 'ARRAY')
),
calls AS (
    SELECT file_id, unit, record, pos, generate_subscripts(items, 1) AS sub, unnest(items) AS c
    FROM (SELECT *, json_extract(m.tool_calls, '$[*]') AS items FROM ok WHERE json_type(m.tool_calls) = 'ARRAY')
)
-- the text of a user, assistant or tool message (a tool message is a tool result)
SELECT file_id, unit, record, pos, 0 AS sub, lower(m.role) AS role,
       CASE WHEN lower(m.role) IN ('tool', 'function') THEN 'tool_result'
            -- the harness's answer to an action written in the agent's text
            WHEN observes AND prev_role IN ('assistant', 'ai', 'model') AND prev_action IS NOT NULL THEN 'tool_result'
            -- mini-swe-agent's last message: how the run ended and what it submitted
            WHEN lower(m.role) = 'exit' THEN 'workflow_step'
            WHEN lower(m.role) IN ('user', 'human') THEN
                 CASE WHEN producer = 'tau-bench' THEN 'user_message'  -- the customer
                      -- the harness's user role: the task statement, observations, templates
                      WHEN producer IN ('openhands', 'swe-agent') THEN 'workflow_step'
                      WHEN producer = 'mini-swe-agent' THEN CASE person WHEN 'rejection' THEN 'human_correction'
                                                                        WHEN 'interruption' THEN 'user_message'
                                                                        WHEN 'said' THEN 'user_message'
                                                                        ELSE 'workflow_step' END
                      -- of unknown origin: an agent framework's template in the user's place (an observation,
                      -- a format error, a continue notice) is a step of the harness, the rest a person's
                      WHEN lw_harness_text(content_text) THEN 'workflow_step'
                      ELSE 'user_message' END
            WHEN lower(m.role) IN ('assistant', 'ai', 'model', 'bot') THEN 'assistant_message'
            ELSE 'unknown' END AS kind,
       -- a rejection's text is the words the person gave with it (none when they only switched modes)
       CASE WHEN person = 'rejection'
            THEN coalesce(trim(regexp_extract(content_text, '(?s)with the following message:\s*(.*)$', 1)), '')
            ELSE content_text END AS text,
       coalesce(m.tool_call_id, msg->'tool_call_ids'->>0,
                CASE WHEN observes AND prev_action IS NOT NULL THEN 'text-' || (pos - 1) END) AS call_id,
       CASE WHEN lower(m.role) IN ('tool', 'function') THEN m.name END AS tool_name,
       NULL::JSON AS args, NULL::BOOLEAN AS is_error, m.role AS raw_role,
       -- who wrote it, where the producer says (NULL: as the type says)
       CASE WHEN lower(m.role) IN ('user', 'human') AND producer = 'tau-bench' THEN 'counterpart'
            WHEN lower(m.role) IN ('user', 'human') AND person IS NOT NULL THEN 'human' END AS actor,
       person = 'interruption' AS interruption
FROM ok
WHERE lower(m.role) NOT IN ('system', 'developer')
  AND (content_text IS NOT NULL OR lower(m.role) IN ('tool', 'function'))
UNION ALL
-- an action written in the agent's text (one fenced shell block) that the harness answered: a bash call
SELECT file_id, unit, record, pos, 1, 'assistant', 'tool_call', action, 'text-' || pos, 'bash',
       json_object('command', action), NULL, 'assistant', NULL, NULL
FROM ok
WHERE lower(m.role) IN ('assistant', 'ai', 'model') AND action IS NOT NULL AND answered
  AND coalesce(json_array_length(m.tool_calls), 0) = 0
UNION ALL
-- OpenAI tool calls
SELECT file_id, unit, record, pos, sub, 'assistant', 'tool_call',
       c->'function'->>'name', c->>'id', c->'function'->>'name',
       CASE WHEN json_valid(c->'function'->>'arguments') THEN (c->'function'->>'arguments')::JSON
            ELSE to_json(c->'function'->>'arguments') END, NULL, 'assistant', NULL, NULL
FROM calls
UNION ALL
-- the older single function_call
SELECT file_id, unit, record, pos, 1, 'assistant', 'tool_call', m.function_call->>'name', NULL,
       m.function_call->>'name',
       CASE WHEN json_valid(m.function_call->>'arguments') THEN (m.function_call->>'arguments')::JSON
            ELSE to_json(m.function_call->>'arguments') END, NULL, 'assistant', NULL, NULL
FROM ok WHERE json_type(m.function_call) = 'OBJECT'
UNION ALL
-- Anthropic blocks: tool_use in an assistant message, tool_result in a user message
SELECT file_id, unit, record, pos, sub, role,
       CASE b->>'type' WHEN 'tool_use' THEN 'tool_call' ELSE 'tool_result' END,
       CASE b->>'type' WHEN 'tool_use' THEN b->>'name'
            ELSE coalesce(lw_content_text(b->'content'), CASE WHEN json_type(b, '$.content') = 'VARCHAR' THEN b->>'content' END) END,
       coalesce(b->>'id', b->>'tool_use_id'), CASE b->>'type' WHEN 'tool_use' THEN b->>'name' END,
       CASE b->>'type' WHEN 'tool_use' THEN b->'input' END, lw_bool(b->>'is_error'), role, NULL, NULL
FROM blocks WHERE b->>'type' IN ('tool_use', 'tool_result');

-- A tool result takes its tool from the call it answers (the call before it with that id), and failed
-- when it says so: `is_error`, text that starts with an error, a JSON object with an `error` key.
CREATE OR REPLACE TEMP TABLE chat_events AS
SELECT p.*, coalesce(p.tool_name, c.tool_name) AS tool,
       p.kind = 'tool_result' AND (coalesce(p.is_error, false)
           OR regexp_matches(coalesce(p.text, ''), '^\s*(Error|ERROR|error|Exception|Traceback)\b')
           OR coalesce(lw_exit_code(p.text), 0) <> 0
           -- a harness's time-out of the command (mini-swe-agent 1.x)
           OR (p.raw_role IN ('user', 'human', 'tool') AND regexp_matches(coalesce(p.text, ''),
                   '^\s*(OBSERVATION:\s*)?(The last command <command>.*</command> timed out|The command ''.*'' was cancelled because it took more than)'))
           OR CASE WHEN json_valid(p.text) THEN json_type(p.text) = 'OBJECT' AND json_exists(p.text, '$.error')
                   ELSE false END) AS failed,
       row_number() OVER (PARTITION BY p.file_id, p.unit ORDER BY p.pos, p.sub) AS seq,
       p.kind = 'assistant_message'
           AND (p.pos, p.sub) = max((p.pos, p.sub)) FILTER (WHERE p.kind = 'assistant_message')
                                OVER (PARTITION BY p.file_id, p.unit) AS is_final
FROM chat_parts p
LEFT JOIN (SELECT DISTINCT ON (file_id, unit, call_id) file_id, unit, call_id, tool_name FROM chat_parts
           WHERE kind = 'tool_call' AND call_id IS NOT NULL ORDER BY file_id, unit, call_id, pos, sub) c
       ON p.kind = 'tool_result' AND c.file_id = p.file_id AND c.unit = p.unit AND c.call_id = p.call_id;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT u.trace_id, 'chat',
       coalesce(u.doc->>'source', u.doc->'metadata'->>'source', u.doc->>'agent',
                nullif(regexp_extract(u.file, '([^/]+)/[^/]+$', 1), ''), 'chat'),
       -- the task: the first person's text, or where the user role is the harness's, its first text there
       (SELECT lw_clip(arg_min(e.text, e.seq), 300) FROM chat_events e
        WHERE e.file_id = u.file_id AND e.unit = u.unit
          AND (e.kind = 'user_message'
               OR (u.producer IN ('openhands', 'mini-swe-agent', 'swe-agent') AND e.kind = 'workflow_step'
                   AND e.raw_role IN ('user', 'human')))),
       CASE WHEN u.shape = 'tau' AND json_exists(u.doc, '$.reward')
            THEN CASE WHEN try_cast(u.doc->>'reward' AS DOUBLE) >= 1 THEN 'success' ELSE 'failed' END
            -- mini-swe-agent and SWE-agent: how the run ended (Submitted, LimitsExceeded, exit_cost...)
            ELSE coalesce(u.doc->>'outcome', u.doc->'info'->>'exit_status') END,
       coalesce(u.doc->'metadata'->>'tenant_id', u.doc->>'tenant_id'), u.file, u.line, NULL, NULL,
       CASE WHEN u.shape = 'tau' THEN json_object('task_id', u.doc->'task_id', 'trial', u.doc->'trial')
            ELSE u.doc->'metadata' END,
       -- the system prompt is the conversation's context; other fields of the record are kept too
       nullif(json_merge_patch(
           CASE WHEN u.shape = 'conversation'
                THEN json_merge_patch(u.doc, '{"messages":null,"id":null,"conversation_id":null,"trace_id":null,"metadata":null}')
                -- SWE-agent: the run's info and environment; not the history again, step by step or as replay
                WHEN u.shape = 'history'
                THEN json_merge_patch(u.doc, '{"history":null,"trajectory":null,"replay_config":null}')
                ELSE '{}' END,
           json_object('system', coalesce((SELECT string_agg(lw_content_text(m.m.content), chr(10) || chr(10) ORDER BY m.pos)
                                            FROM chat_messages m WHERE m.file_id = u.file_id AND m.unit = u.unit
                                              AND lower(m.m.role) IN ('system', 'developer')),
                                           lw_content_text(u.doc->'system')),  -- Anthropic's top-level system
                       'model', u.doc->>'model'))::VARCHAR, '{}')::JSON,
       u.file_id, u.unit
FROM chat_units u
WHERE u.shape = 'message' OR NOT EXISTS (SELECT 1 FROM chat_problems p WHERE p.file_id = u.file_id AND p.record = u.unit);

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT u.trace_id, e.seq, 'm' || e.pos || CASE WHEN e.sub > 0 THEN '.' || e.sub ELSE '' END,
       CASE WHEN e.is_final THEN 'final_answer' ELSE e.kind END,
       CASE WHEN e.kind IN ('tool_call', 'tool_result') AND e.raw_role NOT IN ('tool', 'function')
            THEN e.raw_role || ':' || e.kind ELSE e.raw_role END,
       CASE WHEN e.kind = 'tool_result' THEN lw_unwrap_observation(e.text) ELSE e.text END,
       CASE WHEN e.kind = 'tool_result' THEN CASE WHEN e.failed THEN 'error' ELSE 'ok' END END,
       CASE WHEN e.kind = 'tool_result' THEN NOT e.failed END,
       CASE WHEN e.kind IN ('tool_call', 'tool_result') THEN e.tool END,
       NULL, NULL,
       CASE WHEN e.kind = 'tool_call' THEN json_object('arguments', e.args, 'tool_call_id', e.call_id)
            WHEN e.kind = 'tool_result' AND e.call_id IS NOT NULL THEN json_object('tool_call_id', e.call_id)
            WHEN e.interruption THEN json_object('interruption', true) END,
       NULL, e.file_id, e.record, CASE WHEN e.kind = 'workflow_step' THEN 'harness' ELSE e.actor END
FROM chat_events e JOIN chat_units u ON u.file_id = e.file_id AND u.unit = e.unit
SEMI JOIN traces t ON t.trace_id = u.trace_id AND t.format = 'chat'
UNION ALL
-- tau-bench's reward: the conversation's evaluation, after its last message
SELECT u.trace_id, coalesce((SELECT max(e.seq) FROM chat_events e WHERE e.file_id = u.file_id AND e.unit = u.unit), 0) + 1,
       'reward', 'evaluation_result', 'reward', 'reward ' || (u.doc->>'reward'),
       CASE WHEN try_cast(u.doc->>'reward' AS DOUBLE) >= 1 THEN 'passed' ELSE 'failed' END,
       try_cast(u.doc->>'reward' AS DOUBLE) >= 1, NULL, NULL, NULL,
       json_object('reward', u.doc->'reward'), NULL, u.file_id, u.unit, 'harness'
FROM chat_units u SEMI JOIN traces t ON t.trace_id = u.trace_id AND t.format = 'chat'
WHERE u.shape = 'tau' AND json_exists(u.doc, '$.reward');

-- A bare-message record that made no event (an empty system message, say) still belongs to its conversation.
INSERT INTO record_links (file_id, record, trace_id)
SELECT m.file_id, m.record, u.trace_id FROM chat_messages m JOIN chat_units u USING (file_id, unit)
SEMI JOIN traces t ON t.trace_id = u.trace_id AND t.format = 'chat'
WHERE u.shape = 'message'
  AND NOT EXISTS (SELECT 1 FROM chat_events e WHERE e.file_id = m.file_id AND e.record = m.record)
  AND NOT EXISTS (SELECT 1 FROM chat_problems p WHERE p.file_id = m.file_id AND p.record = m.record);

DROP TABLE chat_docs;
DROP TABLE chat_units;
DROP TABLE chat_superseded;
DROP MACRO chat_list;
DROP TABLE chat_messages;
DROP TABLE chat_problems;
DROP TABLE chat_parts;
DROP TABLE chat_events;
