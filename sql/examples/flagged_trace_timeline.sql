-- title: The timeline of one flagged trace
-- description: A trace event by event, with the detectors that flagged each event or the whole trace.
-- columns: seq, ts, type, tool_name, status, detectors, trace_detectors, content
-- parameters: $trace_id: the trace to show (default: the trace with the most detections)
SELECT seq, ts, type, tool_name, status, detectors, trace_detectors, content
FROM trace_timeline
WHERE trace_id = coalesce($trace_id::VARCHAR,
                          (SELECT trace_id FROM detections GROUP BY trace_id ORDER BY count(*) DESC, trace_id LIMIT 1))
ORDER BY seq;
