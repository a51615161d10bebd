-- id: incomplete_trace
-- title: A gdev-agent trace fails the completeness gate
-- severity: medium
-- formats: gdev
-- description: The Trace Completeness Gate of gdev-agent-trace-v1, on gdev traces only, one finding per
--   violated rule per trace: a write (action_executed, unless an approval_decision before it ran it)
--   without policy_decision and output_guard; a human-review path (approval_state pending or required,
--   approval_required true, or route human_review) with neither approval_pending nor approval_decision; a
--   tenant-sensitive run (a write, an approval, or a tenant route or error) without tenant hash or message
--   id; a model_tool_loop without model, prompt_version, cost_usd and latency_ms, or a tool_call without
--   tool_name, prompt/tool version, cost_usd and latency_ms; a failed eval_case_result without case id,
--   expected route and actual route.
-- lesson: Record what the completeness gate needs before this run can be reviewed: {evidence}
WITH ev AS (
    SELECT e.trace_id, e.seq, e.event_id, lower(trim(e.raw_type)) AS kind, e.status, e.success, e.tool_name,
           t.tenant,
           lower(trim(e.extra->>'approval_state')) AS approval_state,
           lower(trim(e.extra->>'route')) AS route,
           coalesce(lw_truthy(e.extra->>'approval_required'), false) AS approval_required,
           nullif(trim(e.extra->>'model'), '') IS NOT NULL AS has_model,
           nullif(trim(coalesce(e.extra->>'prompt_version', e.extra->>'tool_version')), '') IS NOT NULL AS has_version,
           nullif(trim(e.extra->>'cost_usd'), '') IS NOT NULL AS has_cost,
           nullif(trim(e.extra->>'latency_ms'), '') IS NOT NULL AS has_latency,
           nullif(trim(e.extra->>'message_id'), '') IS NOT NULL AS has_message_id,
           nullif(trim(coalesce(e.extra->>'case_id', e.extra->>'eval_case_id')), '') IS NOT NULL AS has_case_id,
           nullif(trim(coalesce(e.extra->>'expected_route', e.extra->>'expected_routing')), '') IS NOT NULL AS has_expected,
           nullif(trim(coalesce(e.extra->>'actual_route', e.extra->>'actual_routing')), '') IS NOT NULL AS has_actual,
           concat_ws(' ', e.extra->>'route', e.extra->>'fallback_route', e.extra->>'error_code') ILIKE '%tenant%' AS tenant_route
    FROM events e JOIN traces t USING (trace_id)
),
has AS (
    SELECT trace_id, any_value(tenant) AS tenant,
           bool_or(kind = 'policy_decision') AS policy_decision, bool_or(kind = 'output_guard') AS output_guard,
           bool_or(kind = 'approval_pending') AS approval_pending, bool_or(kind = 'approval_decision') AS approval_decision,
           bool_or(has_message_id) AS message_id
    FROM ev GROUP BY trace_id
),
writes AS (
    -- an action run by an approval request was guarded in the run that asked for the approval
    SELECT a.trace_id, min(a.seq) AS seq, arg_min(a.event_id, a.seq) AS event_id,
           arg_min(coalesce(a.tool_name, 'action'), a.seq) AS tool
    FROM ev a
    WHERE a.kind = 'action_executed'
      AND NOT EXISTS (SELECT 1 FROM ev d WHERE d.trace_id = a.trace_id AND d.kind = 'approval_decision' AND d.seq < a.seq)
    GROUP BY a.trace_id
),
review AS (
    SELECT trace_id, min(seq) AS seq, arg_min(event_id, seq) AS event_id,
           arg_min(CASE WHEN approval_state IN ('pending', 'required') THEN 'approval_state ' || approval_state
                        WHEN route = 'human_review' THEN 'route human_review'
                        ELSE 'approval_required true' END, seq) AS why
    FROM ev
    -- an eval's routes describe the case, not this run's path
    WHERE kind <> 'eval_case_result'
      AND (approval_state IN ('pending', 'required') OR route = 'human_review' OR approval_required)
    GROUP BY trace_id
),
sensitive AS (
    SELECT trace_id, min(seq) AS seq, arg_min(event_id, seq) AS event_id,
           arg_min(CASE WHEN kind = 'action_executed' THEN 'write action'
                        WHEN kind IN ('approval_pending', 'approval_decision') THEN 'approval'
                        ELSE 'tenant route' END, seq) AS why
    FROM ev
    WHERE kind IN ('action_executed', 'approval_pending', 'approval_decision') OR tenant_route
    GROUP BY trace_id
),
model_tool AS (
    SELECT trace_id, seq, event_id, kind,
           list_filter([CASE WHEN kind = 'model_tool_loop' AND NOT has_model THEN 'model' END,
                        CASE WHEN kind = 'tool_call' AND tool_name IS NULL THEN 'tool_name' END,
                        CASE WHEN NOT has_version THEN 'prompt_version' END,
                        CASE WHEN NOT has_cost THEN 'cost_usd' END,
                        CASE WHEN NOT has_latency THEN 'latency_ms' END], lambda f: f IS NOT NULL) AS missing
    FROM ev WHERE kind IN ('model_tool_loop', 'tool_call')
),
eval_failures AS (
    SELECT trace_id, seq, event_id,
           list_filter([CASE WHEN NOT has_case_id THEN 'case id' END,
                        CASE WHEN NOT has_expected THEN 'expected route' END,
                        CASE WHEN NOT has_actual THEN 'actual route' END], lambda f: f IS NOT NULL) AS missing
    FROM ev WHERE kind = 'eval_case_result' AND lw_failed(status, success)
)
SELECT w.trace_id, w.event_id, w.seq,
       'write path: ' || w.tool || ' executed without '
           || concat_ws(' and ', CASE WHEN NOT h.policy_decision THEN 'policy_decision' END,
                                 CASE WHEN NOT h.output_guard THEN 'output_guard' END) AS evidence,
       'A write or customer-facing action ran without the policy decision and output guard a reviewer needs.' AS problem
FROM writes w JOIN has h USING (trace_id)
WHERE NOT (h.policy_decision AND h.output_guard)

UNION ALL

SELECT r.trace_id, r.event_id, r.seq,
       'human review: ' || r.why || ' without approval_pending or approval_decision',
       'A run on the human-review path left no approval record.'
FROM review r JOIN has h USING (trace_id)
WHERE NOT h.approval_pending AND NOT h.approval_decision

UNION ALL

SELECT s.trace_id, s.event_id, s.seq,
       'tenant-sensitive route: ' || s.why || ' without '
           || concat_ws(' and ', CASE WHEN h.tenant IS NULL THEN 'tenant hash' END,
                                 CASE WHEN NOT h.message_id THEN 'message id' END),
       'A tenant-sensitive run cannot be tied to its tenant and message.'
FROM sensitive s JOIN has h USING (trace_id)
WHERE h.tenant IS NULL OR NOT h.message_id

UNION ALL

SELECT trace_id, arg_min(event_id, seq), min(seq),
       'model/tool event: ' || array_to_string(list_sort(list_distinct(
           list(kind || ' without ' || array_to_string(missing, ', ')))), '; '),
       'A model or tool step was recorded without the model, version, cost and latency that make it comparable.'
FROM model_tool WHERE len(missing) > 0
GROUP BY trace_id

UNION ALL

SELECT trace_id, arg_min(event_id, seq), min(seq),
       'eval failure: eval_case_result without ' || array_to_string(list_sort(list_distinct(flatten(list(missing)))), ', '),
       'A failed evaluation cannot be traced back to its case and route decision.'
FROM eval_failures WHERE len(missing) > 0
GROUP BY trace_id
