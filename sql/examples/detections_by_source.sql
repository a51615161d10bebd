-- title: Detections by source
-- description: Which producers (agents, services) trip which detectors, with the traces and lessons behind the counts.
-- columns: source, detector, detections, traces, lessons
SELECT source, detector, detections, traces, lessons
FROM detections_by_source
ORDER BY detections DESC, source, detector;
