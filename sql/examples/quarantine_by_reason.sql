-- title: Quarantine by reason
-- description: Traces kept out for privacy, per reason (a tag, a secret or personal data found), and the files they came from.
-- columns: reason, traces, files, first_quarantined, last_quarantined
SELECT reason,
       count(DISTINCT trace_id) AS traces,
       count(DISTINCT file) AS files,
       min(quarantined_at) AS first_quarantined,
       max(quarantined_at) AS last_quarantined
FROM quarantine
GROUP BY reason
ORDER BY traces DESC, reason;
