-- title: One lesson, night by night
-- description: How often one lesson was seen on each night. Picks the top-priority lesson; put a lesson id in its place to follow another.
-- columns: night, lesson_id, status, occurrences, traces, title
SELECT night, lesson_id, status, occurrences, traces, title
FROM lesson_trend
WHERE lesson_id = (SELECT lesson_id FROM lessons ORDER BY priority DESC, lesson_id LIMIT 1)  -- or 'L29f52a56cbce'
ORDER BY night;
