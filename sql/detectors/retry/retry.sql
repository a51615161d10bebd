-- id: retry
-- title: The agent had to retry
-- severity: medium
-- description: A retry event after an error or a failed step; also the same tool called again after its
--   failed result with no retry event in between (an implicit retry); a tool failing and called again and
--   again before it succeeds is one finding ("(3 times)"). Retries that end without a success
--   (the retried step failed again and nothing of it succeeded later) are an unrecovered error, severity
--   high, and say so: the run went on, or ended, without it. A failure of the model provider (its API
--   overloaded, a usage limit) and the runtime's own retries of it are environment_error's, not this.
-- lesson: Prevent this failure instead of retrying it: {evidence}
WITH failures AS (
    SELECT trace_id, seq, event_id, type, tool_name, content
    FROM events
    WHERE (type = 'error' OR lw_failed(status, success))
      AND NOT lw_environment_failure(type, raw_type, tool_name, content, actor)  -- environment_error's
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
-- A tool's episodes: its events since its last success. Failures of one episode retried again and again
-- are one finding, at the first failure.
episodes AS (
    SELECT trace_id, seq, tool_name,
           count(*) FILTER (WHERE lw_succeeded(status, success)) OVER (PARTITION BY trace_id, tool_name ORDER BY seq) AS episode
    FROM events WHERE tool_name IS NOT NULL AND trace_id IN (SELECT trace_id FROM failures WHERE tool_name IS NOT NULL)
),
retried AS (
    -- the next call of the failed tool; a failed call and its failed result retried once count once
    SELECT f.trace_id, f.event_id, f.seq, f.tool_name, f.content, min(c.seq) AS again_seq
    FROM failures f
    JOIN events c ON c.trace_id = f.trace_id AND c.seq > f.seq AND c.tool_name = f.tool_name
                 AND c.type = 'tool_call'
    WHERE f.tool_name IS NOT NULL
    GROUP BY f.trace_id, f.event_id, f.seq, f.tool_name, f.content
    QUALIFY row_number() OVER (PARTITION BY f.trace_id, f.tool_name, min(c.seq) ORDER BY f.seq DESC) = 1
),
implicit AS (
    SELECT r.trace_id, r.tool_name, arg_min(r.event_id, r.seq) AS event_id, min(r.seq) AS seq,
           arg_min(r.content, r.seq) AS content, max(r.again_seq) AS again_seq, count(*) AS times
    FROM retried r JOIN episodes e USING (trace_id, seq, tool_name)
    WHERE NOT EXISTS (SELECT 1 FROM events x WHERE x.trace_id = r.trace_id AND x.type = 'retry'
                                               AND x.seq > r.seq AND x.seq < r.again_seq)
    GROUP BY r.trace_id, r.tool_name, e.episode
),
-- Exhausted: after the retry the step failed again, and nothing of it (the tool, or anything at all for
-- an explicit retry) succeeded later.
found AS (
    SELECT x.trace_id, x.event_id, x.seq, NULL AS what,
           x.failure || ' -> retried' || coalesce(': ' || nullif(trim(x.retry_text), ''), '') AS detail,
           EXISTS (SELECT 1 FROM failures f WHERE f.trace_id = x.trace_id AND f.seq > x.seq)
               AND NOT EXISTS (SELECT 1 FROM events s WHERE s.trace_id = x.trace_id AND s.seq > x.seq
                                                      AND lw_succeeded(s.status, s.success)) AS exhausted,
           NULL AS tool_name
    FROM explicit x
    UNION ALL
    SELECT i.trace_id, i.event_id, i.seq,
           'tool ' || i.tool_name || ' failed and was called again' || CASE WHEN i.times > 1 THEN ' (' || i.times || ' times)' ELSE '' END,
           nullif(trim(i.content), i.tool_name),
           EXISTS (SELECT 1 FROM failures f WHERE f.trace_id = i.trace_id AND f.tool_name = i.tool_name AND f.seq >= i.again_seq)
               AND NOT EXISTS (SELECT 1 FROM events s WHERE s.trace_id = i.trace_id AND s.seq >= i.again_seq
                                                      AND s.tool_name = i.tool_name AND lw_succeeded(s.status, s.success)),
           i.tool_name
    FROM implicit i
)
SELECT trace_id, event_id, seq,
       CASE WHEN what IS NULL THEN CASE WHEN exhausted THEN 'retried and never succeeded: ' ELSE '' END || detail
            ELSE what || CASE WHEN exhausted THEN ', and never succeeded' ELSE '' END || coalesce(': ' || detail, '')
       END AS evidence,
       CASE WHEN exhausted THEN 'high' END AS severity,
       CASE WHEN exhausted THEN 'The agent retried a failing step and it never succeeded: the run went on without it.'
            WHEN tool_name IS NOT NULL THEN 'A tool call failed and the agent called the same tool again.'
            ELSE 'A step failed and the agent had to retry it.' END AS problem,
       CASE WHEN exhausted THEN 'When ' || coalesce(tool_name, 'a step') || ' keeps failing, stop retrying it: fall back, '
                                || 'escalate or tell the user it could not be done (' || coalesce(what || ': ', '') || coalesce(detail, '') || ').' END AS lesson
FROM found
