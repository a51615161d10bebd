-- Load, only with a merge batch (batch.run_batch with only_traces): a trace the merge batch gathered
-- whole is taken from it alone; the parts of it that other batches staged are not traces of their own.
-- Replaces the views of load/staged.sql that hold rows of traces.
-- Variables: lw_merge_batch (VARCHAR): the merge batch's folder, one of lw_batches.
CREATE OR REPLACE TEMP MACRO lw_staged_whole(output) AS TABLE
    SELECT * FROM lw_staged(output)
    WHERE batch = getvariable('lw_merge_batch')
       OR trace_id NOT IN (SELECT trace_id FROM read_parquet(getvariable('lw_merge_batch') || '/traces.parquet'));

CREATE OR REPLACE TEMP VIEW staged_traces AS FROM lw_staged_whole('traces');
CREATE OR REPLACE TEMP VIEW staged_trace_records AS FROM lw_staged_whole('trace_records');
CREATE OR REPLACE TEMP VIEW staged_events AS FROM lw_staged_whole('events');
CREATE OR REPLACE TEMP VIEW staged_turns AS FROM lw_staged_whole('turns');
CREATE OR REPLACE TEMP VIEW staged_detections AS FROM lw_staged_whole('detections');
