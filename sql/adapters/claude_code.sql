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
-- roles: user = human (what the person typed, an interruption `[Request interrupted by user…]`, a tool use
--   they rejected: "The user doesn't want to proceed with this tool use…", a plan they kept planning),
--   harness (tool results' wrappers and the CLI's own texts: slash-command wrappers <command-name>, local
--   command output <local-command-stdout>, the caveat and skill expansions (isMeta), IDE notes and system
--   reminders, task notifications, hook output, compaction summaries; a call its permission settings
--   refused: "Permission to use X has been auto-denied", "This command requires approval", "requested
--   permissions … but you haven't granted it yet"), parent (a subagent's prompt, written by the agent that
--   started it); tool results = tool; assistant = agent (a synthetic API error message: provider); system
--   api_error = provider. Read in public session files (../shared/samples/coding-agents/cc-session-share,
--   moredip/session-share) and the texts the CLI writes as its changelog and users' published sessions quote
--   them (anthropics/claude-code publishes no CLI source).
--
-- A session is a trace (trace_id = sessionId): its main file and its subagents' files (records with
-- isSidechain, the parent's sessionId and their own agentId) gather into one trace, in time order.
-- What the person typed is a user_message (actor human; the first on the main chain is the task), a
-- subagent's prompt a user_message of its parent (actor parent); every text the CLI writes in the user's
-- place is an event of its own, as written: a workflow_step of the harness. An interruption
-- (`[Request interrupted by user…]`) is a user_message of the person with metadata.interruption, its text
-- the marker: what they say next is a turn of its own. An assistant record's blocks are assistant_message
-- (text; the last on the main chain is the final_answer) and tool_call (tool_use); tool_result blocks are
-- tool_result events paired with their call by id (`is_error` fails them). A tool use the person rejected
-- ("The user doesn't want to proceed with this tool use…", or a plan they kept planning) is a tool_result
-- with status rejected and a human_correction whose text is the words they gave with it (empty when none).
-- A call the permission settings refused is a tool_result with status denied (actor harness): the harness
-- refused it, the tool did not fail. A system api_error (one per retry the CLI waits for) and a synthetic API
-- error message (the failure it gave up on) are errors of the model provider (actor provider). Thinking
-- blocks, progress, file-history-snapshot, queue-operation, summary and other bookkeeping records are
-- accounted (linked to the session), not events. Claude Code may write a
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

-- The CLI's own texts in the user's place: its wrappers (an IDE note, a system reminder, local command
-- output, the caveat before it), hook output, and the notices it writes after compaction or a cut-off reply.
CREATE OR REPLACE TEMP MACRO cc_cli_text(t) AS
    regexp_matches(coalesce(t, ''), '^\s*(<system-reminder>|<ide_opened_file>|<ide_selection>|<local-command-(stdout|stderr|caveat)>|<bash-(stdout|stderr)>|Caveat: The messages below were generated by the user while running local commands|<user-prompt-submit-hook>|<tick>|<teammate-message|Another Claude session sent a message|This session is being continued from a previous conversation|Your response was cut off because it exceeded the output token limit|Operation stopped by hook)');

-- A call the permission settings refused (in its tool result, with is_error): auto-denied where the CLI
-- cannot ask (dontAsk mode, a background agent), a command or part of one that needs approval, a
-- permission not granted, a path the settings deny. The person was not asked; the tool did not run.
CREATE OR REPLACE TEMP MACRO cc_denied(t) AS
    regexp_matches(coalesce(t, ''), '^\s*(<tool_use_error>\s*)?(Permission to use \S+ has been (auto-)?denied|This (Bash |PowerShell )?command requires approval|This (Bash|PowerShell) command contains multiple operations\. The following parts? requires? approval|Claude requested permissions to .*(but you haven''t granted it yet|which is a sensitive file)|File is in a directory that is denied by your permission settings)');

-- What each block is. Each text of a user record is read as written: what the person typed (its blocks
-- that are no wrapper, read together: an IDE note and a prompt are two blocks), and each text of the CLI's.
CREATE OR REPLACE TEMP TABLE cc_parts AS
WITH user_texts AS (
    SELECT b.file_id, b.record, b.b, b.text,
           CASE WHEN trim(coalesce(b.text, ''), ' ' || chr(9) || chr(10) || chr(13)) = '' THEN NULL
                -- the caveat and a skill's or command's expansion (isMeta), a summary after compaction, a
                -- hook's stop: the CLI's text, not the person's
                WHEN coalesce(d.isMeta, false) OR coalesce(d.isCompactSummary, false)
                     OR coalesce(d.isVisibleInTranscriptOnly, false) THEN 'harness'
                WHEN starts_with(ltrim(b.text), '[Request interrupted by user') THEN 'interrupt'
                WHEN regexp_matches(b.text, '^\s*<(command-name|command-message)>') THEN 'command'
                WHEN starts_with(ltrim(b.text), '<task-notification>') THEN 'notification'
                WHEN cc_cli_text(b.text) THEN 'harness'
                ELSE 'prompt' END AS part
    FROM cc_blocks b JOIN cc_docs d USING (file_id, record)
    WHERE d.type = 'user' AND b.kind = 'text'
),
typed AS (
    SELECT file_id, record, min(b) AS b,
           trim(regexp_replace(string_agg(text, chr(10) ORDER BY b), '<system-reminder>.*?</system-reminder>', '', 'gs'),
                ' ' || chr(9) || chr(10) || chr(13)) AS text
    FROM user_texts WHERE part = 'prompt' GROUP BY file_id, record
)
SELECT file_id, record, b, text, NULL AS block_id, NULL AS tool, NULL::JSON AS input, false AS is_error,
       CASE WHEN text <> '' THEN 'prompt' END AS part
FROM typed
UNION ALL
SELECT file_id, record, b, trim(text, ' ' || chr(9) || chr(10) || chr(13)), NULL, NULL, NULL, false, part
FROM user_texts WHERE part IN ('interrupt', 'command', 'notification', 'harness')
UNION ALL
SELECT b.file_id, b.record, b.b, left(b.text, 4000), b.block_id, NULL, NULL, b.is_error,
       CASE WHEN b.is_error AND (starts_with(b.text, 'The user doesn''t want to proceed with this tool use')
                                 OR starts_with(b.text, 'User chose to stay in plan mode')
                                 OR starts_with(b.text, 'The agent proposed a plan that was rejected by the user')) THEN 'rejected'
            WHEN b.is_error AND cc_denied(b.text) THEN 'denied'
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
                                           CASE WHEN p.part IN ('call', 'result', 'rejected', 'denied') THEN p.part || ':' || p.block_id
                                                ELSE p.part || ':' || coalesce(d.timestamp, '') || ':' || md5(coalesce(p.text, '')) END
                              ORDER BY d.file_id, d.record, p.b) AS copy
    FROM cc_parts p JOIN cc_docs d USING (file_id, record) WHERE p.part IS NOT NULL
) WHERE copy = 1;

-- The person's prompts on the main chain: the first is the task.
CREATE OR REPLACE TEMP TABLE cc_prompts AS
SELECT trace_id, ts, text FROM cc_events WHERE part = 'prompt' AND NOT sidechain AND ts IS NOT NULL;

CREATE OR REPLACE TEMP TABLE cc_typed AS
SELECT e.*,
       CASE WHEN starts_with(e.part, 'other:') THEN 'unknown' ELSE
       CASE e.part WHEN 'prompt' THEN 'user_message' WHEN 'say' THEN 'assistant_message' WHEN 'call' THEN 'tool_call'
                   WHEN 'result' THEN 'tool_result' WHEN 'rejected' THEN 'tool_result' WHEN 'denied' THEN 'tool_result'
                   WHEN 'interrupt' THEN 'user_message'
                   WHEN 'command' THEN 'workflow_step' WHEN 'notification' THEN 'workflow_step'
                   WHEN 'harness' THEN 'workflow_step'
                   ELSE 'error' END END AS type,
       -- a rejection's correction is the words the person gave with it (the CLI's note after them left out)
       CASE WHEN e.part = 'rejected'
            THEN trim(regexp_replace(coalesce(regexp_extract(e.text, '(?s)the user said:\s*(.*)$', 1), ''),
                                     '(?s)\s*Note: The user''s next message may contain a correction or preference\..*$', ''),
                      ' ' || chr(9) || chr(10) || chr(13)) END AS correction
FROM cc_events e;

CREATE OR REPLACE TEMP TABLE cc_calls AS
SELECT trace_id, block_id, tool FROM cc_typed WHERE part = 'call' AND block_id IS NOT NULL;

CREATE OR REPLACE TEMP TABLE cc_ordered AS
SELECT t.*, c.tool AS called_tool,
       row_number() OVER (PARTITION BY t.trace_id ORDER BY t.ts NULLS LAST, t.file_id, t.record, t.b, t.is_rejection_copy) AS seq
FROM (SELECT *, false AS is_rejection_copy FROM cc_typed
      UNION ALL
      -- a rejected tool use is a tool result that did not run, and a correction
      SELECT * REPLACE ('human_correction' AS type), true FROM cc_typed WHERE part = 'rejected') t
LEFT JOIN cc_calls c ON c.trace_id = t.trace_id AND c.block_id = t.block_id AND t.part IN ('result', 'rejected', 'denied');

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
            WHEN part IN ('result', 'rejected', 'denied') THEN block_id || CASE WHEN is_rejection_copy THEN '/correction' ELSE '/result' END
            ELSE coalesce(uuid, 'record-' || file_id || '-' || record) || CASE WHEN b > 1 THEN '#' || b ELSE '' END END,
       CASE WHEN type = 'assistant_message' AND NOT sidechain
                 AND seq = max(seq) FILTER (WHERE type = 'assistant_message' AND NOT sidechain) OVER (PARTITION BY trace_id)
            THEN 'final_answer' ELSE type END,
       CASE WHEN starts_with(part, 'other:') THEN 'assistant:' || substr(part, 7) ELSE
       CASE part WHEN 'prompt' THEN 'user' WHEN 'say' THEN 'assistant:text' WHEN 'call' THEN 'assistant:tool_use'
                 WHEN 'result' THEN 'user:tool_result' WHEN 'denied' THEN 'user:tool_result' WHEN 'interrupt' THEN 'user:interrupt'
                 WHEN 'rejected' THEN CASE WHEN is_rejection_copy THEN 'user:rejected_tool_use' ELSE 'user:tool_result' END
                 WHEN 'command' THEN 'user:command' WHEN 'notification' THEN 'user:task-notification'
                 WHEN 'harness' THEN 'user:harness'
                 WHEN 'system_error' THEN 'system:api_error' ELSE 'assistant:api_error' END END,
       CASE WHEN type = 'human_correction' THEN correction WHEN part = 'call' THEN tool ELSE text END,
       CASE WHEN part = 'result' THEN CASE WHEN is_error THEN 'error' ELSE 'ok' END
            WHEN part = 'rejected' AND NOT is_rejection_copy THEN 'rejected'
            WHEN part = 'denied' THEN 'denied'
            WHEN type = 'error' THEN 'error' END,
       CASE WHEN part = 'result' THEN NOT is_error WHEN part = 'rejected' AND NOT is_rejection_copy THEN false
            WHEN part = 'denied' THEN false
            WHEN type = 'error' THEN false END,
       CASE WHEN part = 'call' THEN tool WHEN part IN ('result', 'rejected', 'denied') THEN called_tool END,
       ts,
       CASE WHEN part IN ('result', 'rejected', 'denied') THEN block_id ELSE parentUuid END,
       -- null members dropped
       nullif(json_merge_patch('{}', json_object('input', CASE WHEN part = 'call' THEN input END,
                                                 'retry', CASE WHEN part = 'system_error' THEN nullif(input::VARCHAR, '{}')::JSON END,
                                                 'agent_id', agentId,
                                                 'interruption', CASE WHEN part = 'interrupt' THEN true END))::VARCHAR,
              '{}')::JSON,
       NULL, file_id, record,
       CASE WHEN part IN ('harness', 'command', 'notification', 'denied') THEN 'harness'
            WHEN part = 'prompt' AND sidechain THEN 'parent'  -- a subagent's prompt is the agent's that started it
            WHEN part IN ('prompt', 'interrupt') OR type = 'human_correction' THEN 'human'
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
DROP MACRO cc_cli_text;
DROP MACRO cc_denied;
