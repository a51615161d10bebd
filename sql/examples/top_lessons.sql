-- title: Top lessons by priority
-- description: The lesson candidates to read first: highest priority (what each cost: severity, traces, occurrences, wasted calls, corrections, how recently), rejected ones left out.
-- columns: lesson_id, status, priority, severity, occurrences, trace_count, nights_seen, review, title
-- parameters: $limit = 20: how many lessons; $status: only lessons with this status, new, regressed, recurring, open or resolved (default: every status)
SELECT lesson_id, status, priority, severity, occurrences, trace_count, nights_seen, review, title
FROM lessons
WHERE review <> 'rejected' AND ($status::VARCHAR IS NULL OR status = $status::VARCHAR)
ORDER BY priority DESC, lesson_id
LIMIT $limit::INTEGER;
