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
--
-- A session is a trace (trace_id = the session_meta id, else the id in the file name). Lines are
-- {timestamp, type, payload}; the earlier bare form (a header {id, timestamp, instructions}, then response
-- items with no envelope, and {"record_type": "state"} lines) is read too.
-- User text is a user_message (the first is the task; context Codex injects, such as <environment_context>
-- or AGENTS.md, is not), assistant text an assistant_message (the last, or one in the final_answer phase,
-- the final_answer). Codex writes user and assistant text twice (a response_item and an event_msg): the
-- event_msg user_message and the response_item assistant message are kept, the copies linked.
-- function_call, custom_tool_call, local_shell_call and web_search_call are tool_call events, their outputs
-- tool_result events paired by call_id. Failure is only in the output text: a non-zero exit code (the JSON
-- of 0.3x, `Exit code: N`, `Process exited with code N`), `failed in sandbox …`, a timeout, an apply_patch
-- error. `exec command rejected by user` and `patch rejected by user` are human corrections, as are an
-- interrupted turn (turn_aborted), a rollback and an undo; the user's next message is the correction's text.
-- Error events (a stream cut, an overloaded model, a usage limit) are the model provider's (actor provider).
-- Reasoning (encrypted), token counts, turn markers and other bookkeeping are accounted, not events; a
-- response item of a type not named here is an event of type unknown.
-- Tool output is kept up to 4,000 characters.

CREATE OR REPLACE TEMP TABLE codex_docs AS
SELECT file_id, file, line, record, doc, kind, p, lw_utc(doc->>'timestamp') AS ts,
       row_number() OVER (ORDER BY file_id, record) AS ord,  -- file order across the files of a session
       coalesce(first_value(CASE WHEN kind = 'session_meta' THEN p->>'id' WHEN kind = 'header' THEN doc->>'id' END IGNORE NULLS)
                    OVER (PARTITION BY file_id ORDER BY record ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
                nullif(regexp_extract(file, '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$', 1), ''),
                'codex-' || substr(md5(file), 1, 16)) AS trace_id
FROM (
    SELECT *,
           CASE WHEN json_exists(doc, '$.payload') THEN doc->>'type'
                WHEN json_exists(doc, '$.record_type') THEN 'state'
                WHEN json_exists(doc, '$.instructions') AND json_exists(doc, '$.id') THEN 'header'
                ELSE 'response_item' END AS kind,          -- a bare item of the early form
           CASE WHEN json_exists(doc, '$.payload') THEN doc->'payload' ELSE doc END AS p
    FROM records_in
);

-- Text Codex puts in the user's place that the user did not type.
CREATE OR REPLACE TEMP MACRO codex_injected(t) AS
    regexp_matches(ltrim(coalesce(t, '')), '^(<environment_context>|<user_instructions>|<INSTRUCTIONS>|# AGENTS\.md|<permissions|<subagent_notification>|<collaboration_mode>|<turn_aborted>|<user_shell_command>|<user_action>|<skill>|<task-notification>|<codex_internal_context|<recommended_plugins>)');

-- Each line's part: what it is, its text, its call id and tool.
CREATE OR REPLACE TEMP TABLE codex_parts AS
SELECT d.*, p->>'type' AS ptype,
       CASE
         WHEN kind = 'event_msg' AND p->>'type' = 'user_message' AND NOT codex_injected(p->>'message') THEN 'prompt'
         WHEN kind = 'response_item' AND p->>'type' = 'message' AND p->>'role' = 'user'
              AND NOT codex_injected(lw_content_text(p->'content')) THEN 'prompt_item'
         WHEN kind = 'response_item' AND p->>'type' = 'message' AND p->>'role' = 'assistant' THEN 'say'
         WHEN kind = 'event_msg' AND p->>'type' = 'agent_message' THEN 'say_event'
         WHEN kind = 'response_item' AND p->>'type' IN ('function_call', 'custom_tool_call', 'local_shell_call', 'web_search_call')
              THEN 'call'
         WHEN kind = 'response_item' AND p->>'type' IN ('function_call_output', 'custom_tool_call_output') THEN 'output'
         WHEN kind = 'event_msg' AND p->>'type' = 'turn_aborted' AND coalesce(p->>'reason', 'interrupted') = 'interrupted'
              THEN 'interrupt'
         WHEN kind = 'event_msg' AND p->>'type' IN ('thread_rolled_back', 'undo_completed') THEN 'rollback'
         WHEN kind = 'event_msg' AND p->>'type' IN ('error', 'stream_error') THEN 'error'
         WHEN kind = 'event_msg' AND p->>'type' = 'turn_aborted' THEN 'aborted'
         WHEN kind = 'compacted' THEN 'compacted'
         -- a response item of a type this adapter does not know yet is kept, as an event of type unknown
         WHEN kind = 'response_item' AND p->>'type' NOT IN ('message', 'reasoning', 'ghost_snapshot', 'compaction')
              THEN 'other'
       END AS part,
       CASE WHEN kind = 'event_msg' THEN coalesce(p->>'message', p->>'reason')
            WHEN p->>'type' = 'message' THEN lw_content_text(p->'content')
            WHEN kind = 'compacted' THEN p->>'message' END AS text,
       p->>'call_id' AS call_id,
       CASE p->>'type' WHEN 'local_shell_call' THEN 'local_shell' WHEN 'web_search_call' THEN 'web_search' ELSE p->>'name' END AS tool
FROM codex_docs d;

-- Tool outputs: the text, and whether it failed. A 0.3x shell output is JSON {"output", "metadata": {"exit_code"}}.
CREATE OR REPLACE TEMP TABLE codex_outputs AS
SELECT file_id, record, out_text,
       CASE
         WHEN exit_code IS NOT NULL THEN CASE WHEN exit_code = 0 THEN 'ok' ELSE 'error' END
         WHEN success_flag IS NOT NULL THEN CASE WHEN success_flag THEN 'ok' ELSE 'error' END
         WHEN regexp_matches(out_text, '^\s*(exec command|patch) rejected by user') THEN 'rejected'
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
           CASE WHEN json_type(p, '$.output') = 'VARCHAR' THEN
                     CASE WHEN json_valid(p->>'output') AND json_type((p->>'output')::JSON, '$.output') = 'VARCHAR'
                          THEN (p->>'output')::JSON->>'output' ELSE p->>'output' END
                WHEN json_type(p, '$.output') = 'ARRAY' THEN lw_content_text(p->'output')
                ELSE coalesce(p->'output'->>'content', p->>'output') END AS out_text,
           CASE WHEN json_type(p, '$.output') = 'VARCHAR' AND json_valid(p->>'output')
                THEN try_cast((p->>'output')::JSON->'metadata'->>'exit_code' AS INTEGER) END AS exit_code,
           CASE WHEN json_type(p, '$.output') = 'OBJECT' THEN lw_bool(p->'output'->>'success') END AS success_flag
    FROM codex_parts WHERE part = 'output'
);

-- The kept parts, once each: user text from the event_msg copy (or the response item when the file has
-- no such copy), assistant text from the response item (or the event_msg), every call and output once.
CREATE OR REPLACE TEMP TABLE codex_kept AS
WITH has AS (
    SELECT trace_id, bool_or(part = 'prompt') AS prompts, bool_or(part = 'say') AS says
    FROM codex_parts GROUP BY trace_id
)
SELECT * EXCLUDE (copy) FROM (
    SELECT c.*, o.out_text, o.status AS out_status, o.exit_code,
           row_number() OVER (PARTITION BY c.trace_id,
                                           CASE WHEN c.part IN ('call', 'output') AND c.call_id IS NOT NULL THEN c.part || ':' || c.call_id
                                                ELSE c.part || ':' || coalesce(c.doc->>'timestamp', '') || ':' || md5(coalesce(c.text, c.p::VARCHAR)) END
                              ORDER BY c.file_id, c.record) AS copy
    FROM codex_parts c JOIN has h USING (trace_id)
    LEFT JOIN codex_outputs o USING (file_id, record)
    WHERE c.part IS NOT NULL
      AND NOT (c.part = 'prompt_item' AND h.prompts)
      AND NOT (c.part = 'say_event' AND h.says)
) WHERE copy = 1;

CREATE OR REPLACE TEMP TABLE codex_prompts AS
SELECT trace_id, ord, text FROM codex_kept WHERE part IN ('prompt', 'prompt_item');

CREATE OR REPLACE TEMP TABLE codex_typed AS
SELECT k.*, c.tool AS called_tool,
       CASE k.part WHEN 'prompt' THEN 'user_message' WHEN 'prompt_item' THEN 'user_message'
                   WHEN 'say' THEN 'assistant_message' WHEN 'say_event' THEN 'assistant_message'
                   WHEN 'call' THEN 'tool_call' WHEN 'output' THEN 'tool_result'
                   WHEN 'interrupt' THEN 'human_correction' WHEN 'rollback' THEN 'human_correction'
                   WHEN 'error' THEN 'error' WHEN 'other' THEN 'unknown' ELSE 'workflow_step' END AS type,
       n.text AS next_prompt
FROM codex_kept k
LEFT JOIN (SELECT trace_id, call_id, any_value(tool) AS tool FROM codex_kept WHERE part = 'call' AND call_id IS NOT NULL
           GROUP BY ALL) c ON c.trace_id = k.trace_id AND c.call_id = k.call_id AND k.part = 'output'
ASOF LEFT JOIN codex_prompts n ON n.trace_id = k.trace_id AND n.ord > k.ord;

CREATE OR REPLACE TEMP TABLE codex_ordered AS
SELECT *, row_number() OVER (PARTITION BY trace_id ORDER BY ts NULLS LAST, file_id, record, is_copy) AS seq
FROM (SELECT *, false AS is_copy FROM codex_typed
      UNION ALL
      -- a command or patch the user rejected did not run, and is a correction
      SELECT * REPLACE ('human_correction' AS type), true FROM codex_typed WHERE out_status = 'rejected');

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT d.trace_id, 'codex',
       'codex' || coalesce('/' || nullif(regexp_extract(
           arg_min(coalesce(d.p->>'cwd', regexp_extract(d.p::VARCHAR, '<cwd>([^<]*)</cwd>', 1)), (d.file_id, d.record))
               FILTER (WHERE d.kind IN ('session_meta', 'turn_context', 'header') OR d.p::VARCHAR LIKE '%<cwd>%'),
           '([^/\\]+)[/\\]*$', 1), ''), ''),
       (SELECT lw_clip(coalesce(nullif(regexp_extract(arg_min(p.text, p.ord), '(?s)## My request for Codex:\s*(.*)$', 1), ''),
                                arg_min(p.text, p.ord)), 300)
        FROM codex_prompts p WHERE p.trace_id = d.trace_id),
       NULL, NULL, min(d.file), arg_min(d.line, (d.file_id, d.record)), min(d.ts), max(d.ts),
       nullif(json_merge_patch('{}', json_object(
           'cwd', arg_min(d.p->>'cwd', (d.file_id, d.record)) FILTER (WHERE d.kind IN ('session_meta', 'turn_context')),
           'cli_version', arg_min(d.p->>'cli_version', (d.file_id, d.record)) FILTER (WHERE d.kind = 'session_meta'),
           'originator', arg_min(d.p->>'originator', (d.file_id, d.record)) FILTER (WHERE d.kind = 'session_meta'),
           'git_branch', arg_min(d.p->'git'->>'branch', (d.file_id, d.record)) FILTER (WHERE d.kind = 'session_meta'),
           'forked_from', arg_min(coalesce(d.p->>'forked_from_id', d.p->>'parent_thread_id'), (d.file_id, d.record))
                              FILTER (WHERE d.kind = 'session_meta'),
           'models', list_sort(list_distinct(list(d.p->>'model') FILTER (WHERE d.kind = 'turn_context' AND d.p->>'model' IS NOT NULL)))))::VARCHAR,
              '{}')::JSON,
       NULL, arg_min(d.file_id, (d.file_id, d.record)), arg_min(d.record, (d.file_id, d.record))
FROM codex_docs d GROUP BY d.trace_id;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT trace_id, seq,
       CASE WHEN part = 'call' AND call_id IS NOT NULL THEN call_id
            WHEN part = 'output' AND call_id IS NOT NULL THEN call_id || CASE WHEN is_copy THEN '/correction' ELSE '/output' END
            ELSE 'line-' || file_id || '-' || record END,
       CASE WHEN type = 'assistant_message'
                 AND (p->>'phase' = 'final_answer'
                      OR seq = max(seq) FILTER (WHERE type = 'assistant_message') OVER (PARTITION BY trace_id))
            THEN 'final_answer' ELSE type END,
       kind || ':' || coalesce(ptype, kind),
       CASE WHEN type = 'human_correction' THEN coalesce(next_prompt, out_text, text, ptype)
            WHEN part = 'call' THEN tool
            WHEN part = 'output' THEN left(out_text, 4000)
            ELSE text END,
       CASE WHEN part = 'output' AND NOT is_copy THEN out_status WHEN type = 'error' THEN 'error' END,
       CASE WHEN part = 'output' AND NOT is_copy THEN out_status = 'ok' WHEN type = 'error' THEN false END,
       CASE WHEN part = 'call' THEN tool WHEN part = 'output' THEN called_tool END,
       ts,
       CASE WHEN part = 'output' THEN call_id END,
       nullif(json_merge_patch('{}', json_object(
           'arguments', CASE WHEN part = 'call' THEN
                            coalesce(CASE WHEN json_valid(p->>'arguments') THEN (p->>'arguments')::JSON END,
                                     to_json(p->>'arguments'), to_json(p->>'input'), p->'action') END,
           'exit_code', CASE WHEN part = 'output' THEN exit_code END,
           'said', CASE WHEN type = 'human_correction' THEN coalesce(out_text, p->>'reason', ptype) END))::VARCHAR, '{}')::JSON,
       NULL, file_id, record,
       -- Codex's error events are the model provider's (stream cut, overloaded, usage limit), but a sandbox's
       CASE WHEN part = 'error' AND coalesce(p->>'codex_error_info', '') <> 'sandbox_error' THEN 'provider' END
FROM codex_ordered;

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
DROP TABLE codex_ordered;
DROP MACRO codex_injected;
