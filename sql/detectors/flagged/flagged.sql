-- id: flagged
-- title: The producer flagged this trace as a lesson
-- severity: medium
-- description: Trace metadata lesson_candidate is true (or "true"); the producer's lesson_problem and
--   lesson_note become the problem and the proposed lesson.
-- lesson: {evidence}
SELECT trace_id,
       coalesce(nullif(trim(metadata->>'lesson_problem'), ''), nullif(trim(metadata->>'lesson_note'), ''),
                'flagged by the producer without a note') AS evidence,
       nullif(trim(metadata->>'lesson_problem'), '') AS problem,
       nullif(trim(metadata->>'lesson_note'), '') AS lesson
FROM traces
WHERE lw_truthy(metadata->>'lesson_candidate')
