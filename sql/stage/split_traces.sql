-- Between stage and load: the traces of gathering formats whose records were staged in more than one
-- batch, with different content in each (batch.split_traces). Different files and different content:
-- min and max differ, which needs no set per trace.
-- Parameters: $traces (VARCHAR[]): every batch's traces.parquet; $formats (VARCHAR[]): the gathering formats.
SELECT trace_id FROM read_parquet($traces, filename = true)
SEMI JOIN (SELECT DISTINCT trace_id FROM read_parquet($traces) WHERE list_contains($formats, format)) USING (trace_id)
GROUP BY trace_id
HAVING min(filename) <> max(filename) AND min(content_hash) <> max(content_hash)
   AND bool_and(list_contains($formats, format))
ORDER BY trace_id;
