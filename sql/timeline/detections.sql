-- The detections of the traces $traces (a list of trace ids), to mark each at the event it points to
-- (`seq`; NULL for a finding about the whole trace), in the order a timeline shows them. `lesson_id`
-- only when a lesson holds the finding; `below_floor` when it is a one-off below the noise floor.
SELECT trace_id, seq, detector, severity, problem,
       CASE WHEN lesson_id IN (SELECT lesson_id FROM lessons) THEN lesson_id END AS lesson_id,
       lesson_id IS NOT NULL AND lesson_id NOT IN (SELECT lesson_id FROM lessons) AS below_floor
FROM detections
WHERE trace_id IN (SELECT unnest($traces::VARCHAR[]))
ORDER BY trace_id, seq NULLS FIRST, detector, detections.lesson_id;
