-- Which trace an id, or the start of one, names ($given), for `lessonweaver show` (lessonweaver/timeline.py).
-- One row per candidate, `kind` saying what it is: up to three loaded traces whose id starts with $given,
-- the exact id first ('loaded'); the id itself when a trace of that id was quarantined ('quarantined',
-- with its reason) or removed by `lessonweaver forget` ('forgotten': only a hash of the id is kept).
SELECT trace_id, 'loaded' AS kind, NULL AS reason
FROM (SELECT trace_id FROM traces WHERE starts_with(trace_id, $given)
      ORDER BY trace_id <> $given, trace_id LIMIT 3)
UNION ALL
SELECT trace_id, 'quarantined', min(reason) FROM quarantine WHERE trace_id = $given GROUP BY trace_id
UNION ALL
SELECT DISTINCT $given, 'forgotten', NULL FROM forgotten WHERE trace_hash = sha256($given);
