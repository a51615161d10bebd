-- Load: the staged events of new traces in the batches whose events file is not moved into the store
-- whole (store._store_events, which defines the view load_events over those batches), as
-- eventstore.write takes them. As with detections, leaving out the few traces that are not new keeps
-- exactly the new ones' events.
-- Parameters: none.
SELECT e.trace_id, e.seq, e.event_id, e.type, e.raw_type, e.content, e.status, e.success,
       e.tool_name, e.ts, e.parent_id, e.metadata, e.extra, e.actor
FROM load_events e ANTI JOIN not_new USING (trace_id, batch)
