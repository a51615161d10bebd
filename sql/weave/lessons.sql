-- Weave, last: rebuild `lessons` from every detection: one row per lesson, with its lifecycle
-- status (new, regressed, recurring, open, resolved: see lessons.py) and its priority. Ends with
-- (lessons new in this run and not rejected, lessons in all).
-- Parameters: $night (DATE): the night the statuses are as of (the run's night, or a newer one an
--   earlier run counted for); $resolve_after (INTEGER): nights without a sighting before a lesson is
--   resolved; $severities (VARCHAR[]): the severities, lowest first; $title_chars (INTEGER): how long
--   a title may be.
-- Leaves the temp table previous_lessons (the lessons before the rebuild).
CREATE OR REPLACE TEMP TABLE previous_lessons AS SELECT lesson_id FROM lessons;

DELETE FROM lessons;

INSERT INTO lessons BY NAME
WITH d AS NOT MATERIALIZED (
    SELECT d.*, t.source, t.task, t.tenant, coalesce(list_position($severities, d.severity) - 1, 2) AS sev_rank
    FROM detections d JOIN traces t USING (trace_id)
    WHERE d.lesson_id IS NOT NULL
),
-- What the earliest detection of a lesson says comes from one arg_min of a struct, and what needs
-- distinct values (traces, variants) is counted apart, over those columns alone: one aggregate with an
-- arg_min per text and sets per lesson took 1.7 times as long, spilling, at a million detections.
grouped AS MATERIALIZED (
    SELECT d.lesson_id,
           any_value(d.detector) AS detector,
           arg_max(d.severity, d.sev_rank) AS severity,
           any_value(d.source) AS source,
           any_value(d.tenant) AS tenant,
           any_value(d.lesson_key) AS lesson_key,
           any_value(k.title) AS detector_title,
           mode(coalesce(d.category, k.category, 'agent')) AS category,
           CASE WHEN bool_or(coalesce(d.confidence, 'certain') = 'certain') THEN 'certain'
                ELSE 'likely' END AS confidence,
           arg_min({'task': d.task, 'problem': coalesce(d.problem, d.evidence), 'lesson': d.lesson,
                    'evidence': d.evidence},
                   (d.detected_at, d.trace_id, d.seq)) AS earliest,
           count(*) AS occurrences,
           min(d.detected_at) AS first_seen,
           max(d.detected_at) AS last_seen
    FROM d LEFT JOIN detectors k ON k.detector = d.detector
    GROUP BY d.lesson_id
),
-- arg_min skips a NULL value: where the earliest detection lacks one of those texts, each is taken
-- from the earliest detection that has it, as if taken one by one. These lessons are few.
filled AS (
    SELECT d.lesson_id,
           arg_min(d.task, (d.detected_at, d.trace_id, d.seq)) AS task,
           arg_min(coalesce(d.problem, d.evidence), (d.detected_at, d.trace_id, d.seq)) AS problem,
           arg_min(d.lesson, (d.detected_at, d.trace_id, d.seq)) AS lesson,
           arg_min(d.evidence, (d.detected_at, d.trace_id, d.seq)) AS evidence
    FROM d SEMI JOIN (SELECT lesson_id FROM grouped
                      WHERE earliest.task IS NULL OR earliest.problem IS NULL OR earliest.lesson IS NULL
                         OR earliest.evidence IS NULL) USING (lesson_id)
    GROUP BY d.lesson_id
),
traces_of AS (
    SELECT lesson_id, count(*) AS trace_count, min(trace_id, 5) AS example_trace_ids  -- five examples
    FROM (SELECT DISTINCT lesson_id, trace_id FROM d)
    GROUP BY lesson_id
),
variants_of AS (
    SELECT lesson_id, count(*) AS variants
    FROM (SELECT DISTINCT lesson_id, variant_id FROM d WHERE variant_id IS NOT NULL)
    GROUP BY lesson_id
),
whole AS (
    SELECT g.lesson_id, g.detector, g.severity, g.source, coalesce(f.task, g.earliest.task) AS task, g.tenant,
           lw_clip(coalesce(g.detector_title, g.detector) || ': '
                   || coalesce(g.lesson_key, f.task, g.earliest.task, '(no task)'), $title_chars) AS title,  -- weave/titles.sql tells alike ones apart
           g.category, g.confidence,
           coalesce(f.problem, g.earliest.problem) AS problem, coalesce(f.lesson, g.earliest.lesson) AS proposed_lesson,
           coalesce(f.evidence, g.earliest.evidence) AS evidence,
           t.example_trace_ids, g.occurrences, t.trace_count, coalesce(v.variants, 0) AS variants,
           g.first_seen, g.last_seen
    FROM grouped g JOIN traces_of t USING (lesson_id) LEFT JOIN variants_of v USING (lesson_id)
    LEFT JOIN filled f USING (lesson_id)
),
nights AS (
    SELECT lesson_id, min(night) AS first_night, max(night) AS last_night,
           count(DISTINCT night) AS nights_seen,
           max(night) FILTER (WHERE night < $night) AS previous_night
    FROM sightings WHERE lesson_id IS NOT NULL AND night <= $night
    GROUP BY lesson_id
),
lifecycle AS (
    SELECT g.*, n.first_night, n.last_night, n.nights_seen,
           CASE
             WHEN n.last_night = $night AND n.first_night = $night THEN 'new'
             WHEN n.last_night = $night AND $night - n.previous_night - 1 >= $resolve_after THEN 'regressed'
             WHEN n.last_night = $night THEN 'recurring'  -- seen tonight, and before
             WHEN $night - n.last_night >= $resolve_after THEN 'resolved'
             ELSE 'open'  -- not seen tonight: never "recurring"
           END AS status,
           coalesce(r.decision, 'pending') AS review,
           coalesce(r.text, g.proposed_lesson) AS lesson,
           $night - coalesce(n.last_night, $night) AS nights_since
    FROM whole g LEFT JOIN nights n USING (lesson_id) LEFT JOIN reviews r USING (lesson_id)
)
-- Priority: severity, category and confidence weights times how often and in how many traces, halved
-- for every 7 nights the lesson has not been seen. A critical problem outranks many low ones; an
-- agent's or a policy's mistake is a lesson for the agent, an environment problem (an expired key, a
-- provider outage) one for operators, ranked below; an inferred finding ranks below one read from a record.
SELECT * EXCLUDE (nights_since),
       round((CASE severity WHEN 'info' THEN 0.5 WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3
                            WHEN 'critical' THEN 5 ELSE 1 END)
             * (CASE category WHEN 'agent' THEN 1.0 WHEN 'policy' THEN 1.0 WHEN 'producer_flag' THEN 0.9
                              WHEN 'environment' THEN 0.5 ELSE 1 END)
             * (CASE confidence WHEN 'certain' THEN 1.0 WHEN 'likely' THEN 0.6 ELSE 1 END)
             * (ln(1 + occurrences) + ln(1 + trace_count))
             * pow(0.5, nights_since / 7.0), 3) AS priority
FROM lifecycle;

SELECT count(*) FILTER (WHERE status = 'new' AND review <> 'rejected'
                         AND lesson_id NOT IN (SELECT lesson_id FROM previous_lessons)),
       count(*)
FROM lessons;
