-- id: loop
-- title: The agent went round in a loop
-- severity: medium
-- description: The same tool called three or more times with identical arguments, or the same failing
--   call repeated unchanged (identical arguments, failed again): the agent is not learning from what the
--   tool told it. Calls with different arguments (one reservation, then another) are no loop; neither is
--   one retry of a call that then succeeded.
-- lesson: Stop repeating a call that gives the same answer; change the arguments or the approach: {evidence}
WITH calls AS (
    SELECT trace_id, event_id, seq, tool_name, status, success,
           coalesce(lw_call_args(metadata, extra, content), '') AS args
    FROM events WHERE type = 'tool_call' AND tool_name IS NOT NULL
),
hashed AS (SELECT *, md5(args) AS same FROM calls),
-- Calls made at least twice with the same arguments: usually few, so only their tools' calls are
-- ordered below (a window over every call costs more than the rest of the query).
repeats AS (
    SELECT trace_id, tool_name, same FROM hashed GROUP BY ALL HAVING count(*) >= 2
),
again AS (
    SELECT * FROM (
        SELECT c.*, lead(c.seq) OVER (PARTITION BY c.trace_id, c.tool_name ORDER BY c.seq) AS next_call
        FROM hashed c SEMI JOIN (SELECT DISTINCT trace_id, tool_name FROM repeats) r USING (trace_id, tool_name)
    ) SEMI JOIN repeats USING (trace_id, tool_name, same)
),
outcomes AS (
    SELECT c.*, lw_failed(c.status, c.success) OR EXISTS (
               SELECT 1 FROM events r
               WHERE r.trace_id = c.trace_id AND r.tool_name = c.tool_name AND r.type IN ('tool_result', 'error')
                 AND r.seq > c.seq AND r.seq < coalesce(c.next_call, 2147483647) AND lw_failed(r.status, r.success)) AS failed
    FROM again c
),
repeated AS (
    SELECT trace_id, tool_name, same, any_value(args) AS args, count(*) AS n,
           count(*) FILTER (WHERE failed) AS failures, arg_min(event_id, seq) AS first_event, min(seq) AS first_seq
    FROM outcomes GROUP BY trace_id, tool_name, same
)
SELECT trace_id, first_event AS event_id, first_seq AS seq,
       CASE WHEN failures >= 2 THEN tool_name || ' failed ' || failures || ' times with the same arguments'
            ELSE tool_name || ' called ' || n || ' times with the same arguments' END
           || ': ' || lw_clip(args, 160) AS evidence,
       CASE WHEN failures >= 2 THEN 'The agent repeated a failing call without changing it.'
            ELSE 'The agent called the same tool with the same arguments again and again.' END AS problem
FROM repeated
WHERE n >= 3 OR failures >= 2
