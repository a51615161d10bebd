-- id: tool_fallback
-- title: A tool failed and the agent fell back to another
-- severity: medium
-- family: tool_failure
-- description: A failed call of the agent's followed, before the user spoke again, by another tool (or
--   shell program) that did the same job and worked (facts.recovery_kind other: a look only for a look, an
--   edit only for an edit, on a path, file or URL the failed call named), the failed one never being
--   called again: the first tool is unreliable for this task, or the fallback should have been the first
--   choice. Fixing something and re-running the failed tool is a retry, not a fallback; an unrelated next
--   call, or an edit after a failed run, is no fallback. What worked is the fallback. In a run where the
--   agent changes files (a coding run) severity is low: one way failing and another working is how code
--   gets written.
WITH calls AS (
    SELECT * FROM facts WHERE type = 'tool_call' AND actor = 'agent'
)
SELECT f.trace_id, coalesce(f.result_event_id, f.event_id) AS event_id, coalesce(f.result_seq, f.seq) AS seq,
       f.tool_key || ' failed' || coalesce(' (' || lw_clip(f.error, 160) || ')', '') || ' and '
           || f.recovery_tool || ' worked instead' AS evidence,
       'A tool failed and the agent had to fall back to another one.' AS problem,
       CASE WHEN f.coding_run THEN 'low' END AS severity,
       lw_failure_rule(f.tool_key, f.error, lw_what_worked(f.recovery_kind, f.recovery, f.command, f.between, f.changed_files)) AS lesson,
       f.tool_key || ': ' || coalesce(f.error_sig, 'failed') AS signature, f.tool_key AS tool,
       lw_what_worked(f.recovery_kind, f.recovery, f.command, f.between, f.changed_files) AS recovery,
       f.recovery_kind, f.wasted_steps, lw_failure_title(f.tool_key, f.error) AS title
FROM calls f
WHERE f.failed AND NOT f.environment AND f.recovery_kind = 'other'
  AND NOT EXISTS (SELECT 1 FROM calls again WHERE again.trace_id = f.trace_id AND again.tool_key = f.tool_key
                                              AND again.seq > f.seq)
QUALIFY row_number() OVER (PARTITION BY f.trace_id, f.tool_key, f.recovery_tool ORDER BY f.seq) = 1
