-- Load: store what is new, and a reject or quarantine row for every staged trace whose fate
-- (load/fates.sql) keeps it out.
-- Parameters: $run_id (VARCHAR): the run loading.
INSERT INTO rejects
SELECT file, line, record, 'conflicting duplicate of trace_id ' || trace_id || ' from ' || other_file,
       $run_id, now()::TIMESTAMP
FROM fate_records WHERE fate = 'conflict';

INSERT INTO rejects
SELECT file, line, record, 'a trace lessonweaver forget removed: not stored again', $run_id, now()::TIMESTAMP
FROM fate_records WHERE fate = 'forgotten';

INSERT INTO quarantine
SELECT trace_id, file, min(line), any_value(held_reason), $run_id, now()::TIMESTAMP
FROM fate_records WHERE fate = 'held_back'
  AND NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.trace_id = fate_records.trace_id AND x.file = fate_records.file)
GROUP BY trace_id, file;

INSERT INTO traces BY NAME
SELECT trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
       metadata, extra, content_hash, $run_id AS run_id, now()::TIMESTAMP AS loaded_at, redacted
FROM staged_traces ANTI JOIN not_new USING (trace_id, batch);

-- Every staged detection belongs to a staged trace (adapters insert events by joining traces), so
-- leaving out the few traces that are not new keeps exactly the new ones, without joining every row
-- with a fate. Events are written the same way, to the event files (load/events.sql).
INSERT INTO detections BY NAME
SELECT d.detector, d.trace_id, d.event_id, d.seq, d.severity, d.evidence, d.problem, d.lesson,
       d.lesson_id AS variant_id, coalesce(v.lesson_id, d.lesson_id) AS lesson_id,
       d.category, d.confidence, d.signature, d.family, d.tool, d.recovery, d.recovery_kind, d.wasted_steps, d.title,
       $run_id AS run_id, now()::TIMESTAMP AS detected_at
FROM staged_detections d ANTI JOIN not_new USING (trace_id, batch)
LEFT JOIN lesson_variants v ON v.variant_id = d.lesson_id
-- a sealed trace's findings (a quarantined trace's, under a hash) are stored once, the first time
WHERE NOT (starts_with(d.trace_id, 'sealed-') AND d.trace_id IN (SELECT sealed FROM sealed_traces));

INSERT INTO turns BY NAME
SELECT s.* EXCLUDE (batch), $run_id AS run_id FROM staged_turns s ANTI JOIN not_new USING (trace_id, batch);

INSERT INTO sealed_traces
SELECT DISTINCT ON (sealed) sealed, trace_id, tenant, source, project, file FROM staged_sealed
WHERE sealed NOT IN (SELECT sealed FROM sealed_traces);

INSERT INTO quarantine
SELECT q.trace_id, q.file, q.line, q.reason, $run_id, now()::TIMESTAMP
FROM batch_quarantine q
WHERE NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.trace_id = q.trace_id AND x.file = q.file);

INSERT INTO rejects SELECT file, line, record, reason, $run_id, now()::TIMESTAMP FROM staged_rejects;
