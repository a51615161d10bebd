-- Load, first: the batches' Parquet outputs as views, staged_<output> for each output a batch writes
-- (batch.OUTPUTS), every row with its batch's folder as `batch`.
-- A view takes no parameters, so the folders come from a variable (SET VARIABLE, see store.py):
--   lw_batches (VARCHAR[]): the folder of every batch of the load, the merge batch among them.
CREATE OR REPLACE TEMP MACRO lw_staged(output) AS TABLE
    SELECT * EXCLUDE (filename), parse_dirpath(filename) AS batch
    FROM read_parquet(list_transform(getvariable('lw_batches'), lambda f: f || '/' || output || '.parquet'),
                      filename = true);

CREATE OR REPLACE TEMP VIEW staged_traces AS FROM lw_staged('traces');
CREATE OR REPLACE TEMP VIEW staged_trace_records AS FROM lw_staged('trace_records');
CREATE OR REPLACE TEMP VIEW staged_events AS FROM lw_staged('events');
CREATE OR REPLACE TEMP VIEW staged_turns AS FROM lw_staged('turns');
CREATE OR REPLACE TEMP VIEW staged_detections AS FROM lw_staged('detections');
CREATE OR REPLACE TEMP VIEW staged_quarantine AS FROM lw_staged('quarantine');
CREATE OR REPLACE TEMP VIEW staged_sealed AS FROM lw_staged('sealed');
CREATE OR REPLACE TEMP VIEW staged_rejects AS FROM lw_staged('rejects');
CREATE OR REPLACE TEMP VIEW staged_files AS FROM lw_staged('files');
