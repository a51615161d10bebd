-- Stage, read: the table rejects (file_id, line, record, reason), first with the records that are
-- JSON but not an object. Lines that are not UTF-8 and records that are not JSON follow from read.py.
CREATE OR REPLACE TABLE rejects (file_id BIGINT, line BIGINT, record BIGINT, reason VARCHAR);

INSERT INTO rejects
SELECT file_id, line, record,
       'not a JSON object (got ' || CASE kind
           WHEN 'ARRAY' THEN 'an array' WHEN 'VARCHAR' THEN 'a string' WHEN 'BOOLEAN' THEN 'a boolean'
           WHEN 'NULL' THEN 'null' ELSE 'a number' END || ')'
FROM records WHERE kind NOT IN ('OBJECT', 'INVALID');
