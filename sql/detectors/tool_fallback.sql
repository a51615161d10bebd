-- id: tool_fallback
-- title: A tool failed and the agent fell back to another
-- severity: low
-- description: A failed tool followed by a different tool that succeeds: the first tool is unreliable
--   for this task, or the fallback should have been the first choice.
-- lesson: When {evidence}, go to the fallback directly or check the first tool's availability first.
WITH tools AS (
    SELECT trace_id, seq, event_id, tool_name, content, status, success,
           lw_failed(status, success) AS failed, lw_succeeded(status, success) AS ok
    FROM events
    WHERE tool_name IS NOT NULL AND type IN ('tool_call', 'tool_result')
),
next_other AS (
    SELECT f.trace_id, f.event_id, f.seq, f.tool_name AS failed_tool, f.content,
           arg_min(o.tool_name, o.seq) AS fallback_tool, arg_min(o.ok, o.seq) AS fallback_ok
    FROM tools f JOIN tools o ON o.trace_id = f.trace_id AND o.seq > f.seq AND o.tool_name <> f.tool_name
    WHERE f.failed
    GROUP BY ALL
)
SELECT trace_id, event_id, seq,
       failed_tool || ' failed' || coalesce(' (' || nullif(trim(content), failed_tool) || ')', '')
           || ' and ' || fallback_tool || ' succeeded instead' AS evidence
FROM next_other
WHERE fallback_ok
QUALIFY row_number() OVER (PARTITION BY trace_id, failed_tool, fallback_tool ORDER BY seq) = 1
