-- id: loop
-- title: The agent went round in a loop
-- severity: medium
-- family: tool_failure
-- description: The same call made three or more times unchanged (the same tool, or shell command, with
--   the same arguments and the same answer), or the same failing call repeated unchanged (failed again):
--   the agent is not learning from what the tool told it. Unchanged means the agent changed no file in
--   between (an edit, a file created, moved or removed): a check run again after an edit is progress.
--   Calls with different arguments (one reservation, then another) are no loop; neither is one retry of a
--   call that then succeeded. A failing call repeated is the same
--   cause as its retry (family tool_failure), with what worked after it.
-- lesson: Stop repeating a call that gives the same answer; change the arguments or the approach: {evidence}
-- (the windows and groups carry the few columns they need; the rest is joined back for the repeats)
WITH agent_calls AS (
    SELECT trace_id, seq, tool_key, call_hash,
           -- the calls before it that changed something (a file edited, created, moved or removed)
           count(*) FILTER (WHERE changes)
               OVER (PARTITION BY trace_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS changed_before
    FROM facts WHERE type = 'tool_call' AND actor = 'agent' AND tool_name IS NOT NULL
      -- only the traces where one call (tool and arguments) was made twice or more: no window over the rest
      AND trace_id IN (SELECT trace_id FROM facts WHERE type = 'tool_call' AND actor = 'agent' AND tool_name IS NOT NULL
                       GROUP BY trace_id, tool_key, call_hash HAVING count(*) >= 2)
),
same_calls AS (
    SELECT trace_id, seq, tool_key, md5(call_hash || ':' || changed_before) AS same FROM agent_calls
),
repeats AS (
    SELECT trace_id, tool_key, same FROM same_calls GROUP BY ALL HAVING count(*) >= 2
),
calls AS (
    SELECT f.*, s.same, md5(coalesce(f.output, '')) AS answer
    FROM same_calls s SEMI JOIN repeats USING (trace_id, tool_key, same)
    JOIN facts f USING (trace_id, seq)
),
answered AS (
    SELECT trace_id, tool_key, same, max(n) AS n
    FROM (SELECT c.trace_id, c.tool_key, c.same, c.answer, count(*) AS n FROM calls c GROUP BY ALL)
    GROUP BY ALL
),
repeated AS (
    SELECT c.trace_id, c.tool_key, c.same, any_value(c.command) AS command, any_value(a.n) AS n,
           count(*) FILTER (WHERE c.failed AND NOT c.environment) AS failures,
           arg_min(coalesce(c.result_event_id, c.event_id), c.seq) AS event_id,
           arg_min(coalesce(c.result_seq, c.seq), c.seq) AS seq,
           arg_min(c.error, c.seq) FILTER (WHERE c.failed AND NOT c.environment) AS error,
           arg_min(c.error_sig, c.seq) FILTER (WHERE c.failed AND NOT c.environment) AS error_sig,
           -- what worked after the last time it failed
           arg_max({'kind': c.recovery_kind, 'text': c.recovery, 'wasted': c.wasted_steps, 'between': c.between,
                    'changed': c.changed_files}, c.seq)
               FILTER (WHERE c.failed AND NOT c.environment) AS last
    FROM calls c JOIN answered a USING (trace_id, tool_key, same)
    GROUP BY c.trace_id, c.tool_key, c.same
)
SELECT trace_id, event_id, seq,
       CASE WHEN failures >= 2 THEN tool_key || ' failed ' || failures || ' times unchanged: ' || lw_clip(coalesce(error, '(no message)'), 160)
            ELSE tool_key || ' called ' || n || ' times with the same arguments: ' || lw_clip(command, 160) END AS evidence,
       CASE WHEN failures >= 2 THEN 'The agent repeated a failing call without changing it.'
            ELSE 'The agent called the same tool with the same arguments again and again.' END AS problem,
       CASE WHEN failures >= 2
            THEN 'Do not run `' || lw_first_line(command, 120) || '` again unchanged. '
                 || lw_failure_rule(tool_key, error, lw_what_worked(last.kind, last.text, command, last.between, last.changed))
            ELSE 'Stop repeating `' || lw_first_line(command, 120) || '`: it gives the same answer; change the arguments or the approach.' END AS lesson,
       CASE WHEN failures >= 2 THEN tool_key || ': ' || coalesce(error_sig, 'failed') ELSE tool_key || ': the same call repeated' END AS signature,
       tool_key AS tool,
       CASE WHEN failures >= 2 THEN lw_what_worked(last.kind, last.text, command, last.between, last.changed) END AS recovery,
       CASE WHEN failures >= 2 THEN last.kind END AS recovery_kind,
       CASE WHEN failures >= 2 THEN last.wasted END AS wasted_steps,
       CASE WHEN failures >= 2 THEN lw_failure_title(tool_key, error) ELSE '`' || tool_key || '` called again and again unchanged' END AS title
FROM repeated
WHERE n >= 3 OR failures >= 2
