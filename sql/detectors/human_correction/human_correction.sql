-- id: human_correction
-- title: A human corrected the agent
-- severity: high
-- description: A human_correction event (the correction is the evidence: a reviewer's note, an
--   interrupted run and what the user said next, a rejected tool use), or a trace whose outcome is
--   corrected_by_human although no correction event was recorded (a trace-level finding). Also, with
--   confidence likely and severity medium, a user turn in a conversation that rejects or corrects what the
--   agent just did or said: "that's not what I asked", "I said...", "you didn't...", "you booked the wrong
--   one"; a "no" that goes on to say what is wrong, answering a statement of the agent (not its question);
--   or the user repeating an earlier request nearly word for word. A user declining an offer ("No,
--   thanks"), changing their mind ("Actually, I'd rather...") or adding something is no correction.
--   A correction needs a person: text an agent framework writes in the user's place (an observation, a
--   format error, a timeout or step-limit notice, a continue prompt: lw_harness_text) is none.
-- lesson: Apply this reviewer correction up front: {evidence}
WITH turns AS (
    SELECT trace_id, event_id, seq, type, content,
           lower(trim(coalesce(content, ''))) AS said,
           lag(CASE WHEN type IN ('assistant_message', 'final_answer') THEN content END IGNORE NULLS)
               OVER (PARTITION BY trace_id ORDER BY seq) AS agent_before,
           count(*) FILTER (WHERE type = 'user_message') OVER (PARTITION BY trace_id ORDER BY seq) AS nth_user
    FROM events
    WHERE type IN ('user_message', 'assistant_message', 'final_answer')
      AND metadata->>'agent_id' IS NULL  -- a subagent's prompt comes from its parent agent, not a person
      AND (type <> 'user_message' OR (lw_actor(type, actor) = 'human' AND NOT lw_harness_text(content)))
),
said AS (
    SELECT * FROM turns WHERE type = 'user_message' AND nth_user > 1 AND agent_before IS NOT NULL
),
repeated AS (
    -- nearly the same words as an earlier request of the same user (5 words or more)
    SELECT s.trace_id, s.seq
    FROM said s JOIN turns e ON e.trace_id = s.trace_id AND e.type = 'user_message' AND e.seq < s.seq
    WHERE len(list_distinct(lw_words(s.content))) >= 5
      AND len(list_intersect(list_distinct(lw_words(s.content)), list_distinct(lw_words(e.content))))
          >= 0.8 * len(list_distinct(list_concat(lw_words(s.content), lw_words(e.content))))
    GROUP BY ALL
)
SELECT e.trace_id, e.event_id, e.seq,
       coalesce(nullif(trim(e.content), ''), 'correction recorded without text') AS evidence,
       'A human had to correct the agent.' AS problem,
       NULL AS severity, NULL AS confidence
FROM events e
WHERE e.type = 'human_correction'

UNION ALL

SELECT t.trace_id, NULL, NULL,
       'outcome corrected_by_human; last agent output: '
           || coalesce((SELECT arg_max(e.content, e.seq) FROM events e
                        WHERE e.trace_id = t.trace_id AND e.content IS NOT NULL
                          AND e.type IN ('final_answer', 'assistant_message')), '(none)'),
       'The run ended corrected by a human, but the correction itself was not recorded.', NULL, NULL
FROM traces t
WHERE lower(trim(t.outcome)) IN ('corrected_by_human', 'human_corrected', 'corrected')
  AND NOT EXISTS (SELECT 1 FROM events e WHERE e.trace_id = t.trace_id AND e.type = 'human_correction')

UNION ALL

SELECT s.trace_id, s.event_id, s.seq, lw_clip(s.content, 300),
       CASE WHEN r.seq IS NOT NULL THEN 'The user had to repeat a request.'
            ELSE 'The user corrected what the agent had just done or said.' END,
       'medium', 'likely'
FROM said s LEFT JOIN repeated r USING (trace_id, seq)
WHERE NOT EXISTS (SELECT 1 FROM events c WHERE c.trace_id = s.trace_id AND c.type = 'human_correction'
                                           AND c.seq BETWEEN s.seq - 2 AND s.seq + 2)
  AND (r.seq IS NOT NULL
       OR lw_objection(s.said)
       -- a "no" that says what is wrong, answering a statement of the agent
       OR (regexp_matches(s.said, '^\W*(no|nope|wrong|incorrect|stop|not quite)\b[,.!]?\s+\w+')
           AND NOT regexp_matches(s.said, '^\W*no,?\s*(thanks|thank you|that''?s (all|it|fine)|need|worries|problem)\b')
           AND NOT contains(s.agent_before, '?')))
