-- Redetect: the stored detections of the detectors run again ($detectors) replaced by their new ones (the
-- temp table redetected, detectors.detect over the stored traces), and the stored turns by the turns read
-- again, in the caller's transaction. A trace
-- none of whose events are stored (dropped by --retain-days) keeps its detections: the detectors could
-- not see it. A new detection counts for the run that loaded its trace, at that time, so it joins the
-- night its trace came in; it joins the lesson its variant already belongs to, if any (the weave places
-- the others). Ends with the number of detections kept (of traces the detectors could not see); leaves
-- the temp tables seen_traces and redetect_kept.
-- Parameters: $detectors (VARCHAR[]): the ids of the detectors run again.
CREATE OR REPLACE TEMP TABLE seen_traces AS SELECT DISTINCT trace_id FROM events;

CREATE OR REPLACE TEMP TABLE redetect_kept AS
SELECT count(*) AS kept FROM detections
WHERE list_contains($detectors, detector) AND trace_id NOT IN (SELECT trace_id FROM seen_traces);

DELETE FROM detections
WHERE list_contains($detectors, detector) AND trace_id IN (SELECT trace_id FROM seen_traces);

INSERT INTO detections BY NAME
SELECT r.detector, r.trace_id, r.event_id, r.seq, r.severity, r.evidence, r.problem, r.lesson,
       r.lesson_id AS variant_id, coalesce(v.lesson_id, r.lesson_id) AS lesson_id,
       r.category, r.confidence, r.signature, r.family, r.tool, r.recovery, r.recovery_kind, r.wasted_steps, r.title,
       t.run_id, t.loaded_at AS detected_at
FROM redetected r JOIN traces t USING (trace_id)
LEFT JOIN lesson_variants v ON v.variant_id = r.lesson_id
WHERE list_contains($detectors, r.detector) AND r.trace_id IN (SELECT trace_id FROM seen_traces);

-- the turns' meanings, worked out again with the detectors' facts (the temp table redetected_turns)
DELETE FROM turns WHERE trace_id IN (SELECT trace_id FROM seen_traces);
INSERT INTO turns BY NAME
SELECT r.trace_id, r.seq, r.event_id, r.speaker, r.nth, r.words, r.intent, r.reason, r.interrupted, r.agent_asked, r.agent_changed,
       r.agent_conceded, t.run_id
FROM redetected_turns r JOIN traces t USING (trace_id);

SELECT kept FROM redetect_kept;
