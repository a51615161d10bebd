-- format: claude_code
-- title: Claude Code session JSONL (~/.claude/projects/<project>/<session>.jsonl, subagents in <session>/subagents/)
-- match: CASE WHEN list_has_any(json_keys(doc), ['sessionId', 'leafUuid', 'isSidechain', 'messageId'])
--   THEN (json_exists(doc, '$.sessionId') AND json_exists(doc, '$.type')
--         AND (json_exists(doc, '$.uuid') OR doc->>'type' = 'queue-operation'))
--     OR (doc->>'type' = 'summary' AND json_exists(doc, '$.leafUuid'))
--     OR (doc->>'type' = 'file-history-snapshot' AND json_exists(doc, '$.snapshot'))
--   ELSE false END
-- priority: 320
-- gathers: yes
--
-- A session is a trace (trace_id = sessionId): its main file and its subagents' files (records with
-- isSidechain, the parent's sessionId and their own agentId) gather into one trace, in time order.
-- User text is a user_message (the first on the main chain is the task); an assistant record's blocks are
-- assistant_message (text; the last on the main chain is the final_answer) and tool_call (tool_use);
-- tool_result blocks are tool_result events paired with their call by id (`is_error` fails them). A user
-- interruption (`[Request interrupted by user…]`) and a rejected tool use ("The user doesn't want to
-- proceed with this tool use…", or a plan the user kept planning) are human corrections, with the user's
-- next message (or the reason given) as their text. A system api_error (one per retry the CLI waits for)
-- and a synthetic API error message (the failure it gave up on) are errors of the model provider (actor
-- provider). Text the CLI writes in the user's place (a summary after compaction, a hook's stop) is a
-- workflow_step of the harness. Thinking blocks, progress, file-history-snapshot, queue-operation, summary and other
-- bookkeeping records are accounted (linked to the session), not events. Claude Code may write a
-- session's history twice (after a resume, with new uuids): a repeated message, tool call or tool
-- result is linked, not repeated. Tool output is kept up to 4,000 characters.

CREATE OR REPLACE TEMP TABLE cc_docs AS
SELECT file_id, file, line, record, doc, d.*,
       lw_utc(d.timestamp) AS ts,
       coalesce(nullif(d.sessionId, ''),
                mode(nullif(d.sessionId, '')) OVER (PARTITION BY file_id),
                nullif(regexp_extract(file, '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$', 1), ''),
                'claude-' || substr(md5(file), 1, 16)) AS trace_id
FROM (SELECT *, from_json(doc, '{"type": "VARCHAR", "subtype": "VARCHAR", "uuid": "VARCHAR", "parentUuid": "VARCHAR",
                                 "sessionId": "VARCHAR", "agentId": "VARCHAR", "isSidechain": "BOOLEAN",
                                 "isMeta": "BOOLEAN", "isCompactSummary": "BOOLEAN",
                                 "isVisibleInTranscriptOnly": "BOOLEAN", "timestamp": "VARCHAR", "cwd": "VARCHAR", "gitBranch": "VARCHAR",
                                 "version": "VARCHAR", "requestId": "VARCHAR", "isApiErrorMessage": "BOOLEAN",
                                 "message": {"role": "VARCHAR", "id": "VARCHAR", "model": "VARCHAR", "content": "JSON"}}') AS d
      FROM records_in);

-- Every content block that may become an event, with its place (record, block index).
CREATE OR REPLACE TEMP TABLE cc_blocks AS
WITH listed AS (
    SELECT file_id, record, type, generate_subscripts(items, 1) AS b, unnest(items) AS block
    FROM (SELECT file_id, record, type, json_extract(message.content, '$[*]') AS items FROM cc_docs
          WHERE type IN ('user', 'assistant') AND json_type(message.content) = 'ARRAY')
)
SELECT file_id, record, b, block->>'type' AS kind,
       CASE block->>'type' WHEN 'text' THEN block->>'text'
            WHEN 'tool_result' THEN coalesce(lw_content_text(block->'content'),
                                             CASE WHEN json_type(block, '$.content') = 'VARCHAR' THEN block->>'content' END)
       END AS text,
       coalesce(block->>'id', block->>'tool_use_id') AS block_id, block->>'name' AS tool, block->'input' AS input,
       coalesce(lw_bool(block->>'is_error'), false) AS is_error
FROM listed WHERE type = 'assistant' OR block->>'type' IN ('tool_result', 'text')
UNION ALL
SELECT file_id, record, 1, 'text', message.content->>'$', NULL, NULL, NULL, false
FROM cc_docs WHERE type = 'user' AND json_type(message.content) = 'VARCHAR';

-- What each block is. A user record's text blocks are read together (an IDE note and a prompt are two blocks).
CREATE OR REPLACE TEMP TABLE cc_parts AS
WITH user_text AS (
    SELECT file_id, record, min(b) AS b,
           trim(regexp_replace(string_agg(text, chr(10) ORDER BY b),
                               '<(ide_opened_file|ide_selection|system-reminder)>.*?</(ide_opened_file|ide_selection|system-reminder)>', '', 'gs'),
                ' ' || chr(9) || chr(10) || chr(13)) AS text
    FROM cc_blocks b JOIN cc_docs d USING (file_id, record)
    WHERE d.type = 'user' AND b.kind = 'text' GROUP BY file_id, record
)
SELECT u.file_id, u.record, u.b, u.text, NULL AS block_id, NULL AS tool, NULL::JSON AS input, false AS is_error,
       CASE WHEN d.isMeta THEN NULL
            WHEN starts_with(u.text, '[Request interrupted by user') THEN 'interrupt'
            WHEN regexp_matches(u.text, '^<(command-name|command-message)>') THEN 'command'
            WHEN regexp_matches(u.text, '^(<local-command-|<bash-stdout>|<bash-stderr>|Caveat: The messages below were generated)')
                 THEN NULL
            WHEN starts_with(u.text, '<task-notification>') THEN 'notification'
            WHEN u.text = '' THEN NULL
            -- a summary after compaction, a hook's stop, a reminder: the CLI's text, not the person's
            WHEN coalesce(d.isCompactSummary, false) OR coalesce(d.isVisibleInTranscriptOnly, false)
                 OR lw_harness_text(u.text) THEN 'harness'
            ELSE 'prompt' END AS part
FROM user_text u JOIN cc_docs d USING (file_id, record)
UNION ALL
SELECT b.file_id, b.record, b.b, left(b.text, 4000), b.block_id, NULL, NULL, b.is_error,
       CASE WHEN b.is_error AND (starts_with(b.text, 'The user doesn''t want to proceed with this tool use')
                                 OR starts_with(b.text, 'User chose to stay in plan mode')) THEN 'rejected'
            ELSE 'result' END
FROM cc_blocks b JOIN cc_docs d USING (file_id, record) WHERE d.type = 'user' AND b.kind = 'tool_result'
UNION ALL
SELECT b.file_id, b.record, b.b, b.text, b.block_id, b.tool, b.input, false,
       CASE WHEN d.message.model = '<synthetic>' AND coalesce(d.isApiErrorMessage, false) THEN 'api_error_message'
            WHEN d.message.model = '<synthetic>' THEN NULL
            WHEN b.kind = 'text' AND trim(coalesce(b.text, '')) <> '' THEN 'say'
            WHEN b.kind = 'tool_use' THEN 'call'
            -- a block of a kind this adapter does not know yet is kept, as an event of type unknown
            WHEN b.kind NOT IN ('text', 'thinking', 'redacted_thinking') THEN 'other:' || b.kind END
FROM cc_blocks b JOIN cc_docs d USING (file_id, record) WHERE d.type = 'assistant'
UNION ALL
SELECT file_id, record, 1,
       concat_ws(': ', 'API error', coalesce(doc->'cause'->>'code', doc->'error'->'cause'->>'code', doc->'error'->>'message',
                                             doc->>'content')),
       NULL, NULL,
       json_merge_patch('{}', json_object('retry_attempt', doc->'retryAttempt', 'max_retries', doc->'maxRetries')),
       true, 'system_error'
FROM cc_docs WHERE type = 'system' AND (subtype = 'api_error' OR doc->>'level' = 'error');

-- A part seen before (the same history written again after a resume, with new uuids) is not repeated:
-- messages by their text and time, tool calls and results by their ids.
CREATE OR REPLACE TEMP TABLE cc_events AS
SELECT * EXCLUDE (copy) FROM (
    SELECT p.*, d.trace_id, d.ts, d.uuid, d.parentUuid, d.agentId, coalesce(d.isSidechain, false) AS sidechain,
           row_number() OVER (PARTITION BY d.trace_id,
                                           CASE WHEN p.part IN ('call', 'result', 'rejected') THEN p.part || ':' || p.block_id
                                                ELSE p.part || ':' || coalesce(d.timestamp, '') || ':' || md5(coalesce(p.text, '')) END
                              ORDER BY d.file_id, d.record, p.b) AS copy
    FROM cc_parts p JOIN cc_docs d USING (file_id, record) WHERE p.part IS NOT NULL
) WHERE copy = 1;

-- A correction's text: the reason the user gave, else what the user said next on the main chain.
CREATE OR REPLACE TEMP TABLE cc_prompts AS
SELECT trace_id, ts, text FROM cc_events WHERE part = 'prompt' AND NOT sidechain AND ts IS NOT NULL;

CREATE OR REPLACE TEMP TABLE cc_typed AS
SELECT e.*,
       CASE WHEN starts_with(e.part, 'other:') THEN 'unknown' ELSE
       CASE e.part WHEN 'prompt' THEN 'user_message' WHEN 'say' THEN 'assistant_message' WHEN 'call' THEN 'tool_call'
                   WHEN 'result' THEN 'tool_result' WHEN 'rejected' THEN 'tool_result' WHEN 'interrupt' THEN 'human_correction'
                   WHEN 'command' THEN 'workflow_step' WHEN 'notification' THEN 'workflow_step'
                   WHEN 'harness' THEN 'workflow_step'
                   ELSE 'error' END END AS type,
       CASE WHEN e.part IN ('interrupt', 'rejected')
            THEN coalesce(nullif(trim(regexp_extract(e.text, 'the user said:\s*(.*)$', 1)), ''), n.text, e.text) END AS correction
FROM cc_events e ASOF LEFT JOIN cc_prompts n ON n.trace_id = e.trace_id AND n.ts > e.ts;

CREATE OR REPLACE TEMP TABLE cc_calls AS
SELECT trace_id, block_id, tool FROM cc_typed WHERE part = 'call' AND block_id IS NOT NULL;

CREATE OR REPLACE TEMP TABLE cc_ordered AS
SELECT t.*, c.tool AS called_tool,
       row_number() OVER (PARTITION BY t.trace_id ORDER BY t.ts NULLS LAST, t.file_id, t.record, t.b, t.is_rejection_copy) AS seq
FROM (SELECT *, false AS is_rejection_copy FROM cc_typed
      UNION ALL
      -- a rejected tool use is a tool result that did not run, and a correction
      SELECT * REPLACE ('human_correction' AS type), true FROM cc_typed WHERE part = 'rejected') t
LEFT JOIN cc_calls c ON c.trace_id = t.trace_id AND c.block_id = t.block_id AND t.part IN ('result', 'rejected');

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT d.trace_id, 'claude_code',
       'claude-code' || coalesce('/' || nullif(regexp_extract(arg_min(d.cwd, (d.isSidechain, d.file_id, d.record)) FILTER (WHERE d.cwd IS NOT NULL),
                                                              '([^/\\]+)[/\\]*$', 1), ''), ''),
       (SELECT lw_clip(arg_min(p.text, p.ts), 300) FROM cc_prompts p WHERE p.trace_id = d.trace_id),
       NULL, NULL,
       arg_min(d.file, (coalesce(d.isSidechain, false), d.file_id, d.record)),
       arg_min(d.line, (coalesce(d.isSidechain, false), d.file_id, d.record)),
       min(d.ts), max(d.ts),
       json_merge_patch('{}', json_object('cwd', arg_min(d.cwd, (coalesce(d.isSidechain, false), d.file_id, d.record)) FILTER (WHERE d.cwd IS NOT NULL),
                   'git_branch', arg_min(d.gitBranch, (coalesce(d.isSidechain, false), d.file_id, d.record)) FILTER (WHERE d.gitBranch <> ''),
                   'versions', list_sort(list_distinct(list(d.version) FILTER (WHERE d.version IS NOT NULL))),
                   'models', list_sort(list_distinct(list(d.message.model) FILTER (WHERE d.message.model IS NOT NULL AND d.message.model <> '<synthetic>'))),
                   'subagents', list_sort(list_distinct(list(d.agentId) FILTER (WHERE d.agentId IS NOT NULL))),
                   'title', arg_max(doc->>'summary', d.record) FILTER (WHERE d.type = 'summary'))),
       NULL,
       arg_min(d.file_id, (coalesce(d.isSidechain, false), d.file_id, d.record)),
       arg_min(d.record, (coalesce(d.isSidechain, false), d.file_id, d.record))
FROM cc_docs d GROUP BY d.trace_id;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT trace_id, seq,
       CASE WHEN part = 'call' THEN block_id
            WHEN part IN ('result', 'rejected') THEN block_id || CASE WHEN is_rejection_copy THEN '/correction' ELSE '/result' END
            ELSE coalesce(uuid, 'record-' || file_id || '-' || record) || CASE WHEN b > 1 THEN '#' || b ELSE '' END END,
       CASE WHEN type = 'assistant_message' AND NOT sidechain
                 AND seq = max(seq) FILTER (WHERE type = 'assistant_message' AND NOT sidechain) OVER (PARTITION BY trace_id)
            THEN 'final_answer' ELSE type END,
       CASE WHEN starts_with(part, 'other:') THEN 'assistant:' || substr(part, 7) ELSE
       CASE part WHEN 'prompt' THEN 'user' WHEN 'say' THEN 'assistant:text' WHEN 'call' THEN 'assistant:tool_use'
                 WHEN 'result' THEN 'user:tool_result' WHEN 'interrupt' THEN 'user:interrupt'
                 WHEN 'rejected' THEN CASE WHEN is_rejection_copy THEN 'user:rejected_tool_use' ELSE 'user:tool_result' END
                 WHEN 'command' THEN 'user:command' WHEN 'notification' THEN 'user:task-notification'
                 WHEN 'harness' THEN 'user:harness'
                 WHEN 'system_error' THEN 'system:api_error' ELSE 'assistant:api_error' END END,
       CASE WHEN type = 'human_correction' THEN correction WHEN part = 'call' THEN tool ELSE text END,
       CASE WHEN part = 'result' THEN CASE WHEN is_error THEN 'error' ELSE 'ok' END
            WHEN part = 'rejected' AND NOT is_rejection_copy THEN 'rejected'
            WHEN type = 'error' THEN 'error' END,
       CASE WHEN part = 'result' THEN NOT is_error WHEN part = 'rejected' AND NOT is_rejection_copy THEN false
            WHEN type = 'error' THEN false END,
       CASE WHEN part = 'call' THEN tool WHEN part IN ('result', 'rejected') THEN called_tool END,
       ts,
       CASE WHEN part IN ('result', 'rejected') THEN block_id ELSE parentUuid END,
       -- null members dropped; a correction keeps what the user interrupted or rejected with
       nullif(json_merge_patch('{}', json_object('input', CASE WHEN part = 'call' THEN input END,
                                                 'retry', CASE WHEN part = 'system_error' THEN nullif(input::VARCHAR, '{}')::JSON END,
                                                 'agent_id', agentId,
                                                 'said', CASE WHEN type = 'human_correction' THEN text END))::VARCHAR,
              '{}')::JSON,
       NULL, file_id, record,
       CASE WHEN part = 'harness' THEN 'harness'
            WHEN part = 'prompt' AND sidechain THEN 'agent'  -- a subagent's prompt is its parent agent's
            WHEN part IN ('system_error', 'api_error_message') THEN 'provider' END
FROM cc_ordered;

-- Every other record (bookkeeping, thinking, repeats) belongs to its session.
INSERT INTO record_links (file_id, record, trace_id)
SELECT d.file_id, d.record, d.trace_id FROM cc_docs d
WHERE NOT EXISTS (SELECT 1 FROM cc_events e WHERE e.file_id = d.file_id AND e.record = d.record);

DROP TABLE cc_docs;
DROP TABLE cc_blocks;
DROP TABLE cc_parts;
DROP TABLE cc_events;
DROP TABLE cc_prompts;
DROP TABLE cc_typed;
DROP TABLE cc_calls;
DROP TABLE cc_ordered;
