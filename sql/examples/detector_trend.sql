-- title: Detections per night and detector
-- description: What each detector found, night by night (from the runs' sightings), latest night first.
-- columns: night, detector, occurrences, traces
SELECT night, detector, occurrences, traces
FROM detector_trend
ORDER BY night DESC, occurrences DESC, detector;
