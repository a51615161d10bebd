-- Quarantine after the load, then: the traces of load/late_records.sql get quarantine rows, their
-- content goes, and their records count as quarantined in their files' accounts. The run's sightings
-- go too, so that the weave records them again without these traces. (Their events went first:
-- store.quarantine_loaded rewrote the event files without them.)
-- Parameters: $run_id (VARCHAR): the run that loaded the traces.
INSERT INTO quarantine SELECT t.trace_id, t.file, t.line, l.reason, $run_id, now()::TIMESTAMP
FROM traces t JOIN late l USING (trace_id);

DELETE FROM detections WHERE trace_id IN (SELECT trace_id FROM late);
DELETE FROM turns WHERE trace_id IN (SELECT trace_id FROM late);
DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM late);
DELETE FROM sightings WHERE run_id = $run_id;

UPDATE ingested_files SET loaded = loaded - m.n, quarantined = quarantined + m.n
FROM late_records m WHERE ingested_files.path = m.file AND ingested_files.run_id = $run_id;

DROP TABLE late; DROP TABLE late_records;
