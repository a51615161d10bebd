-- Adapt, last step: which trace each record went into. Returns whether some trace was delivered more
-- than once (then stage/duplicates.sql settles it).
-- Parameters: none.
CREATE OR REPLACE TABLE record_traces AS
SELECT DISTINCT file_id, record, trace_id FROM (
    SELECT file_id, record, trace_id FROM traces
    UNION ALL SELECT file_id, record, trace_id FROM record_links
    UNION ALL SELECT file_id, record, trace_id FROM events
);

SELECT count(*) <> count(DISTINCT trace_id) FROM traces;
