-- format: agent_chat_log
-- title: multi-agent message logs: a run's `history`, each message with its speaker (AG2 group chats, Magentic-One transcripts)
-- match: CASE WHEN list_has_any(json_keys(doc), ['history'])
--   THEN json_type(doc, '$.history') = 'ARRAY'
--        AND NOT list_has_any(json_keys(doc), ['trajectory', 'instance_id'])
--        AND json_type(doc, '$.history[0]') = 'OBJECT' AND json_exists(doc, '$.history[0].content')
--        AND (json_type(doc, '$.history[0].name') = 'VARCHAR'
--             OR lower(coalesce(doc->'history'->0->>'role', 'user'))
--                NOT IN ('user', 'assistant', 'system', 'tool', 'function', 'developer', 'model'))
--   ELSE false END
-- priority: 245
-- whole: true
-- roles: no person speaks after the first message; the speaker, not the chat role, says who acts.
--   AG2 group chats (entries {content, name, role}: `name` the speaker, `role` user/assistant only the chat
--     role): the first message = parent (CaptainAgent composes it for the expert group, "You are given: (1) a
--     task and advises from your manager…": ag2ai/ag2 autogen/agentchat/contrib/captainagent, AUTOBUILD_TASK_DESC,
--     under the name of the expert it hands the chat to); every expert = agent; the code executor
--     (Computer_terminal) = tool ("exitcode: N (execution …)\nCode output: …", the executor's reply:
--     agentchat/conversable_agent.py), or harness when it ran nothing ("There is no code from the last …").
--   Magentic-One transcripts (entries {content, role}, `role` the speaker's label): `human` = human (the task:
--     Magentic-One's scripts publish it as a UserMessage with source "human", whether a person typed it or a
--     benchmark scenario wrote it; the log cannot tell, and it is the only message a person may have written:
--     microsoft/autogen python/packages/autogen-magentic-one, examples and the orchestrators' OrchestrationEvent
--     labels); `Orchestrator (-> X)` = parent (the orchestrator is the lead agent: it plans, keeps the ledger
--     and hands each step to a worker, which acts on that instruction as a sub-agent on its parent's prompt);
--     `Orchestrator (thought)` = agent (its own plans and ledger); `Orchestrator (termination condition)` =
--     harness (the orchestration loop's stop); WebSurfer, FileSurfer, Coder/Assistant = agent; ComputerTerminal
--     = tool ("The script ran, then exited with Unix exit code: N…"), or harness when it ran nothing.
--
-- A record is one run (one trace; its id a hash of its content). Only `history` is read, and
-- `question` as the trace's task when there is one (else the first message); `system_prompt` (the agents'
-- prompts) is the trace's context. Every other field stays out, events and metadata alike: these logs come
-- with annotations (the agent and step to blame, the expected answer, a verdict), the answer key of a
-- benchmark, never part of a run. Each message is an event whose agent is its speaker (metadata.agent; an
-- orchestrator's instruction also names who it is `to`): the first the task (a user_message), an agent's
-- message an assistant_message (the last one the final_answer), an instruction to another agent a
-- user_message of the parent, the executor's reply a tool_result (failed at a non-zero exit code) answering a
-- tool_call of the executor whose command is the code of the latest message before it that holds a fenced
-- block (its writer the call's agent). A record whose `history` holds a message that is not an object, has
-- no speaker or no content, is rejected whole, with its position.

CREATE OR REPLACE TEMP TABLE acl_docs AS
-- a run carries no id of its own: its id is its content's (a copy of the file elsewhere is the same run)
SELECT file_id, file, line, record, doc, 'agent-chat-' || substr(md5(doc::VARCHAR), 1, 16) AS trace_id
FROM records_in;

-- Every message, parsed once: its text, its speaker and what the label says of it.
CREATE OR REPLACE TEMP TABLE acl_messages AS
SELECT file_id, record, pos, t_msg, text, no_content, named, speaker, label,
       -- Magentic-One's label: `Orchestrator (-> WebSurfer)`, `Orchestrator (thought)`, `WebSurfer`
       CASE WHEN NOT named THEN trim(regexp_extract(label, '^[^(]*\(\s*(.*?)\s*\)\s*$', 1)) END AS aside
FROM (
    SELECT file_id, record, pos, json_type(msg) AS t_msg, lw_content_text(m.content) AS text, m.content IS NULL AS no_content,
           nullif(trim(m.name), '') IS NOT NULL AS named,
           coalesce(nullif(trim(m.name), ''), nullif(trim(regexp_replace(m.role, '\(.*\)\s*$', '')), '')) AS speaker,
           m.role AS label
    FROM (SELECT file_id, record, pos, msg,
                 from_json(msg, '{"content": "JSON", "name": "VARCHAR", "role": "VARCHAR"}') AS m
          FROM (SELECT file_id, record, generate_subscripts(items, 1) AS pos, unnest(items) AS msg
                FROM (SELECT file_id, record, json_extract(doc, '$.history[*]') AS items FROM acl_docs)))
);

-- The first thing wrong with each record: the whole run is rejected, with the message's position.
CREATE OR REPLACE TEMP TABLE acl_problems AS
SELECT file_id, record, arg_min('history[' || (pos - 1) || ']: ' || problem, pos) AS problem
FROM (SELECT *, CASE WHEN t_msg <> 'OBJECT' THEN 'not an object'
                     WHEN speaker IS NULL THEN 'no speaker (`name` or `role`)'
                     WHEN no_content THEN 'missing required field ''content''' END AS problem
      FROM acl_messages)
WHERE problem IS NOT NULL GROUP BY file_id, record;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem FROM acl_problems p JOIN acl_docs d USING (file_id, record);

-- What each message is, by its place and its speaker. The code executor's reply carries its exit code in
-- the header the executor writes (AG2 `exitcode: N (execution …)`, Magentic-One `… Unix exit code: N`).
CREATE OR REPLACE TEMP TABLE acl_parts AS
SELECT m.*, d.trace_id,
       CASE WHEN m.pos = 1 THEN 'task'
            WHEN terminal THEN CASE WHEN exit_code IS NOT NULL THEN 'result' ELSE 'idle' END
            WHEN starts_with(coalesce(m.aside, ''), '->') THEN 'instruction'
            WHEN m.aside = 'termination condition' THEN 'stop'
            ELSE 'said' END AS part,
       CASE WHEN starts_with(coalesce(m.aside, ''), '->') THEN nullif(trim(substr(m.aside, 3)), '') END AS addressee
FROM (SELECT *,
             lower(regexp_replace(speaker, '[^A-Za-z]', '', 'g')) = 'computerterminal'
                 OR regexp_matches(coalesce(text, ''), '^\s*exitcode: -?\d+ \(execution ') AS terminal,
             try_cast(coalesce(nullif(regexp_extract(coalesce(text, ''), '^\s*exitcode: (-?\d+) \(execution ', 1), ''),
                               nullif(regexp_extract(coalesce(text, ''), '^\s*The script ran[^\n]*?(?:Unix exit code(?: was)?): (-?\d+)', 1), ''))
                      AS INTEGER) AS exit_code
      FROM acl_messages) m
JOIN acl_docs d USING (file_id, record)
ANTI JOIN acl_problems p USING (file_id, record);

-- The code each executor's reply ran: the fenced blocks of the latest message before it that holds one.
-- (Everything is by record: a copy of a run in another file is settled after the adapter, as one trace.)
CREATE OR REPLACE TEMP TABLE acl_calls AS
SELECT r.file_id, r.record, r.pos, c.speaker AS writer, c.code
FROM (SELECT file_id, record, pos FROM acl_parts WHERE part = 'result') r
ASOF LEFT JOIN (SELECT file_id, record, pos, speaker,
                       array_to_string(regexp_extract_all(text, '(?s)```[A-Za-z0-9_+-]*[ \t]*\n(.*?)\n?```', 1), chr(10)) AS code
                FROM acl_parts
                WHERE part IN ('task', 'said', 'instruction') AND regexp_matches(coalesce(text, ''), '```[^\n]*\n')) c
     ON c.file_id = r.file_id AND c.record = r.record AND r.pos > c.pos;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT d.trace_id, 'agent_chat_log',
       CASE WHEN bool_or(p.named) THEN 'ag2' ELSE 'magentic-one' END,
       lw_clip(coalesce(nullif(trim(d.doc->>'question'), ''), arg_min(p.text, p.pos)), 300),
       NULL, NULL, d.file, d.line, NULL, NULL,
       json_object('agents', list_sort(list_distinct(list(p.speaker) FILTER (WHERE p.part IN ('said', 'instruction', 'result', 'idle'))))),
       -- the agents' own prompts are the run's context
       CASE WHEN json_type(d.doc, '$.system_prompt') IN ('OBJECT', 'VARCHAR') THEN json_object('system', d.doc->'system_prompt') END,
       d.file_id, d.record
FROM acl_docs d JOIN acl_parts p USING (file_id, record)
GROUP BY d.trace_id, d.file, d.line, d.file_id, d.record, d.doc;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT trace_id, row_number() OVER (PARTITION BY file_id, record ORDER BY pos, sub)::INTEGER, event_id,
       CASE WHEN type = 'assistant_message'
                 AND (pos, sub) = max((pos, sub)) FILTER (WHERE type = 'assistant_message') OVER (PARTITION BY file_id, record)
            THEN 'final_answer' ELSE type END,
       raw_type, content, status, success, tool_name, NULL, parent_id, metadata, NULL, file_id, record, actor
FROM (
    SELECT p.trace_id, p.pos, 1 AS sub, 'h' || (p.pos - 1) AS event_id,
           CASE p.part WHEN 'task' THEN 'user_message' WHEN 'instruction' THEN 'user_message'
                       WHEN 'result' THEN 'tool_result' WHEN 'idle' THEN 'workflow_step' WHEN 'stop' THEN 'workflow_step'
                       ELSE 'assistant_message' END AS type,
           p.label AS raw_type, p.text AS content,
           CASE WHEN p.part = 'result' THEN CASE WHEN p.exit_code = 0 THEN 'ok' ELSE 'error' END END AS status,
           CASE WHEN p.part = 'result' THEN p.exit_code = 0 END AS success,
           CASE WHEN p.part = 'result' THEN p.speaker END AS tool_name,
           CASE WHEN p.part = 'result' THEN 'h' || (p.pos - 1) || '/call' END AS parent_id,
           json_merge_patch(json_object('agent', p.speaker),
                            json_object('to', p.addressee, 'exit_code', CASE WHEN p.part = 'result' THEN p.exit_code END))
               AS metadata,
           p.file_id, p.record,
           CASE WHEN p.part = 'task' THEN CASE WHEN NOT p.named AND lower(p.speaker) = 'human' THEN 'human' ELSE 'parent' END
                WHEN p.part = 'instruction' THEN 'parent'
                WHEN p.part IN ('idle', 'stop') THEN 'harness'
                WHEN p.part = 'result' THEN 'tool'
                ELSE 'agent' END AS actor
    FROM acl_parts p
    UNION ALL
    -- the executor's run of the latest code written before its reply
    SELECT p.trace_id, p.pos, 0, 'h' || (p.pos - 1) || '/call', 'tool_call', 'code', p.speaker, NULL, NULL, p.speaker, NULL,
           json_object('agent', coalesce(c.writer, p.speaker), 'arguments', json_object('command', c.code)),
           p.file_id, p.record, 'agent'
    FROM acl_parts p JOIN acl_calls c USING (file_id, record, pos)
);

DROP TABLE acl_docs;
DROP TABLE acl_messages;
DROP TABLE acl_problems;
DROP TABLE acl_parts;
DROP TABLE acl_calls;
