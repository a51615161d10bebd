-- title: One lesson, night by night
-- description: How often one lesson was seen on each night.
-- columns: night, lesson_id, status, occurrences, traces, title
-- parameters: $lesson_id: the lesson to follow (default: the lesson of highest priority)
SELECT night, lesson_id, status, occurrences, traces, title
FROM lesson_trend
WHERE lesson_id = coalesce($lesson_id::VARCHAR, (SELECT lesson_id FROM lessons ORDER BY priority DESC, lesson_id LIMIT 1))
ORDER BY night;
