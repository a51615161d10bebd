-- Quarantine after the load (store.quarantine_loaded), first: the traces to move, the records that
-- made them, and what moves, as one row (traces, records, detections).
-- Parameters: $trace_ids, $reasons (VARCHAR[]): each trace and why it is quarantined;
--   $records (VARCHAR[]): the trace_records.parquet of each of the run's batches.
-- Leaves the temp tables late and late_records.
CREATE OR REPLACE TEMP TABLE late AS
SELECT unnest($trace_ids::VARCHAR[]) AS trace_id, unnest($reasons::VARCHAR[]) AS reason;

-- A record counted as loaded becomes quarantined, unless a trace quarantined in its batch had already
-- made it so.
CREATE OR REPLACE TEMP TABLE late_records AS
SELECT file, count(*) AS n FROM (
    SELECT DISTINCT file, record FROM read_parquet($records) SEMI JOIN late USING (trace_id)
    EXCEPT SELECT DISTINCT file, record FROM read_parquet($records) WHERE quarantined
) GROUP BY file;

SELECT (SELECT count(*) FROM late), (SELECT coalesce(sum(n), 0) FROM late_records),
       (SELECT count(*) FROM detections SEMI JOIN late USING (trace_id));
