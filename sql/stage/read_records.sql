-- Stage, read: split each file's text into records, for read.read_files. A file's text comes from
-- DuckDB's own read of the file (plain UTF-8 files, a byte-order mark dropped) or from the checked
-- bytes Python read (incoming_blobs); what is known of each file is in incoming_files.
-- A view takes no parameters, so the files DuckDB reads come from a variable (SET VARIABLE, see read.py):
--   lw_direct_paths (VARCHAR[]): the plain UTF-8 files.
-- Leaves the tables files (file_id, path, content_hash, size, mtime, note, skipped) and
-- records (file_id, line, record, doc, kind).
CREATE OR REPLACE TEMP VIEW incoming_text AS
SELECT i.*, CASE WHEN i.direct THEN
                  CASE WHEN starts_with(t.content, chr(65279)) THEN substr(t.content, 2) ELSE t.content END
                ELSE b.text END AS text
FROM incoming_files i
LEFT JOIN (SELECT filename, content FROM read_text(getvariable('lw_direct_paths'))) t ON i.direct AND t.filename = i.path
LEFT JOIN incoming_blobs b ON b.file_id = i.file_id;

CREATE OR REPLACE TABLE files AS
SELECT file_id, path, content_hash, size, mtime, note, skipped FROM incoming_files;

-- A file is one JSON document (an object, or an array of records) or one record per line.
-- The suffix says which to try first; a pretty-printed .jsonl or a one-array file is still read.
-- JSON functions raise on invalid input, so each is guarded by json_valid inside a CASE.
-- Whole-file texts are only searched (regexp), never trimmed or stored: either copies the whole file.
CREATE OR REPLACE TEMP TABLE file_layouts AS
SELECT file_id, line_offset,
       CASE
         WHEN text IS NULL OR NOT regexp_matches(text, '[^ \t\r\n]') THEN 'empty'
         WHEN hint = 'json' AND json_valid(text) THEN 'document'
         WHEN hint = 'jsonl'
              AND (CASE WHEN json_valid(first_line) THEN json_type(first_line) = 'ARRAY' ELSE true END)
              AND json_valid(text) THEN 'document'
         ELSE 'lines'
       END AS layout
FROM (SELECT *, regexp_extract(text, '^[ \t\r\n]*([^\n]*)', 1) AS first_line FROM incoming_text);

CREATE OR REPLACE TEMP VIEW file_text AS
SELECT file_id, t.text, l.line_offset, l.layout FROM file_layouts l JOIN incoming_text t USING (file_id);

CREATE OR REPLACE TEMP TABLE documents AS
SELECT file_id, text, json_type(text) AS kind FROM file_text WHERE layout = 'document';

-- A trailing \r (CRLF files) is JSON whitespace and needs no trimming. Blank lines are no records.
-- One parse per record says both whether it is JSON and what kind: json_type raises on invalid
-- JSON, and try() turns that into NULL. Records that are not objects are rejected, then deleted.
CREATE OR REPLACE TABLE records AS
SELECT file_id, line, record, text AS doc, kind FROM (
    SELECT file_id, line, record, text,
           coalesce(try(json_type(text)), 'INVALID') AS kind
    FROM (
    SELECT file_id, line, line AS record, text
    FROM (
        SELECT file_id, line_offset + generate_subscripts(parts, 1) AS line, unnest(parts) AS text
        FROM (SELECT file_id, line_offset, string_split(text, E'\n') AS parts FROM file_text WHERE layout = 'lines')
    )
    WHERE length(text) > 0
    UNION ALL
    SELECT file_id, NULL::BIGINT, generate_subscripts(items, 1), CAST(unnest(items) AS VARCHAR)
    FROM (SELECT file_id, json_extract(text, '$[*]') AS items FROM documents WHERE kind = 'ARRAY')
    UNION ALL
    SELECT file_id, 1, 1, text FROM documents WHERE kind <> 'ARRAY'
    )
) WHERE kind <> 'INVALID' OR regexp_matches(text, '[^ \t\r]');

-- A line that is not JSON and starts with // is a comment (JSONC, as some exporters and hand-edited
-- fixtures write): not a record, like a blank line, but counted in the file's note.
CREATE OR REPLACE TEMP TABLE comment_lines AS
SELECT file_id, count(*) AS n FROM records
WHERE kind = 'INVALID' AND line IS NOT NULL AND regexp_matches(doc, '^[ \t]*//') GROUP BY file_id;
DELETE FROM records WHERE kind = 'INVALID' AND line IS NOT NULL AND regexp_matches(doc, '^[ \t]*//');
UPDATE files SET note = coalesce(note || '; ', '') || c.n || ' comment line(s) (//) skipped'
FROM comment_lines c WHERE files.file_id = c.file_id;
DROP TABLE comment_lines;

DROP TABLE documents;
DROP VIEW file_text;
DROP TABLE file_layouts;
DROP VIEW incoming_text;
DROP TABLE incoming_files;
RESET VARIABLE lw_direct_paths;
