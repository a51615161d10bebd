-- Adapt: the view an adapter reads, the records of the format in the variable `lw_format` (set before
-- each adapter runs; a view cannot take parameters).
-- Parameters: none.
CREATE OR REPLACE TEMP VIEW records_in AS
SELECT r.file_id, fl.path AS file, r.line, r.record, r.doc
FROM records r JOIN file_formats ff USING (file_id) JOIN files fl USING (file_id)
WHERE ff.format = getvariable('lw_format');
