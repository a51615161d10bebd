-- title: New and regressed lessons tonight
-- description: Lessons first seen on the latest night, and those back after they had been resolved.
-- columns: status, lesson_id, priority, severity, occurrences, source, title
SELECT status, lesson_id, priority, severity, occurrences, source, title
FROM lessons
WHERE status IN ('new', 'regressed')
  AND last_night = (SELECT max(night) FROM runs WHERE status = 'completed')
ORDER BY status = 'regressed' DESC, priority DESC, lesson_id;
