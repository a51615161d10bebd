-- Rules: the health of every exported rule (an accepted lesson), as of the database's latest night. A
-- rule is accepted on the night of the latest run before the decision, and is
--   'regressed'  seen again after it was accepted, after a quiet spell of $resolve_after nights or more
--                (since its acceptance, or between sightings): it had worked, and stopped working;
--   'still seen' seen on a night after the one it was accepted on, with no such spell: agents still make
--                the mistake (it has not worked yet, or they do not load it); past $grace nights of that,
--                it needs a person;
--   'quiet'      not seen since it was accepted: working, or stale (`nights`: since it was last seen).
-- A rule's text edited in review is accepted again then (reviews keep the latest decision's time).
-- Each rule also names the accepted rules it duplicates: one signature, or texts whose word sets have a
-- Jaccard similarity of 0.8 or more, leaving out where they hold. Ordered by whether it needs a person, then by id.
-- Parameters: $night (DATE): the latest night; $resolve_after (INTEGER); $grace (INTEGER).
WITH accepted AS (
    SELECT l.lesson_id, l.title, l.lesson, l.signature, l.detector, l.first_night, l.last_night,
           -- the night of the latest run before the decision (a backfilled night is not the calendar's)
           coalesce((SELECT max(u.night) FROM runs u WHERE u.started_at <= r.decided_at), r.decided_at::DATE) AS accepted_night,
           -- the words of what the rule says, not of where it holds (its project and environment, which
           -- rules of one project share)
           list_filter(list_distinct(lw_words(l.lesson)),
                       lambda w: NOT list_contains(lw_words(concat_ws(' ', 'in on', l.environment, array_to_string(l.projects, ' '))), w)) AS words
    FROM lessons l JOIN reviews r USING (lesson_id)
    WHERE l.review = 'accepted' AND r.decision = 'accepted'
    QUALIFY row_number() OVER (PARTITION BY l.lesson_id ORDER BY r.decided_at DESC) = 1
),
after AS (
    SELECT a.lesson_id, s.night, lag(s.night) OVER (PARTITION BY a.lesson_id ORDER BY s.night) AS before
    FROM accepted a JOIN (SELECT DISTINCT lesson_id, night FROM sightings) s
         ON s.lesson_id = a.lesson_id AND s.night > a.accepted_night AND s.night <= $night
),
seen AS (
    SELECT a.lesson_id, count(f.night) AS nights_seen_after, max(f.night) AS last_after,
           bool_or(f.night - coalesce(f.before, a.accepted_night) - 1 >= $resolve_after) AS came_back
    FROM accepted a LEFT JOIN after f USING (lesson_id)
    GROUP BY a.lesson_id
),
twins AS (
    SELECT x.lesson_id, list_sort(list(y.lesson_id)) AS duplicates
    FROM accepted x JOIN accepted y ON x.lesson_id <> y.lesson_id
    WHERE x.signature = y.signature AND x.detector = y.detector
       OR len(list_intersect(x.words, y.words)) / greatest(len(list_distinct(list_concat(x.words, y.words))), 1) >= 0.8
    GROUP BY x.lesson_id
)
SELECT a.lesson_id, a.title, a.accepted_night,
       CASE WHEN s.came_back THEN 'regressed' WHEN s.nights_seen_after > 0 THEN 'still seen' ELSE 'quiet' END AS health,
       CASE WHEN s.nights_seen_after > 0 THEN s.nights_seen_after
            ELSE $night - coalesce(a.last_night, a.accepted_night) END AS nights,
       coalesce(t.duplicates, []) AS duplicates,
       coalesce(s.came_back, false) OR len(coalesce(t.duplicates, [])) > 0
           OR (s.nights_seen_after > 0 AND s.last_after - a.accepted_night > $grace) AS needs_person
FROM accepted a JOIN seen s USING (lesson_id) LEFT JOIN twins t USING (lesson_id)
ORDER BY needs_person DESC, a.lesson_id;
