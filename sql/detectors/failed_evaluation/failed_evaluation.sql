-- id: failed_evaluation
-- title: An evaluation failed
-- severity: high
-- description: An evaluation_result whose status is failed, failure or error, or whose success is false;
--   also when the trace's outcome claims success (a silent failure, reported as such in the problem).
-- lesson: Check the answer against this evaluation before finishing: {evidence}
SELECT e.trace_id, e.event_id, e.seq,
       coalesce(nullif(trim(e.content), ''),
                'evaluation ' || coalesce(lower(e.status), 'failed')
                || coalesce(' ' || nullif(CAST(e.metadata AS VARCHAR), '{}'), '')) AS evidence,
       CASE WHEN lw_outcome_ok(t.outcome)
            THEN 'An evaluation failed while the run reported success (a silent failure).'
            ELSE 'An evaluation of the agent''s work failed.' END AS problem,
       CASE WHEN lw_outcome_ok(t.outcome) THEN 'critical' END AS severity
FROM events e JOIN traces t USING (trace_id)
WHERE e.type = 'evaluation_result'
  AND (coalesce(lower(trim(e.status)) IN ('failed', 'failure', 'fail', 'error'), false)
       OR coalesce(e.success = false, false))
