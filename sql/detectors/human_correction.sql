-- id: human_correction
-- title: A human corrected the agent
-- severity: high
-- description: A human_correction event (the correction is the evidence), or a trace whose outcome is
--   corrected_by_human although no correction event was recorded (a trace-level finding).
-- lesson: Apply this reviewer correction up front: {evidence}
SELECT e.trace_id, e.event_id, e.seq,
       coalesce(nullif(trim(e.content), ''), 'correction recorded without text') AS evidence,
       'A human had to correct the agent.' AS problem
FROM events e
WHERE e.type = 'human_correction'

UNION ALL

SELECT t.trace_id, NULL, NULL,
       'outcome corrected_by_human; last agent output: '
           || coalesce((SELECT arg_max(e.content, e.seq) FROM events e
                        WHERE e.trace_id = t.trace_id AND e.content IS NOT NULL
                          AND e.type IN ('final_answer', 'assistant_message')), '(none)'),
       'The run ended corrected by a human, but the correction itself was not recorded.'
FROM traces t
WHERE lower(trim(t.outcome)) IN ('corrected_by_human', 'human_corrected', 'corrected')
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.trace_id = t.trace_id AND e.type = 'human_correction')
