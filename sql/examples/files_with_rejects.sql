-- title: Files with rejected records
-- description: Input files some of whose records could not be used, with how many, the first line and the distinct reasons.
-- columns: file, records, rejected, first_line, reasons
SELECT r.file,
       any_value(i.records) AS records,
       count(*) AS rejected,
       min(r.line) AS first_line,
       array_to_string(list_sort(list_distinct(list(r.reason))), '; ') AS reasons
FROM rejects r
LEFT JOIN (SELECT path, max(records) AS records FROM ingested_files GROUP BY path) i ON i.path = r.file
GROUP BY r.file
ORDER BY rejected DESC, r.file;
