-- Adapt: a record counts for the first adapter (by priority, `rank` 0 first) whose match it passes; a
-- file goes to the format most of its sampled records are in.
-- Parameters: none.
INSERT INTO file_formats
SELECT file_id, arg_max(fmt, (n, -rank)) FROM (
    SELECT file_id, fmt, rank, count(*) AS n FROM (
        SELECT file_id, arg_min(fmt, rank) AS fmt, min(rank) AS rank FROM sniffed GROUP BY file_id, record
    ) GROUP BY ALL
) GROUP BY file_id;

DROP TABLE sniffed;
DROP TABLE sample;
