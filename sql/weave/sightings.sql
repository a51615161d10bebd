-- Weave: record, per run, which lessons its detections fell into. Detections of a run that died before
-- its weave are recorded by the next run, under the night of that earlier run when it is known.
-- Parameters: $night (DATE): the night of the run weaving.
INSERT INTO sightings
SELECT d.run_id, coalesce(any_value(r.night), any_value(r.started_at)::DATE, $night::DATE),
       d.detector, d.lesson_id, count(*), count(DISTINCT d.trace_id)
FROM detections d LEFT JOIN runs r USING (run_id)
WHERE d.run_id NOT IN (SELECT run_id FROM sightings)
GROUP BY d.run_id, d.detector, d.lesson_id;
