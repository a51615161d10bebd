-- The traces $traces (a list of trace ids) as their timelines' headings show them (lessonweaver/timeline.py).
SELECT trace_id, source, task, outcome, started_at
FROM traces
WHERE trace_id IN (SELECT unnest($traces::VARCHAR[]));
