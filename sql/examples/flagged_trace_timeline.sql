-- title: The timeline of one flagged trace
-- description: A trace event by event, with the detectors that flagged each event or the whole trace. Picks the trace with the most detections; put a trace id in its place to see another.
-- columns: seq, ts, type, tool_name, status, detectors, trace_detectors, content
SELECT seq, ts, type, tool_name, status, detectors, trace_detectors, content
FROM trace_timeline
WHERE trace_id = (SELECT trace_id FROM detections GROUP BY trace_id ORDER BY count(*) DESC, trace_id LIMIT 1)  -- or 'cod-0001'
ORDER BY seq;
