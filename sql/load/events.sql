-- Load: the staged events of new traces, as store._load hands them to eventstore.write, which writes
-- them to the run's event files. As with detections, leaving out the few traces that are not new keeps
-- exactly the new ones' events.
-- Parameters: none.
SELECT e.trace_id, e.seq, e.event_id, e.type, e.raw_type, e.content, e.status, e.success,
       e.tool_name, e.ts, e.parent_id, e.metadata, e.extra
FROM staged_events e ANTI JOIN not_new USING (trace_id, batch)
