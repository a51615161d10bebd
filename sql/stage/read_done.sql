-- Stage, read, last: reject the records that are not JSON beyond the first $limit of a file (plainly
-- 'invalid JSON'), keep only objects in records, and note a file with no valid JSON at all.
-- Parameters: $limit (INTEGER): the records per file that read_invalid.sql gave a message.
INSERT INTO rejects
SELECT file_id, line, record, 'invalid JSON' FROM (
    SELECT file_id, line, record, row_number() OVER (PARTITION BY file_id ORDER BY record) AS nth
    FROM records WHERE kind = 'INVALID'
) WHERE nth > $limit;

-- What is left is valid JSON text, checked above: no second parse downstream.
DELETE FROM records WHERE kind <> 'OBJECT';
ALTER TABLE records DROP COLUMN kind;

UPDATE files SET note = coalesce(note || '; ', '') || 'no valid JSON in the file: is it a trace file?'
WHERE file_id IN (SELECT file_id FROM rejects GROUP BY file_id
                  HAVING bool_and(starts_with(reason, 'invalid JSON') OR starts_with(reason, 'not valid UTF-8')))
  AND file_id NOT IN (SELECT file_id FROM records);
