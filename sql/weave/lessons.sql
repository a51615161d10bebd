-- Weave, last: rebuild `lessons` from every detection: one row per cause that clears the noise floor, with
-- its lifecycle status (new, regressed, recurring, open, resolved: see lessons.py), what worked, how far
-- it reaches and its priority; and `lesson_tenants`, each lesson as each tenant sees it. Ends with
-- (lessons new in this run and not rejected, lessons in all, findings below the floor).
-- Parameters: $night (DATE): the night the statuses are as of (the run's night, or a newer one an
--   earlier run counted for); $resolve_after (INTEGER): nights without a sighting before a lesson is
--   resolved; $severities (VARCHAR[]): the severities, lowest first; $title_chars (INTEGER): how long
--   a title may be.
-- Leaves the temp tables previous_lessons (the lessons before the rebuild), woven and causes.
CREATE OR REPLACE TEMP TABLE previous_lessons AS SELECT lesson_id FROM lessons;

DELETE FROM lessons;
DELETE FROM lesson_tenants;

-- Every finding with what the lesson is built from. The representative finding of a cause (its texts,
-- detector, source and tool) is the earliest one that says what worked, else the earliest: `pick` orders
-- them, to the last tie. Findings of one night tie on time and go by where their trace starts in its file,
-- then by its content (its hash), not its id: the id of a trace without one of its own is a hash of its
-- file's path, and the same files read from another folder must make the same lesson.
CREATE OR REPLACE TEMP TABLE woven AS
SELECT d.*, coalesce(t.source, s.source) AS source, t.task, coalesce(t.tenant, s.tenant) AS tenant,
       coalesce(lw_project(t.metadata, t.source), s.project) AS project,
       lw_project(t.metadata, NULL) AS workspace,    -- a project its producer named, not the source's name
       lw_environment(t.metadata) AS environment,
       coalesce(list_position($severities, d.severity) - 1, 2) AS sev_rank,
       -- a person stepped in, and said something: a bare interruption alone says nothing to learn from
       coalesce(((d.detector = 'human_correction' OR d.family = 'human_correction') AND d.recovery_kind IS NOT NULL)
                OR d.recovery_kind = 'correction', false) AS human,
       {'unrecovered': CASE WHEN d.recovery_kind IN ('changed', 'other', 'again', 'correction') THEN 0 ELSE 1 END,
        'at': d.detected_at, 'line': t.line, 'content': coalesce(t.content_hash, d.trace_id), 'trace': d.trace_id, 'seq': d.seq,
        'detector': d.detector} AS pick
FROM detections d LEFT JOIN traces t USING (trace_id)
-- a quarantined trace's sealed findings (secret_exposed) come with what sealed_traces keeps of it
LEFT JOIN sealed_traces s ON s.sealed = d.trace_id
WHERE d.lesson_id IS NOT NULL AND (t.trace_id IS NOT NULL OR s.sealed IS NOT NULL);

CREATE OR REPLACE TEMP TABLE causes AS
WITH grouped AS (
    SELECT w.lesson_id,
           any_value(coalesce(w.family, w.detector)) AS family,
           arg_min(w.detector, w.pick) AS detector,  -- the representative finding's
           list_sort(list_distinct(list(w.detector))) AS detectors,
           arg_max(w.severity, w.sev_rank) AS severity,
           arg_min(w.source, w.pick) AS source,
           CASE WHEN count(DISTINCT w.tenant) = 1 THEN any_value(w.tenant) END AS tenant,
           count(DISTINCT w.tenant) AS tenants,
           count(DISTINCT w.source) AS sources,
           list_sort(list_distinct(list(w.project) FILTER (WHERE w.project IS NOT NULL))) AS projects,
           -- the workspace and the environment every finding shares: what the rule is said of
           CASE WHEN count(DISTINCT w.workspace) = 1 AND count(w.workspace) = count(*) THEN any_value(w.workspace) END AS workspace,
           CASE WHEN count(DISTINCT w.environment) = 1 AND count(w.environment) = count(*) THEN any_value(w.environment) END AS environment,
           arg_min(w.tool, w.pick) FILTER (WHERE w.tool IS NOT NULL) AS tool,
           arg_min(k.title, w.pick) AS detector_title,
           arg_min(coalesce(w.category, k.category, 'agent'), w.pick) AS category,
           CASE WHEN bool_or(coalesce(w.confidence, 'certain') = 'certain') THEN 'certain' ELSE 'likely' END AS confidence,
           bool_or(w.human) AS human,
           bool_and(coalesce(w.recovery_kind IN ('changed', 'again', 'other'), false)) AS self_fixed,
           bool_or(NOT coalesce(k.floor, true)) AS unfloored,
           arg_min({'task': w.task, 'problem': coalesce(w.problem, w.evidence), 'lesson': w.lesson,
                    'evidence': w.evidence, 'recovery': w.recovery, 'recovery_kind': w.recovery_kind,
                    'signature': w.signature, 'tool': w.tool, 'title': w.title}, w.pick) AS rep,
           count(*) AS occurrences,
           coalesce(sum(w.wasted_steps), 0) AS wasted_steps,
           min(w.detected_at) AS first_seen,
           max(w.detected_at) AS last_seen
    FROM woven w LEFT JOIN detectors k ON k.detector = w.detector
    GROUP BY w.lesson_id
),
-- arg_min of a struct takes every text from one finding: where the representative lacks one, it comes
-- from the first finding (in the same order) that has it. These lessons are few.
filled AS (
    SELECT w.lesson_id,
           arg_min(w.task, w.pick) AS task, arg_min(coalesce(w.problem, w.evidence), w.pick) AS problem,
           arg_min(w.lesson, w.pick) AS lesson, arg_min(w.evidence, w.pick) AS evidence
    FROM woven w SEMI JOIN (SELECT lesson_id FROM grouped
                           WHERE rep.task IS NULL OR rep.problem IS NULL OR rep.lesson IS NULL OR rep.evidence IS NULL) USING (lesson_id)
    GROUP BY w.lesson_id
),
traces_of AS (
    SELECT lesson_id, count(*) AS trace_count, min(trace_id, 5) AS example_trace_ids  -- five examples
    FROM (SELECT DISTINCT lesson_id, trace_id FROM woven)
    GROUP BY lesson_id
),
variants_of AS (
    SELECT lesson_id, count(*) AS variants
    FROM (SELECT DISTINCT lesson_id, variant_id FROM woven WHERE variant_id IS NOT NULL)
    GROUP BY lesson_id
)
SELECT g.* REPLACE ({'task': coalesce(g.rep.task, f.task), 'problem': coalesce(g.rep.problem, f.problem),
                     'lesson': coalesce(g.rep.lesson, f.lesson), 'evidence': coalesce(g.rep.evidence, f.evidence),
                     'recovery': g.rep.recovery, 'recovery_kind': g.rep.recovery_kind, 'signature': g.rep.signature,
                     'tool': g.rep.tool, 'title': g.rep.title} AS rep),
       t.trace_count, t.example_trace_ids, coalesce(v.variants, 0) AS variants,
       -- the noise floor: a cause met in one trace with no person involved, not critical and not of a
       -- detector whose findings are always lessons (`floor: none`), is findings, not a lesson (they stay
       -- in detections) when it is a one-off of little cost (one finding, three wasted calls or fewer), a
       -- slip the agent fixed itself at once (three findings or fewer, each followed by a call that
       -- worked, three wasted calls or fewer in all), or the environment failing in that one trace (an
       -- outage is that night's incident; met in several traces, it is a lesson for operators), or of low
       -- or info severity (what a detector calls the normal course of such a run: a coding run's edit, run,
       -- read the error, edit; met in several traces, it is a lesson)
       -- A cause met in one session is a lesson only when a person corrected the agent (human) or it is of
       -- high severity or above: what recurs is what is worth writing down
       NOT (t.trace_count = 1 AND NOT g.human AND g.severity <> 'critical' AND NOT g.unfloored
            AND (g.severity IN ('info', 'low', 'medium')
                 OR (g.occurrences = 1 AND g.wasted_steps <= 3)
                 OR (g.self_fixed AND g.occurrences <= 3 AND g.wasted_steps <= 3)
                 OR g.category = 'environment')) AS listed
FROM grouped g JOIN traces_of t USING (lesson_id) LEFT JOIN variants_of v USING (lesson_id)
LEFT JOIN filled f USING (lesson_id);

INSERT INTO lessons BY NAME
WITH nights AS (
    SELECT lesson_id, min(night) AS first_night, max(night) AS last_night,
           count(DISTINCT night) AS nights_seen,
           max(night) FILTER (WHERE night < $night) AS previous_night
    FROM sightings WHERE lesson_id IS NOT NULL AND night <= $night
    GROUP BY lesson_id
),
lifecycle AS (
    SELECT c.lesson_id, c.family, c.detector, c.detectors, c.severity, c.source, c.rep.task AS task, c.tenant,
           c.tenants, c.sources, c.projects, c.tool, c.category, c.confidence, c.human, c.environment,
           -- a title from structured parts: the detector's title and what the finding says, short
           lw_clip(coalesce(c.rep.title, coalesce(c.detector_title, c.detector) || ': ' || lw_first_line(c.rep.evidence, $title_chars)),
                   $title_chars) AS title,
           c.rep.problem AS problem, c.situated AS proposed_lesson, c.rep.evidence AS evidence,
           c.rep.signature AS signature, c.rep.recovery AS recovery, c.rep.recovery_kind AS recovery_kind,
           c.example_trace_ids, c.occurrences, c.trace_count, c.variants, c.wasted_steps,
           lw_frequency(c.occurrences, c.trace_count, len(c.projects)) AS frequency,
           c.first_seen, c.last_seen,
           n.first_night, n.last_night, n.nights_seen,
           CASE
             WHEN n.last_night = $night AND n.first_night = $night THEN 'new'
             WHEN n.last_night = $night AND $night - n.previous_night - 1 >= $resolve_after THEN 'regressed'
             WHEN n.last_night = $night THEN 'recurring'  -- seen tonight, and before
             WHEN $night - n.last_night >= $resolve_after THEN 'resolved'
             ELSE 'open'  -- not seen tonight: never "recurring"
           END AS status,
           coalesce(r.decision, 'pending') AS review,
           coalesce(r.text, c.situated) AS lesson,
           $night - coalesce(n.last_night, $night) AS nights_since
    FROM (SELECT *,
                 -- the rule says where it holds: the project its sessions share, and for a tool's or the
                 -- environment's failure the environment they ran in (a person's correction says its own)
                 lw_situated(rep.lesson, workspace, CASE WHEN (tool IS NOT NULL AND NOT human) OR category = 'environment'
                                                         THEN environment END) AS situated
          FROM causes) c
    LEFT JOIN nights n USING (lesson_id) LEFT JOIN reviews r USING (lesson_id)
    WHERE c.listed
)
-- Priority: what the cause cost. Severity, category and confidence weights, times its reach (traces
-- above all, then occurrences, calls wasted before something worked, projects and nights seen), times
-- 3 when a person had to step in across sessions (1.5 in one): the corrections users most want written
-- down; and times 2 for any cause seen in two sessions or more, so what recurs ranks above what was seen once. Halved for every 7 nights it has not been seen. An environment problem (an expired key, a
-- provider outage) is a lesson for operators, ranked below; an inferred finding below a recorded one.
SELECT * EXCLUDE (nights_since),
       round((CASE severity WHEN 'info' THEN 0.5 WHEN 'low' THEN 1 WHEN 'medium' THEN 2 WHEN 'high' THEN 3
                            WHEN 'critical' THEN 5 ELSE 1 END)
             * (CASE category WHEN 'agent' THEN 1.0 WHEN 'policy' THEN 1.0 WHEN 'producer_flag' THEN 0.9
                              WHEN 'environment' THEN 0.5 ELSE 1 END)
             * (CASE confidence WHEN 'certain' THEN 1.0 WHEN 'likely' THEN 0.6 ELSE 1 END)
             * (2 * ln(1 + trace_count) + ln(1 + occurrences) + 0.5 * ln(1 + wasted_steps)
                + ln(greatest(len(projects), 1)) + 0.5 * ln(greatest(coalesce(nights_seen, 1), 1)))
             * (CASE WHEN human AND trace_count >= 2 THEN 3 WHEN human THEN 1.5 ELSE 1 END)
             * (CASE WHEN trace_count >= 2 THEN 2 ELSE 1 END)
             * pow(0.5, nights_since / 7.0), 3) AS priority
FROM lifecycle;

-- Each lesson as each tenant sees it: that tenant's findings only (traces without a tenant have none).
INSERT INTO lesson_tenants BY NAME
WITH mine AS (
    SELECT w.lesson_id, w.tenant,
           arg_min({'problem': coalesce(w.problem, w.evidence), 'lesson': w.lesson, 'evidence': w.evidence,
                    'recovery': w.recovery, 'title': w.title}, w.pick) AS rep,
           count(*) AS occurrences, count(DISTINCT w.trace_id) AS trace_count,
           list_sort(list_distinct(list(w.trace_id)))[1:5] AS example_trace_ids,
           count(DISTINCT w.project) AS projects,
           CASE WHEN count(DISTINCT w.workspace) = 1 AND count(w.workspace) = count(*) THEN any_value(w.workspace) END AS workspace,
           CASE WHEN count(DISTINCT w.environment) = 1 AND count(w.environment) = count(*) THEN any_value(w.environment) END AS environment,
           min(w.detected_at) AS first_seen, max(w.detected_at) AS last_seen
    FROM woven w SEMI JOIN lessons l USING (lesson_id)
    WHERE w.tenant IS NOT NULL
    GROUP BY w.lesson_id, w.tenant
)
SELECT m.lesson_id, m.tenant,
       lw_clip(coalesce(m.rep.title, coalesce(k.title, l.detector) || ': ' || lw_first_line(m.rep.evidence, $title_chars)),
               $title_chars) AS title,
       m.rep.problem AS problem,
       lw_situated(m.rep.lesson, m.workspace, CASE WHEN (l.tool IS NOT NULL AND NOT l.human) OR l.category = 'environment'
                                                   THEN m.environment END) AS proposed_lesson,
       m.rep.evidence AS evidence, m.rep.recovery AS recovery,
       m.example_trace_ids, m.occurrences, m.trace_count, lw_frequency(m.occurrences, m.trace_count, m.projects) AS frequency,
       m.first_seen, m.last_seen
FROM mine m JOIN lessons l USING (lesson_id) LEFT JOIN detectors k ON k.detector = l.detector;

SELECT count(*) FILTER (WHERE status = 'new' AND review <> 'rejected'
                         AND lesson_id NOT IN (SELECT lesson_id FROM previous_lessons)),
       count(*),
       (SELECT count(*) FROM woven SEMI JOIN causes c ON c.lesson_id = woven.lesson_id AND NOT c.listed)
FROM lessons;
