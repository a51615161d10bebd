-- Load: one account per staged file, and out with what earlier runs loaded from a file whose content
-- has changed since (its new content replaces it).
-- Reads the views of load/staged.sql; leaves the temp tables batch_files, changed_files and replaced
-- (whose events store._load then removes from the event files).

-- A large file may have been staged in parts (discover.split_lines): one account per file.
CREATE OR REPLACE TEMP TABLE batch_files AS
SELECT path, any_value(content_hash) AS content_hash, any_value(size) AS size, any_value(mtime) AS mtime,
       min(format) AS format, bool_and(skipped) AS skipped,
       string_agg(DISTINCT note, '; ' ORDER BY note) AS note,
       sum(records) AS records, sum(loaded) AS loaded, sum(quarantined) AS quarantined,
       sum(rejected) AS rejected, sum(unaccounted) AS unaccounted
FROM staged_files GROUP BY path;

CREATE OR REPLACE TEMP TABLE changed_files AS
SELECT DISTINCT i.path FROM ingested_files i JOIN batch_files b ON b.path = i.path
WHERE i.content_hash <> b.content_hash AND NOT b.skipped;

CREATE OR REPLACE TEMP TABLE replaced AS
SELECT trace_id, run_id FROM traces WHERE file IN (SELECT path FROM changed_files);
DELETE FROM detections WHERE trace_id IN (SELECT trace_id FROM replaced);
DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM replaced);
DELETE FROM quarantine WHERE file IN (SELECT path FROM changed_files);
DELETE FROM detections WHERE trace_id IN (SELECT sealed FROM sealed_traces WHERE file IN (SELECT path FROM changed_files));
DELETE FROM sealed_traces WHERE file IN (SELECT path FROM changed_files);
DELETE FROM rejects WHERE file IN (SELECT path FROM changed_files);
DELETE FROM ingested_files WHERE path IN (SELECT path FROM changed_files);
