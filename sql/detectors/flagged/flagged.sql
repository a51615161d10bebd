-- id: flagged
-- title: The producer flagged this trace as a lesson
-- severity: medium
-- category: producer_flag
-- floor: none
-- description: Trace metadata lesson_candidate is true (or "true"); the producer's lesson_problem and
--   lesson_note become the problem and the proposed lesson. The producer asked for a lesson, so even one
--   such trace makes one.
-- lesson: {evidence}
SELECT trace_id,
       coalesce(nullif(trim(metadata->>'lesson_problem'), ''), nullif(trim(metadata->>'lesson_note'), ''),
                'flagged by the producer without a note') AS evidence,
       nullif(trim(metadata->>'lesson_problem'), '') AS problem,
       nullif(trim(metadata->>'lesson_note'), '') AS lesson
FROM traces
WHERE lw_truthy(metadata->>'lesson_candidate')
