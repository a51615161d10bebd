-- Load, after the counts: drop the load's temporary tables, views and variables.
DROP TABLE held; DROP TABLE fates; DROP TABLE fate_records; DROP TABLE file_accounts;
DROP TABLE batch_files; DROP TABLE batch_quarantine; DROP TABLE changed_files; DROP TABLE replaced;
DROP TABLE not_new;
DROP VIEW staged_traces; DROP VIEW staged_trace_records; DROP VIEW staged_events; DROP VIEW staged_turns;
DROP VIEW staged_detections;
DROP VIEW staged_quarantine; DROP VIEW staged_sealed; DROP VIEW staged_rejects; DROP VIEW staged_files;
DROP MACRO TABLE IF EXISTS lw_staged_whole; DROP MACRO TABLE lw_staged;
RESET VARIABLE lw_batches; RESET VARIABLE lw_merge_batch;
