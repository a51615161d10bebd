-- id: tool_fallback
-- title: A tool failed and the agent fell back to another
-- severity: medium
-- description: A failed tool followed by a different tool that succeeds, the failed tool never being
--   called again: the first tool is unreliable for this task, or the fallback should have been the first
--   choice. Fixing something and re-running the failed tool is a retry, not a fallback.
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
    GROUP BY f.trace_id, f.event_id, f.seq, f.tool_name, f.content
)
SELECT n.trace_id, n.event_id, n.seq,
       failed_tool || ' failed' || coalesce(' (' || nullif(trim(content), failed_tool) || ')', '')
           || ' and ' || fallback_tool || ' succeeded instead' AS evidence,
       'A tool failed and the agent had to fall back to another one.' AS problem,
       'For this task, expect ' || failed_tool || ' to fail; check it is available first, or use '
           || fallback_tool || ' directly.' AS lesson
FROM next_other n
WHERE fallback_ok
  AND NOT EXISTS (SELECT 1 FROM tools again WHERE again.trace_id = n.trace_id
                     AND again.tool_name = n.failed_tool AND again.seq > n.seq)
QUALIFY row_number() OVER (PARTITION BY trace_id, failed_tool, fallback_tool ORDER BY seq) = 1
