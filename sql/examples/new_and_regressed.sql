-- title: New and regressed lessons
-- description: Lessons first seen on a night, and those seen again that night after $gap or more nights without a sighting (regressed, as a run with --resolve-after $gap calls them).
-- columns: status, lesson_id, priority, severity, occurrences, source, title
-- parameters: $night: the night, YYYY-MM-DD (default: the newest night any run counted for); $gap = 7: nights without a sighting that make a lesson regressed
WITH asked AS (SELECT coalesce($night::DATE, (SELECT max(night) FROM sightings)) AS night),
seen AS (
    SELECT s.lesson_id, min(s.night) AS first_night, max(s.night) FILTER (WHERE s.night < a.night) AS before
    FROM sightings s, asked a
    WHERE s.lesson_id IS NOT NULL AND s.night <= a.night
    GROUP BY s.lesson_id
    HAVING bool_or(s.night = a.night)
)
SELECT CASE WHEN n.first_night = a.night THEN 'new' ELSE 'regressed' END AS status,
       l.lesson_id, l.priority, l.severity, l.occurrences, l.source, l.title
FROM seen n JOIN lessons l USING (lesson_id), asked a
WHERE n.first_night = a.night OR a.night - n.before - 1 >= $gap::INTEGER
ORDER BY status = 'regressed' DESC, l.priority DESC, l.lesson_id;
