-- id: critic_revision
-- title: The critic sent the answer back for revision
-- severity: medium
-- description: A critic_review followed by a revision_start (raw TraceEvent types): the proposer's draft
--   went back for a corrective pass, and the critique is what it missed. Two critiques are no correction
--   and get severity info with their own problem: an approval (LGTM, no issues found) revised anyway, a
--   wasted pass; and a critic that failed (its text is an error message), whose error was fed to the
--   proposer as if it were a critique.
-- lesson: Before answering, check the draft against what the critic caught: {evidence}
WITH reviews AS (
    SELECT trace_id, event_id, seq, nullif(trim(content), '') AS critique,
           lead(seq) OVER (PARTITION BY trace_id ORDER BY seq) AS next_review_seq
    FROM events
    WHERE lower(raw_type) = 'critic_review'
),
revised AS (
    SELECT r.trace_id, r.event_id, r.seq,
           coalesce(r.critique, arg_min(nullif(trim(v.content), ''), v.seq), 'critique recorded without text') AS critique
    FROM reviews r
    JOIN events v ON v.trace_id = r.trace_id AND v.seq > r.seq AND v.seq < coalesce(r.next_review_seq, 2147483647)
                 AND lower(v.raw_type) = 'revision_start'
    GROUP BY r.trace_id, r.event_id, r.seq, r.critique
),
classified AS (
    SELECT *,
           CASE WHEN regexp_matches(lower(critique), '^\W*error\b') THEN 'critic_failed'
                WHEN regexp_matches(lower(critique), '^\W*(lgtm|looks good|approved?)\b|\bno (issues|problems) found\b')
                     THEN 'approved' END AS kind
    FROM revised
)
SELECT trace_id, event_id, seq, critique AS evidence,
       CASE WHEN kind IS NOT NULL THEN 'info' END AS severity,
       CASE kind WHEN 'approved' THEN 'The proposer revised its answer although the critic approved the draft.'
                 WHEN 'critic_failed' THEN 'The critic failed, and its error was passed to the proposer as a critique.'
                 ELSE 'The critic found problems in the draft and the answer had to be revised.' END AS problem,
       CASE kind WHEN 'approved' THEN 'Skip the revision pass when the critic approves the draft ("' || critique || '").'
                 WHEN 'critic_failed' THEN 'When the critic''s review fails, stop or retry the review instead of revising '
                                           || 'against its error text ("' || critique || '").' END AS lesson,
       -- the detector's own title says the critic sent the draft back: not so for these two
       CASE kind WHEN 'approved' THEN 'The proposer revised although the critic approved: "' || lw_clip(critique, 48) || '"'
                 WHEN 'critic_failed' THEN 'The critic failed, and its error went to the proposer as a critique' END AS title
FROM classified
