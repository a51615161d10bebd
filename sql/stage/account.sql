-- Stage: account for every record of every file of the batch: loaded, quarantined or rejected,
-- exactly once (or unaccounted, which the load reports). Leaves the table file_accounts.
CREATE OR REPLACE TABLE file_accounts AS
WITH fate AS (
    SELECT r.file_id, r.record,
           CASE WHEN j.record IS NOT NULL THEN 'rejected'
                WHEN bool_or(q.trace_id IS NOT NULL) THEN 'quarantined'
                WHEN bool_or(t.trace_id IS NOT NULL) THEN 'loaded'
                ELSE 'unaccounted' END AS fate
    FROM (SELECT file_id, record FROM records
          UNION SELECT file_id, record FROM rejects) r
    LEFT JOIN (SELECT DISTINCT file_id, record FROM rejects) j USING (file_id, record)
    LEFT JOIN record_traces rt USING (file_id, record)
    LEFT JOIN quarantine q ON q.trace_id = rt.trace_id
    LEFT JOIN (SELECT DISTINCT trace_id FROM traces) t ON t.trace_id = rt.trace_id
    GROUP BY r.file_id, r.record, j.record
)
SELECT fl.path, fl.content_hash, fl.size, fl.mtime, ff.format, fl.skipped, fl.note,
       count(fate.record) AS records,
       count(*) FILTER (WHERE fate = 'loaded') AS loaded,
       count(*) FILTER (WHERE fate = 'quarantined') AS quarantined,
       count(*) FILTER (WHERE fate = 'rejected') AS rejected,
       count(*) FILTER (WHERE fate = 'unaccounted') AS unaccounted
FROM files fl LEFT JOIN file_formats ff USING (file_id) LEFT JOIN fate USING (file_id)
GROUP BY ALL;
