-- Stage, read: the first records of each file that are not JSON, whose reject gets a precise parser
-- message (read.json_error_reason), as (file_id, line, record, doc, nth).
-- Parameters: $limit (INTEGER): how many per file.
SELECT file_id, line, record, doc,
       row_number() OVER (PARTITION BY file_id ORDER BY record) AS nth
FROM records WHERE kind = 'INVALID'
QUALIFY nth <= $limit;
