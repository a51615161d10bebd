-- title: New and regressed lessons
-- description: Lessons first seen on a night, and those back that night after they had been resolved.
-- columns: status, lesson_id, priority, severity, occurrences, source, title
-- parameters: $night: the night, YYYY-MM-DD (default: the latest night a run completed)
SELECT status, lesson_id, priority, severity, occurrences, source, title
FROM lessons
WHERE status IN ('new', 'regressed')
  AND last_night = coalesce($night::DATE, (SELECT max(night) FROM runs WHERE status = 'completed'))
ORDER BY status = 'regressed' DESC, priority DESC, lesson_id;
