-- format: codex
-- title: OpenAI Codex CLI rollout JSONL ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<session>.jsonl)
-- match: CASE WHEN list_has_any(json_keys(doc), ['payload', 'record_type', 'instructions'])
--   THEN (json_exists(doc, '$.payload') AND json_exists(doc, '$.timestamp')
--         AND coalesce(doc->>'type', '') IN ('session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted'))
--     OR json_exists(doc, '$.record_type')
--     OR (json_exists(doc, '$.instructions') AND json_exists(doc, '$.id') AND json_exists(doc, '$.timestamp'))
--   ELSE false END
-- priority: 330
-- gathers: yes
-- roles: user = human (what the person typed: event_msg user_message; an interrupted turn, turn_aborted; a
--   rollback or an undo; a command or patch they rejected: "exec command rejected by user", "patch rejected
--   by user"), harness (context Codex writes in the user role: <environment_context>, AGENTS.md and
--   <user_instructions>, <turn_aborted>, <subagent_notification>, <user_shell_command>… response items; a
--   call its approval policy, exec policy or automatic reviewer refused: "`cmd` rejected: policy forbids
--   commands starting with …", "approval policy is …; reject command", "exec command rejected: …", "This
--   action was rejected due to unacceptable risk"), parent (the prompts of a session another agent spawned:
--   session_meta source subagent thread_spawn; another sub-agent session's, review or compact, are the
--   harness's); function_call_output = tool (but those refusals); assistant = agent; error events = provider
--   (a sandbox error: the tool's). Read in openai/codex codex-rs/core/src/tools/events.rs (rejections
--   normalised to "exec command rejected by user"), tools/orchestrator.rs (a forbidden command is a
--   rejection with the policy's reason), exec_policy.rs, guardian (the reviewer's refusal),
--   handlers/shell.rs (the escalation refusal), protocol.rs (SessionSource::SubAgent).
--
-- A session is a trace (trace_id = the session_meta id, else the id in the file name). Lines are
-- {timestamp, type, payload}; the earlier bare form (a header {id, timestamp, instructions}, then response
-- items with no envelope, and {"record_type": "state"} lines) is read too.
-- What the person typed is a user_message (the first is the task); context Codex injects in the user role
-- (<environment_context>, AGENTS.md…) is a workflow_step of the harness, as written. Assistant text is an
-- assistant_message (the last, or one in the final_answer phase, the final_answer). Codex writes user and assistant text twice (a response_item and an event_msg): the
-- event_msg user_message and the response_item assistant message are kept, the copies linked.
-- function_call, custom_tool_call, local_shell_call and web_search_call are tool_call events, their outputs
-- tool_result events paired by call_id. Failure is only in the output text: a non-zero exit code (the JSON
-- of 0.3x, `Exit code: N`, `Process exited with code N`), `failed in sandbox …`, a timeout, an apply_patch
-- error. `exec command rejected by user` and `patch rejected by user` are tool_results with status rejected
-- and human corrections (with no words: Codex records none); a call its policies refused is a tool_result
-- with status denied (actor harness), not a failure of the tool. An interrupted turn (turn_aborted), a
-- rollback and an undo are the person's user_messages (metadata interruption or rollback), their text the
-- marker; what the person says next is a turn of its own.
-- Error events (a stream cut, an overloaded model, a usage limit) are the model provider's (actor provider).
-- Reasoning (encrypted), token counts, turn markers and other bookkeeping are accounted, not events; a
-- response item of a type not named here is an event of type unknown.
-- Tool output is kept up to 4,000 characters.

-- Each line is parsed once, into the envelope's fields and, as a struct, its payload's; the early form's
-- bare items have those fields at the top. A line's text is read again only where the parse cannot say:
-- whether a null payload (or record_type, instructions, id) is there, and for the payload's own text: on
-- the lines searched for the working directory (`<cwd>`, which a JSON writer may spell \u003ccwd>), and
-- on the few parts with no text whose copies it tells apart (codex_parts).
CREATE OR REPLACE TEMP TABLE codex_docs AS
WITH items AS (
    SELECT file_id, file, line, record, f.timestamp, lw_utc(f.timestamp) AS ts, kind, enveloped,
           -- the payload's fields (the line's own, for a bare item)
           CASE WHEN enveloped THEN f.payload
                ELSE {'id': f.id, 'type': f.type, 'role': f.role, 'message': f.message, 'reason': f.reason,
                      'content': f.content, 'call_id': f.call_id, 'name': f.name, 'output': f.output,
                      'arguments': f.arguments, 'input': f.input, 'action': f.action, 'phase': f.phase,
                      'codex_error_info': f.codex_error_info, 'cwd': f.cwd, 'cli_version': f.cli_version,
                      'originator': f.originator, 'git': f.git, 'forked_from_id': f.forked_from_id,
                      'parent_thread_id': f.parent_thread_id, 'model': f.model, 'source': f.source} END AS q,
           f.id AS header_id,
           CASE WHEN kind IN ('session_meta', 'turn_context', 'header') OR contains(doc, '<cwd>')
                     OR contains(doc, '\u003c') OR contains(doc, '\u003C')
                THEN (CASE WHEN enveloped THEN doc->'payload' ELSE doc END)::VARCHAR END AS cwd_text
    FROM (SELECT *,
                 CASE WHEN enveloped THEN f.type
                      WHEN f.record_type IS NOT NULL OR json_exists(doc, '$.record_type') THEN 'state'
                      WHEN (f.instructions IS NOT NULL OR json_exists(doc, '$.instructions'))
                           AND (f.id IS NOT NULL OR json_exists(doc, '$.id')) THEN 'header'
                      ELSE 'response_item' END AS kind          -- a bare item of the early form
          FROM (SELECT *, f.payload IS NOT NULL OR json_exists(doc, '$.payload') AS enveloped
                FROM (SELECT file_id, file, line, record, doc,
                             from_json(doc, '{"timestamp": "VARCHAR", "type": "VARCHAR", "record_type": "JSON",
                                 "instructions": "JSON", "id": "VARCHAR", "role": "VARCHAR", "message": "VARCHAR",
                                 "reason": "VARCHAR", "content": "JSON", "call_id": "VARCHAR", "name": "VARCHAR",
                                 "output": "JSON", "arguments": "VARCHAR", "input": "VARCHAR", "action": "JSON",
                                 "phase": "VARCHAR", "codex_error_info": "VARCHAR", "cwd": "VARCHAR",
                                 "cli_version": "VARCHAR", "originator": "VARCHAR", "git": "JSON",
                                 "forked_from_id": "VARCHAR", "parent_thread_id": "VARCHAR", "model": "VARCHAR",
                                 "source": "JSON",
                                 "payload": {"id": "VARCHAR", "type": "VARCHAR", "role": "VARCHAR", "message": "VARCHAR",
                                             "reason": "VARCHAR", "content": "JSON", "call_id": "VARCHAR",
                                             "name": "VARCHAR", "output": "JSON", "arguments": "VARCHAR",
                                             "input": "VARCHAR", "action": "JSON", "phase": "VARCHAR",
                                             "codex_error_info": "VARCHAR", "cwd": "VARCHAR", "cli_version": "VARCHAR",
                                             "originator": "VARCHAR", "git": "JSON", "forked_from_id": "VARCHAR",
                                             "parent_thread_id": "VARCHAR", "model": "VARCHAR",
                                             "source": "JSON"}}') AS f
                      FROM records_in)))
),
-- the session's id, per file: the session_meta's (or the early header's); and who writes its prompts: a
-- session another agent spawned (source subagent thread_spawn) is prompted by that agent, one Codex started
-- itself for a review or a compaction by Codex
sessions AS (
    SELECT file_id, arg_min(CASE WHEN kind = 'session_meta' THEN q.id ELSE header_id END, record) AS session_id,
           arg_min(CASE WHEN json_exists(q.source, '$.subagent.thread_spawn') THEN 'parent'
                        WHEN json_exists(q.source, '$.subagent') THEN 'harness' END, record)
               FILTER (WHERE kind = 'session_meta') AS prompted_by
    FROM items WHERE (kind = 'session_meta' AND q.id IS NOT NULL) OR (kind = 'header' AND header_id IS NOT NULL)
    GROUP BY file_id
)
SELECT i.file_id, i.file, i.line, i.record, i.timestamp, i.ts, i.kind, i.q, i.cwd_text, i.enveloped, s.prompted_by,
       (i.file_id << 32) + i.record AS ord,  -- file order across the files of a session
       coalesce(s.session_id,
                nullif(regexp_extract(i.file, '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$', 1), ''),
                'codex-' || substr(md5(i.file), 1, 16)) AS trace_id
FROM items i LEFT JOIN sessions s USING (file_id);

-- Text Codex puts in the user's place that the user did not type.
CREATE OR REPLACE TEMP MACRO codex_injected(t) AS
    regexp_matches(ltrim(coalesce(t, '')), '^(<environment_context>|<user_instructions>|<INSTRUCTIONS>|# AGENTS\.md|<permissions|<subagent_notification>|<collaboration_mode>|<turn_aborted>|<user_shell_command>|<user_action>|<skill>|<task-notification>|<codex_internal_context|<recommended_plugins>)');

-- Each line's part: what it is, its text, its call id and tool, and what tells its copies apart (the part
-- and its call id, else its time and text; a part with no text, by its payload's text, read for those few).
-- Lines that are no part (reasoning, token counts, bookkeeping) stop here.
CREATE OR REPLACE TEMP TABLE codex_parts AS
WITH parts AS (
    SELECT file_id, file, line, record, timestamp, ts, kind, ord, trace_id, enveloped, prompted_by, q.type AS ptype,
           CASE
             WHEN kind = 'event_msg' AND q.type = 'user_message' AND NOT codex_injected(q.message) THEN 'prompt'
             WHEN kind = 'response_item' AND q.type = 'message' AND q.role = 'user'
                  AND NOT codex_injected(lw_content_text(q.content)) THEN 'prompt_item'
             -- context Codex writes in the user role: the harness's, as written
             WHEN kind = 'response_item' AND q.type = 'message' AND q.role = 'user' THEN 'context'
             WHEN kind = 'response_item' AND q.type = 'message' AND q.role = 'assistant' THEN 'say'
             WHEN kind = 'event_msg' AND q.type = 'agent_message' THEN 'say_event'
             WHEN kind = 'response_item' AND q.type IN ('function_call', 'custom_tool_call', 'local_shell_call', 'web_search_call')
                  THEN 'call'
             WHEN kind = 'response_item' AND q.type IN ('function_call_output', 'custom_tool_call_output') THEN 'output'
             WHEN kind = 'event_msg' AND q.type = 'turn_aborted' AND coalesce(q.reason, 'interrupted') = 'interrupted'
                  THEN 'interrupt'
             WHEN kind = 'event_msg' AND q.type IN ('thread_rolled_back', 'undo_completed') THEN 'rollback'
             WHEN kind = 'event_msg' AND q.type IN ('error', 'stream_error') THEN 'error'
             WHEN kind = 'event_msg' AND q.type = 'turn_aborted' THEN 'aborted'
             WHEN kind = 'compacted' THEN 'compacted'
             -- a response item of a type this adapter does not know yet is kept, as an event of type unknown
             WHEN kind = 'response_item' AND q.type NOT IN ('message', 'reasoning', 'ghost_snapshot', 'compaction')
                  THEN 'other'
           END AS part,
           CASE WHEN kind = 'event_msg' THEN coalesce(q.message, q.reason)
                WHEN q.type = 'message' THEN lw_content_text(q.content)
                WHEN kind = 'compacted' THEN q.message END AS text,
           q.call_id AS call_id,
           CASE q.type WHEN 'local_shell_call' THEN 'local_shell' WHEN 'web_search_call' THEN 'web_search' ELSE q.name END AS tool,
           q.phase, q.arguments, q.input, q.action, q.reason, q.codex_error_info AS error_info, q.output
    FROM codex_docs
),
keyed AS (
    SELECT *, part IN ('call', 'output') AND call_id IS NOT NULL AS by_call FROM parts WHERE part IS NOT NULL
),
payload_texts AS (
    SELECT k.file_id, k.record, CASE WHEN k.enveloped THEN (r.doc->'payload')::VARCHAR ELSE r.doc END AS payload_text
    FROM (SELECT file_id, record, enveloped FROM keyed WHERE NOT by_call AND text IS NULL) k
    JOIN records_in r USING (file_id, record)
)
SELECT k.* EXCLUDE (enveloped, by_call),
       CASE WHEN k.by_call THEN k.part || ':' || k.call_id
            ELSE k.part || ':' || coalesce(k.timestamp, '') || ':' || md5(coalesce(k.text, t.payload_text)) END AS copy_key
FROM keyed k LEFT JOIN payload_texts t USING (file_id, record);

-- Tool outputs: the text, and whether it failed. A 0.3x shell output is JSON {"output", "metadata": {"exit_code"}},
-- written as a string. The output's kind is the first character of its JSON.
CREATE OR REPLACE TEMP TABLE codex_outputs AS
SELECT file_id, record, out_text,
       CASE
         -- the person said no; the harness said no (a forbidden command, an escalation its approval policy
         -- does not allow, the automatic reviewer): neither ran, so neither is the tool's failure
         WHEN regexp_matches(out_text, '^\s*(exec command|patch) rejected by user') THEN 'rejected'
         WHEN regexp_matches(out_text, '^\s*(`[^\n]*` rejected: |approval policy is \w+; reject command|exec command rejected: |This action was rejected due to unacceptable risk)')
              THEN 'denied'
         WHEN exit_code IS NOT NULL THEN CASE WHEN exit_code = 0 THEN 'ok' ELSE 'error' END
         WHEN success_flag IS NOT NULL THEN CASE WHEN success_flag THEN 'ok' ELSE 'error' END
         WHEN regexp_matches(out_text, '^\s*Exit code: (\d+)') THEN CASE WHEN regexp_extract(out_text, '^\s*Exit code: (\d+)', 1) = '0' THEN 'ok' ELSE 'error' END
         WHEN regexp_matches(out_text, 'Process exited with code (\d+)') THEN CASE WHEN regexp_extract(out_text, 'Process exited with code (\d+)', 1) = '0' THEN 'ok' ELSE 'error' END
         WHEN regexp_matches(out_text, '^\s*(failed in sandbox|command timed out|execution error|error: |apply_patch verification failed|err: |invalid hunk)')
              THEN 'error'
         WHEN regexp_matches(out_text, '^\s*aborted') THEN 'aborted'
         ELSE 'ok'
       END AS status,
       coalesce(exit_code, try_cast(regexp_extract(out_text, '(?:Exit code: |exited with code |exit code: )(\d+)', 1) AS INTEGER)) AS exit_code
FROM (
    SELECT file_id, record,
           CASE WHEN o_kind = '"' THEN CASE WHEN left(wrapped.output::VARCHAR, 1) = '"' THEN wrapped.output->>'$' ELSE s END
                WHEN o_kind = '[' THEN lw_content_text(output)
                ELSE coalesce(output->>'content', output->>'$') END AS out_text,
           try_cast(wrapped.metadata.exit_code AS INTEGER) AS exit_code,
           CASE WHEN o_kind = '{' THEN lw_bool(output->>'success') END AS success_flag
    FROM (SELECT *, CASE WHEN o_kind = '"' AND json_valid(s)
                         THEN from_json(s, '{"output": "JSON", "metadata": {"exit_code": "VARCHAR"}}') END AS wrapped
          FROM (SELECT file_id, record, output, o_kind, CASE WHEN o_kind = '"' THEN output->>'$' END AS s
                FROM (SELECT file_id, record, output, left(output::VARCHAR, 1) AS o_kind FROM codex_parts WHERE part = 'output')))
);

-- The kept parts, once each: user text from the event_msg copy (or the response item when the file has
-- no such copy), assistant text from the response item (or the event_msg), every call and output once.
-- The first of each part's copies is chosen on narrow rows.
CREATE OR REPLACE TEMP TABLE codex_kept AS
WITH has AS (
    SELECT trace_id, bool_or(part = 'prompt') AS prompts, bool_or(part = 'say') AS says
    FROM codex_parts GROUP BY trace_id
),
firsts AS (
    SELECT c.file_id, c.record
    FROM codex_parts c JOIN has h USING (trace_id)
    WHERE NOT (c.part = 'prompt_item' AND h.prompts) AND NOT (c.part = 'say_event' AND h.says)
    QUALIFY row_number() OVER (PARTITION BY c.trace_id, c.copy_key ORDER BY c.file_id, c.record) = 1
)
SELECT c.* EXCLUDE (copy_key, output), o.out_text, o.status AS out_status, o.exit_code
FROM codex_parts c SEMI JOIN firsts USING (file_id, record)
LEFT JOIN codex_outputs o USING (file_id, record);

-- The person's prompts: the first is the task.
CREATE OR REPLACE TEMP TABLE codex_prompts AS
SELECT trace_id, ord, text FROM codex_kept WHERE part IN ('prompt', 'prompt_item');

CREATE OR REPLACE TEMP TABLE codex_typed AS
SELECT k.*, c.tool AS called_tool,
       CASE k.part WHEN 'prompt' THEN 'user_message' WHEN 'prompt_item' THEN 'user_message'
                   WHEN 'say' THEN 'assistant_message' WHEN 'say_event' THEN 'assistant_message'
                   WHEN 'call' THEN 'tool_call' WHEN 'output' THEN 'tool_result'
                   WHEN 'interrupt' THEN 'user_message' WHEN 'rollback' THEN 'user_message'
                   WHEN 'error' THEN 'error' WHEN 'other' THEN 'unknown' ELSE 'workflow_step' END AS type
FROM codex_kept k
LEFT JOIN (SELECT trace_id, call_id, any_value(tool) AS tool FROM codex_kept WHERE part = 'call' AND call_id IS NOT NULL
           GROUP BY ALL) c ON c.trace_id = k.trace_id AND c.call_id = k.call_id AND k.part = 'output';

-- Each event's place in its session, worked out on narrow rows: a command or patch the user rejected did
-- not run, and is a correction too (its copy); the session's last assistant message is its final answer.
CREATE OR REPLACE TEMP TABLE codex_seq AS
SELECT *, max(seq) FILTER (WHERE type = 'assistant_message') OVER (PARTITION BY trace_id) AS last_say
FROM (SELECT *, row_number() OVER (PARTITION BY trace_id ORDER BY ts NULLS LAST, file_id, record, is_copy) AS seq
      FROM (SELECT trace_id, ts, file_id, record, type, false AS is_copy FROM codex_typed
            UNION ALL
            SELECT trace_id, ts, file_id, record, 'human_correction', true FROM codex_typed WHERE out_status = 'rejected'));

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT d.trace_id, 'codex',
       'codex' || coalesce('/' || nullif(regexp_extract(
           arg_min(coalesce(d.q.cwd, regexp_extract(d.cwd_text, '<cwd>([^<]*)</cwd>', 1)), (d.file_id, d.record))
               FILTER (WHERE d.kind IN ('session_meta', 'turn_context', 'header') OR d.cwd_text LIKE '%<cwd>%'),
           '([^/\\]+)[/\\]*$', 1), ''), ''),
       (SELECT lw_clip(coalesce(nullif(regexp_extract(arg_min(p.text, p.ord), '(?s)## My request for Codex:\s*(.*)$', 1), ''),
                                arg_min(p.text, p.ord)), 300)
        FROM codex_prompts p WHERE p.trace_id = d.trace_id),
       NULL, NULL, min(d.file), arg_min(d.line, (d.file_id, d.record)), min(d.ts), max(d.ts),
       nullif(json_merge_patch('{}', json_object(
           'cwd', arg_min(d.q.cwd, (d.file_id, d.record)) FILTER (WHERE d.kind IN ('session_meta', 'turn_context')),
           'cli_version', arg_min(d.q.cli_version, (d.file_id, d.record)) FILTER (WHERE d.kind = 'session_meta'),
           'originator', arg_min(d.q.originator, (d.file_id, d.record)) FILTER (WHERE d.kind = 'session_meta'),
           'git_branch', arg_min(d.q.git->>'branch', (d.file_id, d.record)) FILTER (WHERE d.kind = 'session_meta'),
           'forked_from', arg_min(coalesce(d.q.forked_from_id, d.q.parent_thread_id), (d.file_id, d.record))
                              FILTER (WHERE d.kind = 'session_meta'),
           'models', list_sort(list_distinct(list(d.q.model) FILTER (WHERE d.kind = 'turn_context' AND d.q.model IS NOT NULL))),
           -- where the agent's commands ran: the shell, the sandbox, its network and approval policy, as the
           -- session's first <environment_context> (written in the user role) or turn_context says
           'shell', arg_min(nullif(regexp_extract(d.cwd_text, '<shell>([^<]*)</shell>', 1), ''), (d.file_id, d.record)),
           'sandbox', arg_min(coalesce(nullif(regexp_extract(d.cwd_text, '<sandbox_mode>([^<]*)</sandbox_mode>', 1), ''),
                                       CASE WHEN d.kind = 'turn_context'
                                            THEN coalesce(try_cast(d.cwd_text AS JSON)->'sandbox_policy'->>'type',
                                                          try_cast(d.cwd_text AS JSON)->'sandbox_policy'->>'mode') END),
                              (d.file_id, d.record)),
           'network', arg_min(coalesce(nullif(regexp_extract(d.cwd_text, '<network_access>([^<]*)</network_access>', 1), ''),
                                       CASE WHEN d.kind = 'turn_context'
                                            THEN CASE lw_bool(try_cast(d.cwd_text AS JSON)->'sandbox_policy'->>'network_access')
                                                   WHEN true THEN 'enabled' WHEN false THEN 'restricted' END END),
                              (d.file_id, d.record)),
           'approval', arg_min(coalesce(nullif(regexp_extract(d.cwd_text, '<approval_policy>([^<]*)</approval_policy>', 1), ''),
                                        CASE WHEN d.kind = 'turn_context' THEN try_cast(d.cwd_text AS JSON)->>'approval_policy' END),
                               (d.file_id, d.record))))::VARCHAR,
              '{}')::JSON,
       NULL, arg_min(d.file_id, (d.file_id, d.record)), arg_min(d.record, (d.file_id, d.record))
FROM codex_docs d GROUP BY d.trace_id;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT trace_id, o.seq,
       CASE WHEN part = 'call' AND call_id IS NOT NULL THEN call_id
            WHEN part = 'output' AND call_id IS NOT NULL THEN call_id || CASE WHEN o.is_copy THEN '/correction' ELSE '/output' END
            ELSE 'line-' || file_id || '-' || record END,
       CASE WHEN o.type = 'assistant_message' AND (t.phase = 'final_answer' OR o.seq = o.last_say)
            THEN 'final_answer' ELSE o.type END,
       kind || ':' || coalesce(ptype, kind),
       -- a rejection carries no words of the person's (Codex records none); an interruption or a rollback is
       -- its marker
       CASE WHEN o.type = 'human_correction' THEN ''
            WHEN part = 'call' THEN tool
            WHEN part = 'output' THEN left(out_text, 4000)
            WHEN part IN ('interrupt', 'rollback') THEN coalesce(text, ptype)
            ELSE text END,
       CASE WHEN part = 'output' AND NOT o.is_copy THEN out_status WHEN o.type = 'error' THEN 'error' END,
       CASE WHEN part = 'output' AND NOT o.is_copy THEN out_status = 'ok' WHEN o.type = 'error' THEN false END,
       CASE WHEN part = 'call' THEN tool WHEN part = 'output' THEN called_tool END,
       t.ts,
       CASE WHEN part = 'output' THEN call_id END,
       nullif(json_merge_patch('{}', json_object(
           'arguments', CASE WHEN part = 'call' THEN
                            coalesce(CASE WHEN json_valid(arguments) THEN arguments::JSON END,
                                     to_json(arguments), to_json(input), action) END,
           'exit_code', CASE WHEN part = 'output' THEN exit_code END,
           'interruption', CASE WHEN part = 'interrupt' THEN true END,
           'rollback', CASE WHEN part = 'rollback' THEN true END))::VARCHAR, '{}')::JSON,
       NULL, file_id, record,
       CASE WHEN part IN ('prompt', 'prompt_item') THEN coalesce(prompted_by, 'human')
            WHEN part IN ('interrupt', 'rollback') OR o.type = 'human_correction' THEN 'human'
            WHEN part = 'context' THEN 'harness'
            WHEN part = 'output' AND out_status = 'denied' THEN 'harness'
            -- Codex's error events are the model provider's (stream cut, overloaded, usage limit), but a sandbox's
            WHEN part = 'error' AND coalesce(error_info, '') <> 'sandbox_error' THEN 'provider' END
FROM codex_typed t JOIN codex_seq o USING (trace_id, file_id, record);

-- Every other line (session header, turn context, reasoning, token counts, copies) belongs to its session.
INSERT INTO record_links (file_id, record, trace_id)
SELECT d.file_id, d.record, d.trace_id FROM codex_docs d
WHERE NOT EXISTS (SELECT 1 FROM codex_kept k WHERE k.file_id = d.file_id AND k.record = d.record);

DROP TABLE codex_docs;
DROP TABLE codex_parts;
DROP TABLE codex_outputs;
DROP TABLE codex_kept;
DROP TABLE codex_prompts;
DROP TABLE codex_typed;
DROP TABLE codex_seq;
DROP MACRO codex_injected;
