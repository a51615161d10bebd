-- Stage, last: write what survived a batch as Parquet, one file per output (batch.OUTPUTS), for the
-- load (sql/load/); each trace with its content hash.
-- Parameters: $traces, $trace_records, $events, $turns, $detections, $quarantine, $sealed, $rejects, $files (VARCHAR):
--   the path of each output's file.

-- A trace's content, as it will be stored: the same trace delivered again hashes the same. A redaction
-- marker counts by its kind, without its hash (salted per database): the same files hash the same in any
-- database, and the lesson that orders findings by this hash picks the same one to speak for it.
CREATE OR REPLACE TABLE trace_hashes AS
SELECT rt.trace_id,
       md5(array_to_string(list_sort(list_distinct(list(md5(lw_unmarked(CAST(json(r.doc) AS VARCHAR)))))), ',')) AS content_hash
FROM record_traces rt JOIN records r USING (file_id, record)
WHERE rt.trace_id IN (SELECT trace_id FROM traces)
GROUP BY rt.trace_id;

COPY (SELECT trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
             metadata, extra, h.content_hash, redacted
      FROM traces JOIN trace_hashes h USING (trace_id))
TO $traces (FORMAT parquet);

-- Which records made each trace, the quarantined ones too: a trace quarantined after the load moves
-- only those of its records that no quarantined trace had already claimed (store.quarantine_loaded).
COPY (SELECT rt.trace_id, f.path AS file, r.line, r.record,
             rt.trace_id IN (SELECT trace_id FROM quarantine) AS quarantined
      FROM record_traces rt JOIN records r USING (file_id, record) JOIN files f USING (file_id)
      WHERE rt.trace_id IN (SELECT trace_id FROM traces UNION ALL SELECT trace_id FROM quarantine))
TO $trace_records (FORMAT parquet);

-- Row groups of 16,384 events, not DuckDB's 122,880 (a whole 64 MB batch): a reader of the stored events
-- holds a row group's text at a time, and a row group whose range of trace ids misses the ones asked for
-- is skipped (a report's timelines read 300 traces of 300k in 0.2 s and 150 MB, against 1.3 s and 410 MB).
COPY (SELECT trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
             parent_id, metadata, extra, actor FROM events)
TO $events (FORMAT parquet, ROW_GROUP_SIZE 16384);

COPY (SELECT trace_id, seq, event_id, speaker, nth, words, intent, reason, interrupted, agent_asked, agent_changed,
             agent_conceded
      FROM turns)
TO $turns (FORMAT parquet);

COPY (SELECT detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id,
             category, confidence, signature, family, tool, recovery, recovery_kind, wasted_steps, title
      FROM detections)
TO $detections (FORMAT parquet);

COPY (SELECT q.trace_id, f.path AS file, r.line, q.reason
      FROM quarantine q
      JOIN (SELECT trace_id, file_id, record FROM record_traces
            QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY file_id, record) = 1) rt
           USING (trace_id)
      JOIN records r USING (file_id, record)
      JOIN files f USING (file_id))
TO $quarantine (FORMAT parquet);

-- The quarantined traces with a sealed finding (secret_exposed): where each came from, for the weave.
COPY (SELECT DISTINCT sealed, trace_id, tenant, source, project, file FROM exposures
      WHERE trace_id IN (SELECT trace_id FROM quarantine))
TO $sealed (FORMAT parquet);

COPY (SELECT f.path AS file, j.line, j.record, j.reason
      FROM rejects j JOIN files f USING (file_id))
TO $rejects (FORMAT parquet);

COPY (SELECT * FROM file_accounts) TO $files (FORMAT parquet);
