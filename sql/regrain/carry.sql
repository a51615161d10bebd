-- Regrain, after the weave: each reviewed lesson's decision moves to the one lesson its findings went
-- to, unless they went to several or to none, or another reviewed lesson with another decision went there
-- too. Ends with one row per reviewed lesson: (old lesson, new lesson or NULL, why not).
CREATE OR REPLACE TEMP TABLE review_moves AS
WITH landed AS (
    SELECT f.old_lesson, list_sort(list_distinct(list(d.lesson_id) FILTER (WHERE d.lesson_id IS NOT NULL))) AS went
    FROM reviewed_findings f
    LEFT JOIN detections d ON d.trace_id = f.trace_id AND d.detector = f.detector AND coalesce(d.seq, -1) = f.place
    GROUP BY f.old_lesson
),
single AS (
    SELECT l.old_lesson, l.went, CASE WHEN len(l.went) = 1 THEN l.went[1] END AS new_lesson, r.decision
    FROM landed l JOIN reviews r ON r.lesson_id = l.old_lesson
)
SELECT s.old_lesson,
       CASE WHEN s.new_lesson IS NOT NULL AND count(DISTINCT s.decision) OVER (PARTITION BY s.new_lesson) = 1
            THEN s.new_lesson END AS new_lesson,
       CASE WHEN len(s.went) = 0 THEN 'its findings are gone'
            WHEN len(s.went) > 1 THEN 'its findings are now in ' || len(s.went) || ' lessons: ' || array_to_string(s.went[1:3], ', ')
            WHEN count(DISTINCT s.decision) OVER (PARTITION BY s.new_lesson) > 1
                 THEN 'lessons with other decisions went into ' || s.new_lesson
       END AS why_not
FROM single s
WHERE s.old_lesson NOT IN (SELECT lesson_id FROM lessons);  -- a lesson that kept its id keeps its review

-- one review per new lesson: the latest decision of those that moved there
INSERT INTO reviews
SELECT m.new_lesson, arg_max(r.decision, r.decided_at), arg_max(r.text, r.decided_at),
       arg_max(r.note, r.decided_at), max(r.decided_at)
FROM review_moves m JOIN reviews r ON r.lesson_id = m.old_lesson
WHERE m.new_lesson IS NOT NULL AND m.new_lesson NOT IN (SELECT lesson_id FROM reviews)
GROUP BY m.new_lesson;

SELECT old_lesson, new_lesson, why_not FROM review_moves ORDER BY old_lesson;
