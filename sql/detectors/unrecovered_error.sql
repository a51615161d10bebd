-- id: unrecovered_error
-- title: An error the agent never recovered from
-- severity: high
-- description: An error event with no later retry and no later successful step. The evidence names the
--   error and the workflow step just before it, which is what the agent was doing. A failed tool call
--   alone, or a failed outcome alone, is not this signal.
WITH errors AS (
    SELECT e.trace_id, e.event_id, e.seq, coalesce(nullif(trim(e.content), ''), e.raw_type) AS message
    FROM events e
    WHERE e.type = 'error'
      AND NOT EXISTS (
          SELECT 1 FROM events later
          WHERE later.trace_id = e.trace_id AND later.seq > e.seq
            AND (later.type = 'retry' OR lw_succeeded(later.status, later.success)))
),
step_before AS (
    SELECT er.trace_id, er.seq,
           arg_max(coalesce(s.metadata->>'step', s.metadata->>'name') || ': ' || s.content, s.seq)
               FILTER (WHERE s.type = 'workflow_step' AND s.metadata->>'step' IS NOT NULL) AS named_step,
           arg_max(s.content, s.seq) FILTER (WHERE s.type = 'workflow_step') AS workflow_step,
           arg_max(s.content, s.seq)
               FILTER (WHERE s.type IN ('tool_call', 'model_call', 'assistant_message')) AS other_step
    FROM errors er JOIN events s ON s.trace_id = er.trace_id AND s.seq < er.seq
    GROUP BY er.trace_id, er.seq
)
SELECT er.trace_id, er.event_id, er.seq,
       'error: ' || lw_clip(er.message, 300)
           || coalesce(' | step before: ' || lw_clip(coalesce(sb.named_step, sb.workflow_step, sb.other_step), 160), '')
           AS evidence,
       'The agent hit an error and nothing after it recovered the run.' AS problem,
       coalesce('Before "' || lw_clip(coalesce(sb.named_step, sb.workflow_step, sb.other_step), 160) || '", ',
                'Before continuing, ')
           || 'check for this failure ("' || lw_clip(er.message, 300)
           || '") and retry, fall back or escalate instead of carrying on.' AS lesson
FROM errors er LEFT JOIN step_before sb USING (trace_id, seq)
