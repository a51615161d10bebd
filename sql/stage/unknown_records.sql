-- Adapt: a record of a file no adapter took is rejected, named by its top-level keys (sorted, at most 8)
-- so a user sees at once what it is. Keys that are not plain names (an address used as a key, say) are
-- shown as `…`, never quoted.
-- Parameters: $known (VARCHAR): the known formats, for the message.
INSERT INTO rejects
SELECT r.file_id, r.line, r.record,
       'not a trace in any known format (keys: '
       || coalesce(nullif(array_to_string(list_transform(list_sort(list_distinct(json_keys(r.doc)))[1:8],
              lambda k: CASE WHEN regexp_matches(k, '^[A-Za-z_][A-Za-z0-9_.-]{0,40}$') THEN k ELSE '…' END), ', ')
              || CASE WHEN len(json_keys(r.doc)) > 8 THEN ', …' ELSE '' END, ''), 'none')
       || '; known: ' || $known || ')'
FROM records r ANTI JOIN file_formats f USING (file_id);
