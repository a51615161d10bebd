-- Load: each file's account, corrected for the records of conflicting, forgotten or held-back traces (their
-- batch counted them as loaded), into ingested_files.
-- Parameters: $run_id (VARCHAR): the run loading. Leaves the temp table file_accounts.
CREATE OR REPLACE TEMP TABLE file_accounts AS
SELECT b.* REPLACE (
           b.loaded - coalesce(m.conflicts, 0) - coalesce(m.held, 0) AS loaded,
           b.quarantined + coalesce(m.held, 0) AS quarantined,
           b.rejected + coalesce(m.conflicts, 0) AS rejected)
FROM batch_files b
LEFT JOIN (SELECT file, count(*) FILTER (WHERE fate IN ('conflict', 'forgotten')) AS conflicts,
                  count(*) FILTER (WHERE fate = 'held_back') AS held
           FROM fate_records GROUP BY file) m ON m.file = b.path;

INSERT INTO ingested_files BY NAME
SELECT path, content_hash, size, mtime, format, records, loaded, quarantined, rejected, note,
       $run_id::VARCHAR AS run_id, now()::TIMESTAMP AS ingested_at
FROM file_accounts
WHERE NOT starts_with(coalesce(note, ''), 'could not read file');  -- unread: the next run tries again
