-- The detections of the traces $traces (a list of trace ids), to mark each at the event it points to
-- (`seq`; NULL for a finding about the whole trace), in the order a timeline shows them.
SELECT trace_id, seq, detector, severity, problem, lesson_id
FROM detections
WHERE trace_id IN (SELECT unnest($traces::VARCHAR[]))
ORDER BY trace_id, seq NULLS FIRST, detector, lesson_id;
