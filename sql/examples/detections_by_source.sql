-- title: Detections by source
-- description: Which producers (agents, services) trip which detectors, with the traces and lessons behind the counts.
-- columns: source, detector, detections, traces, lessons
-- parameters: $source: only this source (default: every source)
SELECT source, detector, detections, traces, lessons
FROM detections_by_source
WHERE $source::VARCHAR IS NULL OR source = $source::VARCHAR
ORDER BY detections DESC, source, detector;
