-- format: swe_agent0
-- title: SWE-agent 0.x trajectories (`.traj`: history, trajectory, info), and the multi-agent systems built on it
-- match: CASE WHEN list_has_all(json_keys(doc), ['history', 'trajectory'])
--   THEN json_type(doc, '$.history') = 'ARRAY' AND json_type(doc, '$.trajectory') = 'ARRAY'
--        AND NOT json_exists(doc, '$.replay_config')
--        AND len(json_extract(doc, '$.history[*].message_type')) = 0
--   ELSE false END
-- priority: 255
-- whole: true
-- roles: no person takes part; user = harness. SWE-agent 0.x (SWE-agent/SWE-agent, tags v0.1.0-v0.7.0,
--   sweagent/agent/agents.py: Agent.setup_attempt, forward_model, forward, call_subroutine, save_trajectory;
--   config/default.yaml for the templates; sweagent/environment/swe_env.py for exit_status and the time-out
--   notice) writes each history entry with `role` and `agent` (the sub-agent that owns it, "primary" for the
--   main one). system = context (the system template). user = harness: the instance template (the task
--   statement), the next-step template around each command's output (the observation, an answer of the
--   shell: tool), the demonstrations (`is_demo`: not part of the run, skipped); in a sub-agent, its first
--   user entry holds its parent's arguments = parent. assistant = agent: its `thought`, and its `action`
--   (the command the environment runs), except the exit actions the run loop writes itself when it stops
--   the agent (exit_cost, exit_context, exit_format, exit_api, exit_error: "Exit due to …") = harness.
--
-- One .traj file is one run, one trace (its id a hash of its content: SWE-agent names the file after the
-- instance, which metadata.instance_id keeps; the same instance run twice is two runs). SWE-agent 1.x
-- files (a `replay_config`, history entries with `message_type`) are not matched: `chat` reads them.
-- `history` is read, in order, leaving out the demonstrations: each entry of the assistant role is the
-- agent's assistant_message (its thought) and, when it has an action, a tool_call of `bash` (the
-- environment runs every action in its shell, SWE-agent's own commands included: open, edit,
-- search_dir, submit) whose command is the action; the user entry of the same agent after it is the
-- tool_result, its text out of the template's footer (`(Open file: …)`, `(Current directory: …)`,
-- `bash-$`). SWE-agent records no exit code: a result failed when the environment's text says so (the
-- edit command's syntax check refused the edit, "EXECUTION TIMED OUT", an interface command's `Usage:` or
-- `Error:` or "File … not found", a shell's "command not found" or "No such file or directory", a Python
-- traceback). The last action (`submit`) gets no user entry: its output is the last `trajectory` step's
-- observation (`trajectory` otherwise repeats the history and is not read again). The last assistant text
-- is the final_answer. `info.exit_status` (submitted, "submitted (exit_cost)", exit_format, early_exit,
-- skipped…) is the outcome; `info` (the submission, model_stats) is kept in traces.extra, the system
-- templates too. A history entry that is not an object or has no role rejects the run, with its position.

CREATE OR REPLACE TEMP TABLE swe0_docs AS
SELECT file_id, file, line, record, doc, 'swe-agent-' || substr(md5(doc::VARCHAR), 1, 16) AS trace_id,
       nullif(regexp_extract(file, '([^/\\]+)\.traj$', 1), '') AS instance
FROM records_in;

-- Every history entry, parsed once.
CREATE OR REPLACE TEMP TABLE swe0_entries AS
SELECT file_id, record, pos, json_type(h) AS t_h, lower(trim(h->>'role')) AS role,
       lw_content_text(h->'content') AS text, nullif(trim(h->>'agent'), '') AS agent,
       nullif(trim(h->>'thought', e' \n\r\t'), '') AS thought, nullif(trim(h->>'action', e' \n\r\t'), '') AS action,
       coalesce(TRY_CAST(h->>'is_demo' AS BOOLEAN), false) AS is_demo
FROM (SELECT file_id, record, generate_subscripts(items, 1) AS pos, unnest(items) AS h
      FROM (SELECT file_id, record, json_extract(doc, '$.history[*]') AS items FROM swe0_docs));

-- The first thing wrong with a run: it is rejected whole, with the entry's position.
CREATE OR REPLACE TEMP TABLE swe0_problems AS
SELECT file_id, record, arg_min('history[' || (pos - 1) || ']: ' || problem, pos) AS problem
FROM (SELECT *, CASE WHEN t_h <> 'OBJECT' THEN 'not an object'
                     WHEN coalesce(role, '') = '' THEN 'missing required field ''role''' END AS problem
      FROM swe0_entries)
WHERE problem IS NOT NULL GROUP BY file_id, record;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem FROM swe0_problems p JOIN swe0_docs d USING (file_id, record);

-- What each entry of the run is. An entry of the user role answers the action its agent wrote just before
-- it (the observation); otherwise it prompts that agent: the run's first prompt is the task statement, a
-- sub-agent's its parent's arguments, any other a notice of the harness.
CREATE OR REPLACE TEMP TABLE swe0_parts AS
WITH run AS (
    SELECT e.*, d.trace_id,
           -- the agent the run is of: the owner of its first entry
           first_value(coalesce(e.agent, '')) OVER (PARTITION BY e.file_id, e.record ORDER BY e.pos) AS lead_agent,
           lag(e.role) OVER mine AS before_role, lag(e.action) OVER mine AS before_action
    FROM swe0_entries e JOIN swe0_docs d USING (file_id, record) ANTI JOIN swe0_problems p USING (file_id, record)
    WHERE NOT e.is_demo
    WINDOW mine AS (PARTITION BY e.file_id, e.record, coalesce(e.agent, '') ORDER BY e.pos)
),
kinds AS (
    SELECT *,
           CASE WHEN role = 'system' THEN 'system'
                WHEN role = 'assistant' AND regexp_matches(coalesce(action, ''), '^(exit_(cost|context|format|api|error))$') THEN 'exit'
                WHEN role = 'assistant' AND action IS NOT NULL THEN 'act'
                WHEN role = 'assistant' THEN 'said'
                WHEN role <> 'user' THEN 'other'  -- a role SWE-agent does not write: kept, as written
                WHEN before_role = 'assistant' AND before_action IS NOT NULL
                     AND NOT regexp_matches(before_action, '^(exit_(cost|context|format|api|error))$') THEN 'result'
                ELSE 'prompt' END AS part
    FROM run
)
SELECT *,
       CASE WHEN part <> 'prompt' THEN part
            WHEN pos = min(pos) FILTER (WHERE part = 'prompt') OVER (PARTITION BY file_id, record) THEN 'task'
            WHEN coalesce(agent, '') <> lead_agent THEN 'instruction'
            ELSE 'notice' END AS kind,
       -- the text of an observation, out of the next-step template's footer
       CASE WHEN part = 'result' THEN
           regexp_replace(text, '(?s)(\s*\n\([A-Z][A-Za-z ]*: [^\n]*\))*\s*\n?bash-\$\s*$', '') END AS output
FROM kinds;

-- The last action of the run's own agent is answered by the last trajectory step when no user entry
-- follows it (the run stopped at it: `submit`, or an action that ended the run).
CREATE OR REPLACE TEMP TABLE swe0_last AS
SELECT p.file_id, p.record, p.pos, d.doc->'trajectory'->-1->>'observation' AS output
FROM (SELECT *, pos = max(pos) OVER (PARTITION BY file_id, record) AS is_last FROM swe0_parts WHERE kind <> 'system') p
JOIN swe0_docs d USING (file_id, record)
WHERE p.is_last AND p.kind = 'act' AND coalesce(p.agent, '') = p.lead_agent
  AND trim(coalesce(d.doc->'trajectory'->-1->>'action', ''), e' \n\r\t') = p.action;

-- Why an observation failed, as SWE-agent's environment and commands write it, or NULL.
CREATE OR REPLACE TEMP MACRO swe0_failure(txt) AS
    CASE WHEN regexp_matches(coalesce(txt, ''), '^\s*Your proposed edit has introduced new syntax error') THEN 'syntax_check'
         WHEN regexp_matches(coalesce(txt, ''), 'EXECUTION TIMED OUT') THEN 'timeout'
         WHEN regexp_matches(coalesce(txt, ''), '^\s*(Usage: |Error: |File .* not found\s*$|No file open\. )') THEN 'command_refused'
         WHEN regexp_matches(coalesce(txt, ''), '(?m)^(/bin/|/usr/bin/)?(ba|z)?sh: .*(command not found|No such file or directory)') THEN 'shell'
         WHEN regexp_matches(coalesce(txt, ''), '(?m)^Traceback \(most recent call last\):') THEN 'exception'
    END;

CREATE OR REPLACE TEMP TABLE swe0_events AS
SELECT p.trace_id, p.file_id, p.record, p.pos, 1 AS sub, 'h' || (p.pos - 1) AS event_id,
       CASE p.kind WHEN 'act' THEN 'assistant_message' WHEN 'said' THEN 'assistant_message'
                   WHEN 'result' THEN 'tool_result' WHEN 'instruction' THEN 'user_message'
                   WHEN 'other' THEN 'unknown' ELSE 'workflow_step' END AS type,
       CASE WHEN p.kind IN ('task', 'notice', 'instruction') THEN p.role || ':' || p.kind
            WHEN p.kind = 'exit' THEN p.action ELSE p.role END AS raw_type,
       CASE p.kind WHEN 'act' THEN coalesce(p.thought, p.text) WHEN 'result' THEN p.output ELSE p.text END AS content,
       CASE WHEN p.kind = 'result' THEN swe0_failure(p.output) END AS failure,
       p.kind = 'result' AS is_result,
       CASE WHEN p.kind = 'result' THEN 'h' || (c.pos - 1) || '/call' END AS parent_id,
       json_merge_patch('{}', json_object('agent', p.agent)) AS metadata,
       CASE p.kind WHEN 'result' THEN 'tool' WHEN 'instruction' THEN 'parent' WHEN 'other' THEN NULL
                   WHEN 'act' THEN 'agent' WHEN 'said' THEN 'agent' ELSE 'harness' END AS actor
FROM swe0_parts p
-- the action an observation answers: its agent's entry just before it
ASOF LEFT JOIN (SELECT file_id, record, pos, agent FROM swe0_parts WHERE kind = 'act') c
     ON p.kind = 'result' AND c.file_id = p.file_id AND c.record = p.record
        AND c.agent IS NOT DISTINCT FROM p.agent AND p.pos > c.pos
WHERE p.kind <> 'system'
UNION ALL
-- the command of an action; an edit names the file it changes (metadata `edited_files`): `create PATH` makes
-- PATH, `edit N:M` rewrites lines of the file open at the time, which the footer of the agent's last
-- prompt or observation before it names (`(Open file: …)`, `n/a` when none is)
SELECT a.trace_id, a.file_id, a.record, a.pos, 2, 'h' || (a.pos - 1) || '/call', 'tool_call', 'action', a.command, NULL, false, NULL,
       json_merge_patch(json_object('arguments', json_object('command', a.command)), json_object('agent', a.agent),
                        CASE WHEN regexp_matches(a.action, '^create\s+\S') THEN json_object('edited_files', [regexp_extract(a.action, '^create\s+(\S+)', 1)])
                             WHEN regexp_matches(a.action, '^edit\s+\d+:\d+') AND o.open_file NOT IN ('', 'n/a')
                             THEN json_object('edited_files', [o.open_file]) ELSE '{}' END), 'agent'
FROM (SELECT *,
             -- a multi-line command (`edit 4:4` … `end_of_edit`) as the environment runs it: its text as a heredoc
             -- (Agent._guard_multiline_input), so that what it runs is its first word, not its end marker
             CASE WHEN regexp_matches(action, '(?s)^[^\n]+\n(.*\n)?end_of_\w+$') AND NOT regexp_matches(action, '^[^\n]*<<')
                  THEN regexp_replace(action, '^([^\n]*)', '\1 << ''' || regexp_extract(action, '\n(end_of_\w+)$', 1) || '''')
                  ELSE action END AS command
      FROM swe0_parts WHERE kind = 'act') a
ASOF LEFT JOIN (SELECT file_id, record, pos, agent, trim(regexp_extract(text, '\n\(Open file: ([^\n]*)\)', 1)) AS open_file
                FROM swe0_parts WHERE role = 'user' AND contains(text, '(Open file: ')) o
     ON o.file_id = a.file_id AND o.record = a.record AND o.agent IS NOT DISTINCT FROM a.agent AND a.pos > o.pos
UNION ALL
-- what the last action printed, from the trajectory
SELECT p.trace_id, p.file_id, p.record, p.pos, 3, 'h' || (p.pos - 1) || '/result', 'tool_result', 'trajectory', l.output,
       swe0_failure(l.output), true, 'h' || (p.pos - 1) || '/call', json_merge_patch('{}', json_object('agent', p.agent)), 'tool'
FROM swe0_parts p JOIN swe0_last l USING (file_id, record, pos);

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT d.trace_id, 'swe_agent0', 'swe-agent',
       -- the issue out of the instance template, when the template is SWE-agent's (ISSUE: … INSTRUCTIONS:)
       lw_clip(coalesce(nullif(trim(regexp_extract(t.text, '(?s)ISSUE:\s*\n(.*?)\n\s*INSTRUCTIONS:', 1)), ''), t.text), 300),
       nullif(trim(d.doc->'info'->>'exit_status'), ''), NULL, d.file, d.line, NULL, NULL,
       json_object('instance_id', d.instance, 'environment', d.doc->'environment',
                   'agents', (SELECT list_sort(list_distinct(list(a.agent))) FROM swe0_parts a
                              WHERE a.file_id = d.file_id AND a.record = d.record AND a.agent IS NOT NULL),
                   'submitted', nullif(trim(coalesce(d.doc->'info'->>'submission', '')), '') IS NOT NULL),
       json_object('system', (SELECT string_agg(s.text, chr(10) || chr(10) ORDER BY s.pos) FROM swe0_parts s
                              WHERE s.file_id = d.file_id AND s.record = d.record AND s.kind = 'system'),
                   'info', d.doc->'info'),
       d.file_id, d.record
FROM swe0_docs d
ANTI JOIN swe0_problems p USING (file_id, record)
LEFT JOIN (SELECT file_id, record, text FROM swe0_parts WHERE kind = 'task') t USING (file_id, record);

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT trace_id, row_number() OVER (PARTITION BY file_id, record ORDER BY pos, sub)::INTEGER, event_id,
       CASE WHEN type = 'assistant_message'
                 AND (pos, sub) = max((pos, sub)) FILTER (WHERE type = 'assistant_message') OVER (PARTITION BY file_id, record)
            THEN 'final_answer' ELSE type END,
       raw_type, content,
       CASE WHEN is_result THEN CASE WHEN failure IS NULL THEN 'ok' ELSE 'error' END END,
       CASE WHEN is_result THEN failure IS NULL END,
       CASE WHEN type IN ('tool_call', 'tool_result') THEN 'bash' END, NULL, parent_id,
       CASE WHEN failure IS NOT NULL THEN json_merge_patch(metadata, json_object('failure', failure)) ELSE metadata END,
       NULL, file_id, record, actor
FROM swe0_events;

DROP TABLE swe0_docs;
DROP TABLE swe0_entries;
DROP TABLE swe0_problems;
DROP TABLE swe0_parts;
DROP TABLE swe0_last;
DROP TABLE swe0_events;
DROP MACRO swe0_failure;
