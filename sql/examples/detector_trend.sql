-- title: Detections per night and detector
-- description: What each detector found, night by night (from the runs' sightings), latest night first.
-- columns: night, detector, occurrences, traces
-- parameters: $detector: only this detector (default: every detector)
SELECT night, detector, occurrences, traces
FROM detector_trend
WHERE $detector::VARCHAR IS NULL OR detector = $detector::VARCHAR
ORDER BY night DESC, occurrences DESC, detector;
