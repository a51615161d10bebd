-- id: retry
-- title: The agent had to retry
-- severity: medium
-- description: A retry event after an error or a failed step; also the same tool called again after its
--   failed result with no retry event in between (an implicit retry).
-- lesson: Prevent this failure instead of retrying it: {evidence}
WITH failures AS (
    SELECT trace_id, seq, event_id, type, tool_name, content
    FROM events
    WHERE type = 'error' OR lw_failed(status, success)
),
explicit AS (
    SELECT r.trace_id, r.event_id, r.seq,
           arg_max(coalesce(f.tool_name || ' failed', f.type) || ': '
                   || coalesce(nullif(trim(f.content), ''), '(no message)'), f.seq) AS failure,
           any_value(r.content) AS retry_text
    FROM events r JOIN failures f ON f.trace_id = r.trace_id AND f.seq < r.seq
    WHERE r.type = 'retry'
    GROUP BY r.trace_id, r.event_id, r.seq
),
implicit AS (
    -- the next call of the failed tool; a failed call and its failed result retried once count once
    SELECT f.trace_id, f.event_id, f.seq, f.tool_name, f.content, min(c.seq) AS again_seq
    FROM failures f
    JOIN events c ON c.trace_id = f.trace_id AND c.seq > f.seq AND c.tool_name = f.tool_name
                 AND c.type = 'tool_call'
    WHERE f.tool_name IS NOT NULL
    GROUP BY f.trace_id, f.event_id, f.seq, f.tool_name, f.content
    QUALIFY row_number() OVER (PARTITION BY f.trace_id, f.tool_name, min(c.seq) ORDER BY f.seq DESC) = 1
)
SELECT trace_id, event_id, seq,
       failure || ' -> retried' || coalesce(': ' || nullif(trim(retry_text), ''), '') AS evidence,
       'A step failed and the agent had to retry it.' AS problem
FROM explicit
UNION ALL
SELECT i.trace_id, i.event_id, i.seq,
       'tool ' || i.tool_name || ' failed and was called again'
           || coalesce(': ' || nullif(trim(i.content), i.tool_name), '') AS evidence,
       'A tool call failed and the agent called the same tool again.' AS problem
FROM implicit i
WHERE NOT EXISTS (SELECT 1 FROM events r WHERE r.trace_id = i.trace_id AND r.type = 'retry'
                                           AND r.seq > i.seq AND r.seq < i.again_seq)
