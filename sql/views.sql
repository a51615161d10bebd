-- Convenience views for ad-hoc exploration (documented in docs/tables.md, "Views").
-- Created on every read-write open, after schema.sql and macros.sql; every statement is idempotent.
-- Views hold no data: they read the tables as they are at query time.

-- One row per lesson per night it was seen: how often, in how many traces.
CREATE OR REPLACE VIEW lesson_trend AS
SELECT s.lesson_id, l.title, l.detector, l.status, s.night,
       sum(s.occurrences)::BIGINT AS occurrences,
       sum(s.traces)::BIGINT AS traces
FROM sightings s JOIN lessons l USING (lesson_id)
GROUP BY s.lesson_id, l.title, l.detector, l.status, s.night;

-- Where detections come from: per producer (traces.source) and detector; `lessons` counts the lessons
-- its findings are in (a one-off below the noise floor is in none).
CREATE OR REPLACE VIEW detections_by_source AS
SELECT t.source, d.detector,
       count(*) AS detections,
       count(DISTINCT d.trace_id) AS traces,
       count(DISTINCT d.lesson_id) FILTER (WHERE d.lesson_id IN (SELECT lesson_id FROM lessons)) AS lessons
FROM detections d JOIN traces t USING (trace_id)
GROUP BY t.source, d.detector;

-- A trace event by event, content cut to one line, with the detectors that flagged each event
-- (`detectors`) and those that flagged the trace as a whole (`trace_detectors`, the same on every row).
CREATE OR REPLACE VIEW trace_timeline AS
WITH event_flags AS (
    SELECT trace_id, seq, list_sort(list_distinct(list(detector))) AS detectors
    FROM detections WHERE seq IS NOT NULL
    GROUP BY trace_id, seq
),
trace_flags AS (
    SELECT trace_id, list_sort(list_distinct(list(detector))) AS trace_detectors
    FROM detections WHERE seq IS NULL
    GROUP BY trace_id
)
SELECT e.trace_id, e.seq, e.ts, e.type, e.raw_type, e.tool_name, e.status,
       lw_clip(e.content, 100) AS content,
       coalesce(f.detectors, []::VARCHAR[]) AS detectors,
       coalesce(t.trace_detectors, []::VARCHAR[]) AS trace_detectors
FROM events e
LEFT JOIN event_flags f ON f.trace_id = e.trace_id AND f.seq = e.seq
LEFT JOIN trace_flags t ON t.trace_id = e.trace_id;

-- Per night and detector: what the runs of that night found (opted-out traces included).
CREATE OR REPLACE VIEW detector_trend AS
SELECT night, detector,
       sum(occurrences)::BIGINT AS occurrences,
       sum(traces)::BIGINT AS traces
FROM sightings
GROUP BY night, detector;

-- The lessons as tenant `t` sees them (every lesson when `t` is NULL): a lesson is shared by the tenants
-- whose traces showed its cause, but its texts, examples and counts come from `t`'s own findings
-- (lesson_tenants), so nothing of one tenant reaches another's report. A reviewer's edited text is shown
-- to all.
CREATE OR REPLACE MACRO lessons_for(t) AS TABLE
SELECT l.* REPLACE (
           CASE WHEN t IS NULL THEN l.title ELSE x.title END AS title,
           CASE WHEN t IS NULL THEN l.problem ELSE x.problem END AS problem,
           CASE WHEN t IS NULL OR l.lesson IS DISTINCT FROM l.proposed_lesson THEN l.lesson ELSE x.proposed_lesson END AS lesson,
           CASE WHEN t IS NULL THEN l.proposed_lesson ELSE x.proposed_lesson END AS proposed_lesson,
           CASE WHEN t IS NULL THEN l.evidence ELSE x.evidence END AS evidence,
           CASE WHEN t IS NULL THEN l.recovery ELSE x.recovery END AS recovery,
           CASE WHEN t IS NULL THEN l.example_trace_ids ELSE x.example_trace_ids END AS example_trace_ids,
           CASE WHEN t IS NULL THEN l.occurrences ELSE x.occurrences END AS occurrences,
           CASE WHEN t IS NULL THEN l.trace_count ELSE x.trace_count END AS trace_count,
           CASE WHEN t IS NULL THEN l.frequency ELSE x.frequency END AS frequency,
           CASE WHEN t IS NULL THEN l.tenant ELSE t END AS tenant)
FROM lessons l LEFT JOIN lesson_tenants x ON x.lesson_id = l.lesson_id AND x.tenant = t
WHERE t IS NULL OR x.lesson_id IS NOT NULL;
