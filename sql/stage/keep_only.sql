-- Stage, a merge batch only (batch.run_batch with only_traces): keep the traces it was staged again
-- for, and account for no record (the first batches did).
-- Parameters: $trace_ids (VARCHAR[]): the traces to keep.
CREATE OR REPLACE TEMP TABLE keep AS SELECT unnest($trace_ids::VARCHAR[]) AS trace_id;
DELETE FROM traces WHERE trace_id NOT IN (SELECT trace_id FROM keep);
DELETE FROM events WHERE trace_id NOT IN (SELECT trace_id FROM keep);
DELETE FROM detections WHERE trace_id NOT IN (SELECT trace_id FROM keep);
DELETE FROM turns WHERE trace_id NOT IN (SELECT trace_id FROM keep);
DELETE FROM quarantine WHERE trace_id NOT IN (SELECT trace_id FROM keep);
DELETE FROM record_traces WHERE trace_id NOT IN (SELECT trace_id FROM keep);
DELETE FROM rejects; DELETE FROM file_accounts; DROP TABLE keep;
