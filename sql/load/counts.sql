-- Load, last: what the load did, one row whose columns are named like the fields of store.LoadCounts
-- (but the events', which come from the files eventstore.write wrote).
-- Parameters: $run_id (VARCHAR): the run loading.
WITH file_counts AS (
    SELECT count(*) FILTER (WHERE NOT skipped) AS files_read, count(*) FILTER (WHERE skipped) AS files_skipped,
           coalesce(sum(records), 0) AS records, coalesce(sum(loaded), 0) AS records_loaded,
           coalesce(sum(quarantined), 0) AS records_quarantined, coalesce(sum(rejected), 0) AS records_rejected,
           coalesce(sum(unaccounted), 0) AS records_unaccounted
    FROM file_accounts
),
trace_counts AS (
    SELECT (SELECT count(*) FROM traces WHERE run_id = $run_id) AS traces_loaded,
           count(*) FILTER (WHERE fate = 'duplicate') AS traces_duplicate,
           count(*) FILTER (WHERE fate = 'conflict') AS traces_conflicting
    FROM fates
),
quarantine_counts AS (
    SELECT count(DISTINCT trace_id) AS traces_quarantined FROM quarantine WHERE run_id = $run_id
),
detection_counts AS (
    SELECT count(*) AS detections FROM detections WHERE run_id = $run_id
)
SELECT * FROM file_counts, trace_counts, quarantine_counts, detection_counts
