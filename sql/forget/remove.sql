-- Forget: every row of the traces in forget_ids, but their events (eventstore.remove takes those out of
-- the event files first); the rejects that name one (a conflicting duplicate's reason does); and a hash
-- of each id in `forgotten`, so that a trace delivered again is not stored again.
-- Parameters: none.
DELETE FROM detections WHERE trace_id IN (SELECT trace_id FROM forget_ids);
DELETE FROM turns WHERE trace_id IN (SELECT trace_id FROM forget_ids);
DELETE FROM detections WHERE trace_id IN (SELECT sealed FROM sealed_traces SEMI JOIN forget_ids USING (trace_id));
DELETE FROM sealed_traces WHERE trace_id IN (SELECT trace_id FROM forget_ids);
DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM forget_ids);
DELETE FROM quarantine WHERE trace_id IN (SELECT trace_id FROM forget_ids);
DELETE FROM rejects WHERE EXISTS (
    SELECT 1 FROM forget_ids f
    WHERE contains(rejects.reason, 'trace_id ' || f.trace_id || ' ') OR contains(rejects.reason, 'of trace ' || f.trace_id || ' '));

INSERT INTO forgotten
SELECT sha256(trace_id), min(asked_by), now()::TIMESTAMP FROM forget_ids GROUP BY trace_id;

DROP TABLE forget_ids;
