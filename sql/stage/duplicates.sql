-- Adapt: one copy of a trace delivered more than once. A later identical copy (the same JSON however it
-- was spaced) is dropped, its record still counted as loaded with the trace; a later copy with other
-- content is rejected as a conflicting duplicate, and the first one wins.
-- Parameters: none.
CREATE OR REPLACE TEMP TABLE later_copies AS
SELECT t.file_id, t.record, t.trace_id, fl.path AS first_file, json(r.doc) = json(r0.doc) AS identical
FROM (
    SELECT file_id, record, trace_id,
           first_value(file_id) OVER w AS first_file_id, first_value(record) OVER w AS first_record,
           row_number() OVER w AS nth
    FROM traces WINDOW w AS (PARTITION BY trace_id ORDER BY file_id, record)
) t
JOIN records r USING (file_id, record)
JOIN records r0 ON r0.file_id = t.first_file_id AND r0.record = t.first_record
JOIN files fl ON fl.file_id = t.first_file_id
WHERE t.nth > 1;

INSERT INTO rejects
SELECT c.file_id, r.line, c.record, 'conflicting duplicate of trace_id ' || c.trace_id || ' from ' || c.first_file
FROM later_copies c JOIN records r USING (file_id, record) WHERE NOT c.identical;

DELETE FROM record_traces
WHERE EXISTS (SELECT 1 FROM later_copies c WHERE c.file_id = record_traces.file_id
              AND c.record = record_traces.record AND NOT c.identical);
DELETE FROM events WHERE EXISTS (SELECT 1 FROM later_copies c
                                 WHERE c.file_id = events.file_id AND c.record = events.record);
DELETE FROM traces WHERE EXISTS (SELECT 1 FROM later_copies c
                                 WHERE c.file_id = traces.file_id AND c.record = traces.record);
DROP TABLE later_copies;
