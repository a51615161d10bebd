-- Weave, after a redetect: the sightings of the detectors run again ($detectors) counted again from their
-- new detections, for every run that still has traces stored (a detection counts for the run that loaded
-- its trace, on that run's night). A run none of whose traces are stored (replaced or forgotten since)
-- keeps what it saw.
-- Parameters: $detectors (VARCHAR[]): the ids of the detectors run again.
CREATE OR REPLACE TEMP TABLE resighted_runs AS SELECT DISTINCT run_id FROM traces;

DELETE FROM sightings
WHERE list_contains($detectors, detector) AND run_id IN (SELECT run_id FROM resighted_runs);

INSERT INTO sightings
SELECT d.run_id, coalesce(any_value(r.night), any_value(r.started_at)::DATE), d.detector, d.lesson_id,
       count(*), count(DISTINCT d.trace_id)
FROM detections d LEFT JOIN runs r USING (run_id)  -- as weave/sightings.sql counts a run's detections
WHERE list_contains($detectors, d.detector) AND d.run_id IN (SELECT run_id FROM resighted_runs)
GROUP BY d.run_id, d.detector, d.lesson_id;

DROP TABLE resighted_runs;
