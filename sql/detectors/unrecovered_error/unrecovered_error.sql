-- id: unrecovered_error
-- title: An error the agent never recovered from
-- severity: high
-- family: tool_failure
-- description: An error event with no later retry and no later successful step. The evidence names the
--   error and the step that failed (or the workflow step just before it), which is what the agent was
--   doing. One failure recorded on a step and again on the steps around it (an exception on a tool span,
--   then on the agent span) is one error, the innermost. Errors of the environment (a rejected key, a
--   quota, the model provider out of reach) and every failure of the model provider (overloaded, 5xx, a
--   usage limit, an API error record) are environment_error's, not the agent's. A failed tool call
--   alone, or a failed outcome alone, is not this signal.
WITH errors AS (
    SELECT e.trace_id, e.event_id, e.seq, e.parent_id, coalesce(nullif(trim(e.content), ''), e.raw_type) AS message
    FROM events e
    WHERE e.type = 'error'
      AND NOT lw_environment_failure(e.type, e.raw_type, e.tool_name, e.content, e.actor)
      AND NOT EXISTS (
          SELECT 1 FROM events later
          WHERE later.trace_id = e.trace_id AND later.seq > e.seq
            AND (later.type = 'retry' OR lw_succeeded(later.status, later.success)))
),
-- The steps above each error, through parent_id (only in traces with more than one error).
up AS (
    WITH RECURSIVE walk(trace_id, seq, step_id, depth) AS (
        SELECT trace_id, seq, parent_id, 0 FROM errors
        WHERE parent_id IS NOT NULL
          AND trace_id IN (SELECT trace_id FROM errors GROUP BY trace_id HAVING count(*) > 1)
        UNION ALL
        SELECT w.trace_id, w.seq, p.parent_id, w.depth + 1
        FROM walk w JOIN events p ON p.trace_id = w.trace_id AND p.event_id = w.step_id
        WHERE p.parent_id IS NOT NULL AND w.depth < 64
    )
    SELECT * FROM walk
),
-- An error on a step that contains another error's step is the same failure seen from outside.
innermost AS (
    SELECT er.* FROM errors er
    WHERE NOT EXISTS (SELECT 1 FROM up u WHERE u.trace_id = er.trace_id AND u.seq <> er.seq AND u.depth >= 1
                                           AND u.step_id = er.parent_id)
),
step_before AS (
    SELECT er.trace_id, er.seq,
           arg_max(coalesce(s.metadata->>'step', s.metadata->>'name') || ': ' || s.content, s.seq)
               FILTER (WHERE s.type = 'workflow_step' AND s.metadata->>'step' IS NOT NULL) AS named_step,
           arg_max(s.content, s.seq) FILTER (WHERE s.type = 'workflow_step') AS workflow_step,
           arg_max(s.content, s.seq)
               FILTER (WHERE s.type IN ('tool_call', 'model_call', 'assistant_message')) AS other_step
    FROM innermost er JOIN events s ON s.trace_id = er.trace_id AND s.seq < er.seq
    GROUP BY er.trace_id, er.seq
),
-- The tool the error belongs to, when the trace says so (an exception on a tool's span).
own_step AS (
    SELECT er.trace_id, er.seq, any_value('tool ' || coalesce(s.tool_name, s.content)) AS step
    FROM innermost er JOIN events s ON s.trace_id = er.trace_id AND s.event_id = er.parent_id
    WHERE s.type = 'tool_call'
    GROUP BY er.trace_id, er.seq
)
SELECT er.trace_id, er.event_id, er.seq,
       'error: ' || lw_clip(er.message, 300)
           || coalesce(' | failed step: ' || lw_clip(os.step, 160),
                       ' | step before: ' || lw_clip(coalesce(sb.named_step, sb.workflow_step, sb.other_step), 160), '')
           AS evidence,
       'The agent hit an error and nothing after it recovered the run.' AS problem,
       coalesce('Before "' || lw_clip(coalesce(os.step, sb.named_step, sb.workflow_step, sb.other_step), 160) || '", ',
                'Before continuing, ')
           || 'check for this failure ("' || lw_clip(er.message, 300)
           || '") and retry, fall back or escalate instead of carrying on.' AS lesson,
           -- the cause: the tool (or step) and what it said, what varies masked
           coalesce(regexp_replace(os.step, '^tool ', ''), 'step') || ': ' || lw_mask(lw_error_line(er.message)) AS signature,
           regexp_replace(os.step, '^tool ', '') AS tool
FROM innermost er LEFT JOIN step_before sb USING (trace_id, seq) LEFT JOIN own_step os USING (trace_id, seq)
