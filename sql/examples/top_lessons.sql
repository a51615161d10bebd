-- title: Top lessons by priority
-- description: The lesson candidates to read first: highest priority (severity, how often, how recently), rejected ones left out.
-- columns: lesson_id, status, priority, severity, occurrences, trace_count, nights_seen, review, title
SELECT lesson_id, status, priority, severity, occurrences, trace_count, nights_seen, review, title
FROM lessons
WHERE review <> 'rejected'
ORDER BY priority DESC, lesson_id
LIMIT 20;
