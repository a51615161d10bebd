-- Adapt, first step: the first $records records of each file, which decide its format (an adapter then
-- judges every record), and the table each adapter's match fills (stage/sniff_match.sql).
-- Parameters: $records (INTEGER): records sampled per file.
CREATE OR REPLACE TEMP TABLE sample AS
SELECT file_id, record, doc FROM records
QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY record) <= $records;

CREATE OR REPLACE TEMP TABLE sniffed (file_id BIGINT, record BIGINT, fmt VARCHAR, rank INTEGER);
