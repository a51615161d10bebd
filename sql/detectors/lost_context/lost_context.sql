-- id: lost_context
-- title: The agent started without the context of the last session
-- severity: medium
-- description: The user picks up earlier work ("continue", "where we left off", "resume") and the agent
--   says it has no memory of it ("I don't have the previous context"): a coding agent starts every session
--   blank, so the project needs notes it reads first. What worked is what the agent read next to find its
--   way (the files of its first reads after saying so); what it cost, the calls it made before the person
--   spoke again.
-- lesson: When the user asks to continue earlier work, read the project's own notes before anything else: {evidence}
WITH resumed AS (
    SELECT e.trace_id, e.seq, e.content
    FROM events e JOIN facts x ON x.trace_id = e.trace_id AND x.seq = e.seq
    WHERE e.type = 'user_message' AND lw_person(x.actor)
      AND regexp_matches(lw_lowered(e.content), '^\W*(continue|carry on|keep going|resume)\b|\b(where|from where) (we|you|i) left off\b|\bpick (it )?up where\b|\b(continue|resume) (the |our |with the )?(previous|last|earlier) (work|session|task)')
),
-- What the agent said after each request. MATERIALIZED keeps the test of its words below on these few
-- replies: inlined, DuckDB would run it on every message of the batch before the join.
replies AS MATERIALIZED (
    SELECT r.trace_id, r.seq AS asked, r.content AS request, a.seq, a.event_id, a.content
    FROM resumed r JOIN events a ON a.trace_id = r.trace_id AND a.seq > r.seq
                                AND a.type IN ('assistant_message', 'final_answer')
),
admitted AS (
    SELECT trace_id, asked, request, min(seq) AS seq, arg_min(event_id, seq) AS event_id, arg_min(content, seq) AS said
    FROM replies a
    WHERE regexp_matches(lw_lowered(a.content), '\b(don''?t|do not|no longer) have (access to )?(the |any |our )?(previous|prior|earlier|past|last) (context|conversation|session|history|work|chat)|\bno (memory|record|recollection) of (our|the|any) (previous|prior|earlier|last)|\b(can''?t|cannot|unable to) (see|access|recall|remember) (our|the|any) (previous|prior|earlier|last)')
      -- before the person speaks again
      AND NOT EXISTS (SELECT 1 FROM facts h WHERE h.trace_id = a.trace_id AND lw_person(h.actor) AND h.type = 'user_message'
                                           AND h.seq > a.asked AND h.seq < a.seq)
    GROUP BY trace_id, asked, request
),
-- the files the agent read next, what it found its way with, and the calls it made before the person
-- spoke again
reads AS (
    SELECT a.trace_id, a.seq,
           array_to_string(list_distinct(flatten(list(regexp_extract_all(c.command, '([\w./-]+\.(?:md|txt|rst))\b', 1)
                                                 ORDER BY c.seq)))[1:4], ', ') AS files,
           count(*) AS calls
    FROM admitted a JOIN facts c ON c.trace_id = a.trace_id AND c.seq > a.seq
                                 AND c.type = 'tool_call' AND c.actor = 'agent' AND NOT c.failed
    WHERE c.seq < coalesce((SELECT min(h.seq) FROM facts h WHERE h.trace_id = a.trace_id AND h.seq > a.seq
                                                            AND h.type = 'user_message' AND lw_person(h.actor)), 2147483647)
    GROUP BY a.trace_id, a.seq
)
SELECT a.trace_id, a.event_id, a.seq,
       '"' || lw_clip(a.request, 80) || '" then "' || lw_clip(a.said, 140) || '"' AS evidence,
       'The user picked up earlier work and the agent had no memory of it.' AS problem,
       'when the user asks to continue, the agent has no memory of the last session' AS signature,
       'When the user asks to continue earlier work, you start without its context: read the project''s notes first'
           || coalesce(' (what worked here: reading ' || nullif(r.files, '') || ')', '') || ', then say what you will do next.' AS lesson,
       nullif(r.files, '') AS recovery, CASE WHEN nullif(r.files, '') IS NOT NULL THEN 'other' END AS recovery_kind,
       'Asked to continue, the agent had no memory of the last session' AS title,
       r.calls AS wasted_steps
FROM admitted a LEFT JOIN reads r USING (trace_id, seq)
