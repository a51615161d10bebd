-- Stage, after detecting: quarantine every trace with a finding in what the adapters and detectors
-- made of it (privacy.audit_staged scans it into scan_hits), reason 'audit:<category>:<kind>', and
-- delete its rows, so nothing of it leaves the batch. Ends with the number of traces quarantined.
-- Parameters: $kinds (VARCHAR[]): the pattern kinds, in the order of patterns.PATTERNS (the first
--   found names the reason). Leaves the temp table audit_held.
CREATE OR REPLACE TEMP TABLE audit_held AS
SELECT trace_id, arg_min('audit:' || category || ':' || kind, list_position($kinds::VARCHAR[], kind)) AS reason
FROM scan_hits WHERE trace_id NOT IN (SELECT trace_id FROM quarantine) GROUP BY trace_id;
DROP TABLE scan_texts; DROP TABLE scan_hits;
INSERT INTO quarantine SELECT trace_id, reason FROM audit_held;
DELETE FROM detections WHERE trace_id IN (SELECT trace_id FROM audit_held);
DELETE FROM events WHERE trace_id IN (SELECT trace_id FROM audit_held);
DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM audit_held);

SELECT count(*) FROM audit_held;
