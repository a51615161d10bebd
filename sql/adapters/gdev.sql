-- format: gdev
-- title: gdev-agent-trace-v1 JSONL: one event per line, one trace per run_id (../shared/formats/gdev-agent-trace-v1.md)
-- match: coalesce(doc->>'schema_version', '') = 'gdev-agent-trace-v1'
--   OR (json_exists(doc, '$.run_id') AND json_exists(doc, '$.span_id') AND json_exists(doc, '$.event_type'))
-- priority: 306
-- gathers: yes
-- roles: user (webhook_received) = counterpart (a player's support message, relayed by the studio's webhook: the
--   person the agent serves; the format keeps references, not its text); approval_decision = human (a
--   reviewer of the team operating the agent approves, rejects or corrects); the pipeline's own steps
--   (dedup, guards, policy, approval_pending) = harness; model and tool calls = agent, their results = tool;
--   eval_case_result = harness. Read in ashishki/gdev-agent app/schemas.py (WebhookRequest), app/agent.py
--   (process_webhook), app/services/approval_service.py and ../shared/formats/gdev-agent-trace-v1.md.
--
-- Reads records_in(file_id, file, line, record, doc) and fills staging traces, events, rejects and
-- record_links. A trace is a run_id, gathered across all the files of the batch; a span_id names one event
-- of its run.
-- The format stores references and hashes, never message text, so content is a summary built from fields.
-- Type mapping, task, outcome and source rules are documented in docs/formats.md (gdev section).
-- Each line is parsed once into the fields read here; orders are worked out on narrow rows.

CREATE OR REPLACE TEMP TABLE gdev_lines AS
SELECT file_id, file, line, record, doc, f,
       json_type(f.parent_span_id) AS t_parent,
       f.run_id->>'$' AS run_id,
       f.span_id->>'$' AS span_id,
       f.parent_span_id->>'$' AS parent_span_id,
       f.event_type->>'$' AS event_type,
       lower(trim(f.event_type->>'$')) AS kind,
       -- an offset or Z is honoured (stored as UTC); a bare timestamp is taken as UTC
       CASE WHEN regexp_matches(f.timestamp->>'$', '\d[T ]\d\d:\d\d\S*([Zz]|[+-]\d\d(:?\d\d)?)$')
            THEN try_cast(f.timestamp->>'$' AS TIMESTAMPTZ) AT TIME ZONE 'UTC'
            ELSE try_cast(f.timestamp->>'$' AS TIMESTAMP) END AS ts
-- each line in one typed parse: every field this adapter reads, as its JSON text (a JSON null, like a
-- missing field, is NULL); the fields are read from these fragments, not from the line again
FROM (SELECT *, from_json(doc, '{"actual_route": "JSON", "actual_routing": "JSON", "approval_state": "JSON",
                      "approved": "JSON", "blocked_reason": "JSON", "cached_outcome": "JSON", "case_id": "JSON",
                      "category": "JSON", "component": "JSON", "confidence": "JSON", "corrections": "JSON",
                      "decision": "JSON", "error_code": "JSON", "eval_case_id": "JSON", "event_type": "JSON",
                      "expected_route": "JSON", "expected_routing": "JSON", "expires_at": "JSON",
                      "expiry": "JSON", "fallback_route": "JSON", "message_id": "JSON", "metadata": "JSON",
                      "model": "JSON", "observation_ref": "JSON", "parent_span_id": "JSON", "pending_id": "JSON",
                      "permission_decision": "JSON", "prompt_version": "JSON", "reason": "JSON",
                      "redaction_events": "JSON", "reviewer": "JSON", "reviewer_target": "JSON",
                      "risk_level": "JSON", "risk_reason": "JSON", "risky": "JSON", "route": "JSON",
                      "run_id": "JSON", "source": "JSON", "span_id": "JSON", "status": "JSON",
                      "tenant_id_hash": "JSON", "threshold_impact": "JSON", "timestamp": "JSON",
                      "tool_name": "JSON", "tool_turns": "JSON"}') AS f
      FROM records_in);

-- The first thing wrong with each line.
CREATE OR REPLACE TEMP TABLE gdev_problems AS
SELECT file_id, record, problem FROM (
    SELECT file_id, record,
           CASE
             WHEN lw_value_problem(f.run_id, 'run_id', true) IS NOT NULL THEN lw_value_problem(f.run_id, 'run_id', true)
             WHEN lw_value_problem(f.span_id, 'span_id', true) IS NOT NULL THEN lw_value_problem(f.span_id, 'span_id', true)
             WHEN lw_value_problem(f.event_type, 'event_type', false) IS NOT NULL
                  THEN lw_value_problem(f.event_type, 'event_type', false)
             WHEN t_parent NOT IN ('NULL', 'VARCHAR', 'BIGINT', 'UBIGINT') THEN 'field ''parent_span_id'' must be a string'
           END AS problem
    FROM gdev_lines
) WHERE problem IS NOT NULL;

-- Later good lines with a span_id already seen in their run (in any file). The same JSON is a redelivery:
-- linked to the run and kept once, so it cannot pose as a retry. Anything else is a conflict, rejected;
-- the first line wins either way.
CREATE OR REPLACE TEMP TABLE gdev_repeats AS
SELECT file_id, record, run_id, identical,
       'conflicting duplicate of event ' || span_id || ' of trace ' || run_id || ' (first at ' || first_file
           || coalesce(' line ' || first_line, ' record ' || first_record) || ')' AS problem
FROM (
    SELECT l.file_id, l.record, l.run_id, l.span_id,
           first_value(l.file) OVER w AS first_file, first_value(l.line) OVER w AS first_line,
           first_value(l.record) OVER w AS first_record,
           -- the same text, else the same JSON (parsed only where the texts differ)
           l.doc = first_value(l.doc) OVER w OR json(l.doc)::VARCHAR = json(first_value(l.doc) OVER w)::VARCHAR AS identical,
           row_number() OVER w AS nth
    FROM gdev_lines l ANTI JOIN gdev_problems p USING (file_id, record)
    WINDOW w AS (PARTITION BY l.run_id, l.span_id ORDER BY l.file_id, l.record)
) WHERE nth > 1;

INSERT INTO rejects (file_id, line, record, reason)
SELECT l.file_id, l.line, l.record, p.problem
FROM (SELECT file_id, record, problem FROM gdev_problems
      UNION ALL SELECT file_id, record, problem FROM gdev_repeats WHERE NOT identical) p
JOIN gdev_lines l USING (file_id, record);

INSERT INTO record_links (file_id, record, trace_id)
SELECT file_id, record, run_id FROM gdev_repeats WHERE identical;

-- Good lines, in trace order (timestamp, then file and position in it), with what the mapping needs.
CREATE OR REPLACE TEMP TABLE gdev_events AS
SELECT l.*,
       o.seq,
       nullif(trim(f.tool_name->>'$'), '') AS own_tool,
       -- approval_decision: a rejection, or corrections however written (list, text or object)
       list_has_any([lower(trim(f.decision->>'$')), lower(trim(f.status->>'$')), lower(trim(f.approval_state->>'$'))],
                    ['rejected', 'reject', 'denied', 'declined'])
           OR coalesce(lw_falsy(f.approved->>'$'), false) AS rejects,
       CASE json_type(f.corrections)
         WHEN 'ARRAY' THEN nullif(array_to_string(list_filter(
                  list_transform(json_extract(f.corrections, '$[*]'),
                                 lambda c: CASE WHEN json_type(c) = 'VARCHAR' THEN trim(c->>'$') ELSE c::VARCHAR END),
                  lambda c: c <> ''), '; '), '')
         WHEN 'VARCHAR' THEN nullif(trim(f.corrections->>'$'), '')
         WHEN 'OBJECT' THEN nullif((f.corrections)::VARCHAR, '{}')
       END AS corrections,
       -- eval_case_result: field names as the spec words them, or as gdev's eval runner does
       coalesce(f.case_id->>'$', f.eval_case_id->>'$') AS case_id,
       coalesce(f.expected_route->>'$', f.expected_routing->>'$') AS expected_route,
       coalesce(f.actual_route->>'$', f.actual_routing->>'$') AS actual_route
FROM gdev_lines l
-- the order is worked out on narrow rows, then joined to the lines
JOIN (SELECT file_id, record, row_number() OVER (PARTITION BY run_id ORDER BY ts NULLS LAST, file_id, record) AS seq
      FROM gdev_lines ANTI JOIN gdev_problems p USING (file_id, record) ANTI JOIN gdev_repeats x USING (file_id, record)) o
    USING (file_id, record);

CREATE OR REPLACE TEMP VIEW gdev_mapped AS
SELECT e.*,
       -- an error or an action inherits its parent tool span's tool, so a call after it is seen as a retry
       coalesce(e.own_tool, CASE WHEN e.kind IN ('error', 'action_executed') THEN p.own_tool END) AS tool,
       CASE e.kind
         WHEN 'webhook_received' THEN 'user_message'
         WHEN 'dedup_checked' THEN 'workflow_step'
         WHEN 'input_guard' THEN 'workflow_step'
         WHEN 'policy_decision' THEN 'workflow_step'
         WHEN 'output_guard' THEN 'workflow_step'
         WHEN 'approval_pending' THEN 'workflow_step'
         WHEN 'model_tool_loop' THEN 'model_call'
         WHEN 'tool_call' THEN 'tool_call'
         -- the result of a logged tool call, else the only record of the call itself
         WHEN 'action_executed' THEN
           CASE WHEN coalesce(p.kind = 'tool_call', false)
                     OR EXISTS (SELECT 1 FROM gdev_events c
                                WHERE c.run_id = e.run_id AND c.seq < e.seq
                                  AND c.kind = 'tool_call' AND c.own_tool = e.own_tool)
                THEN 'tool_result' ELSE 'tool_call' END
         WHEN 'approval_decision' THEN
           CASE WHEN e.rejects OR e.corrections IS NOT NULL THEN 'human_correction' ELSE 'workflow_step' END
         WHEN 'eval_case_result' THEN 'evaluation_result'
         WHEN 'error' THEN 'error'
         ELSE lw_canonical_type(e.event_type)
       END AS type,
       CASE WHEN e.kind = 'eval_case_result' THEN
         CASE WHEN lw_failed(e.f.status->>'$', NULL) OR e.expected_route <> e.actual_route THEN 'failed'
              WHEN lw_succeeded(e.f.status->>'$', NULL) OR e.expected_route = e.actual_route THEN 'passed'
              ELSE e.f.status->>'$' END
         ELSE e.f.status->>'$' END AS status_col
FROM gdev_events e
-- the parent span: a span_id is one line of its run
LEFT JOIN gdev_events p ON p.run_id = e.run_id AND p.span_id = e.parent_span_id;

-- success: false for an error, an error_code or a failure word; true for gdev's words for a step that went
-- through, and for an action_executed that does not say it failed (gdev-agent logs it once the action's
-- handler returned, with its result: the line is the write's outcome, status or not); otherwise unknown
-- (a guard that blocked did its job, it did not fail).
CREATE OR REPLACE TEMP TABLE gdev_final AS
SELECT m.*,
       CASE WHEN m.kind = 'error' OR nullif(trim(m.f.error_code->>'$'), '') IS NOT NULL
                 OR lw_failed(m.status_col, NULL) THEN false
            WHEN lw_succeeded(m.status_col, NULL) OR m.kind = 'action_executed'
                 OR lower(trim(m.status_col)) IN ('allowed', 'executed', 'approved', 'sent', 'delivered') THEN true
       END AS success,
       CASE m.kind
         WHEN 'webhook_received' THEN concat_ws(', ', 'webhook received' || coalesce(' from ' || (m.f.source->>'$'), ''),
                                              'message ' || (m.f.message_id->>'$'))
         WHEN 'dedup_checked' THEN concat_ws(', ', 'dedup ' || coalesce(m.f.status->>'$', 'checked'),
                                           'cached outcome ' || (m.f.cached_outcome->>'$'))
         WHEN 'input_guard' THEN 'input guard ' || coalesce(m.f.status->>'$', 'ran')
                                 || coalesce(': ' || coalesce(m.f.blocked_reason->>'$', m.f.reason->>'$'), '')
         WHEN 'model_tool_loop' THEN concat_ws(', ', 'model ' || coalesce(m.f.model->>'$', '(not recorded)'),
                                             'prompt ' || (m.f.prompt_version->>'$'),
                                             'tool turns ' || (m.f.tool_turns->>'$'),
                                             'category ' || (m.f.category->>'$'))
         WHEN 'tool_call' THEN concat_ws(' ', coalesce(m.tool, 'tool'),
                                       '(permission ' || (m.f.permission_decision->>'$') || ')',
                                       'failed: ' || (m.f.error_code->>'$'))
         WHEN 'policy_decision' THEN concat_ws(', ', 'policy decision: risk ' || coalesce(m.f.risk_level->>'$', 'unknown'),
                                             'confidence ' || (m.f.confidence->>'$'),
                                             'risky ' || (m.f.risky->>'$'),
                                             'route ' || (m.f.route->>'$'))
                                     || coalesce(': ' || coalesce(m.f.risk_reason->>'$', m.f.reason->>'$'), '')
         WHEN 'output_guard' THEN concat_ws(', ', 'output guard ' || coalesce(m.f.status->>'$', 'ran'),
                                          CASE WHEN json_type(m.f.redaction_events) = 'ARRAY'
                                               THEN json_array_length(m.f.redaction_events) || ' redaction events' END)
         WHEN 'approval_pending' THEN concat_ws(', ', 'approval pending' || coalesce(' ' || (m.f.pending_id->>'$'), ''),
                                              'reviewer ' || (m.f.reviewer_target->>'$'),
                                              'expires ' || coalesce(m.f.expires_at->>'$', m.f.expiry->>'$'))
         -- the corrections are the evidence of a human correction; the reviewer stays in extra
         WHEN 'approval_decision' THEN
           CASE WHEN m.rejects THEN 'approval rejected' || coalesce(': ' || m.corrections, ' (no corrections recorded)')
                WHEN m.corrections IS NOT NULL THEN 'approved with corrections: ' || m.corrections
                ELSE 'approval ' || coalesce(m.f.decision->>'$', m.f.status->>'$', 'decided')
                     || coalesce(' by ' || (m.f.reviewer->>'$'), '') END
         WHEN 'action_executed' THEN coalesce(m.tool, 'action')
                                     || CASE WHEN nullif(trim(m.f.error_code->>'$'), '') IS NOT NULL OR lw_failed(m.status_col, NULL)
                                             THEN ' failed' || coalesce(': ' || (m.f.error_code->>'$'), '')
                                             ELSE ' executed' || coalesce(' -> ' || (m.f.observation_ref->>'$'), '') END
         WHEN 'eval_case_result' THEN 'eval case ' || coalesce(m.case_id, '(no case id)')
                                      || ': expected route ' || coalesce(m.expected_route, '(none)')
                                      || ', actual route ' || coalesce(m.actual_route, '(none)')
                                      || coalesce(' (' || m.status_col || ')', '')
                                      || coalesce('; threshold impact ' || (m.f.threshold_impact->>'$'), '')
         WHEN 'error' THEN coalesce(m.f.error_code->>'$', 'error') || coalesce(' in ' || (m.f.component->>'$'), '')
                           || coalesce('; fallback route ' || nullif(trim(m.f.fallback_route->>'$'), ''), '; no fallback route')
         ELSE concat_ws(' ', m.event_type, m.f.status->>'$')
       END AS content
FROM gdev_mapped m;

-- One trace per run_id, starting at its first line (by file, then position); outcome from how the run
-- ended (see docs).
WITH ends AS (
    -- an error with no fallback route that nothing after it got past
    SELECT g.*, g.kind = 'error' AND nullif(trim(g.f.fallback_route->>'$'), '') IS NULL
                AND NOT EXISTS (SELECT 1 FROM gdev_final later
                                WHERE later.run_id = g.run_id
                                  AND later.seq > g.seq AND later.success) AS dead_end
    FROM gdev_final g
)
INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT run_id, 'gdev',
       CASE WHEN bool_or(kind = 'eval_case_result') THEN 'gdev-agent/eval' ELSE 'gdev-agent' END,
       coalesce(arg_max(expected_route, seq) FILTER (WHERE kind = 'eval_case_result' AND expected_route IS NOT NULL),
                arg_max(f.route->>'$', seq) FILTER (WHERE kind <> 'eval_case_result' AND nullif(trim(f.route->>'$'), '') IS NOT NULL),
                arg_max(f.category->>'$', seq) FILTER (WHERE nullif(trim(f.category->>'$'), '') IS NOT NULL),
                'support triage'),
       CASE WHEN bool_or(type = 'human_correction') THEN 'corrected_by_human'
            WHEN bool_or(dead_end) THEN 'failed'
            WHEN bool_or(kind = 'approval_pending') AND NOT bool_or(kind = 'approval_decision') THEN 'pending'
            ELSE 'success' END,
       arg_min(f.tenant_id_hash->>'$', seq) FILTER (WHERE nullif(trim(f.tenant_id_hash->>'$'), '') IS NOT NULL),
       arg_min(file, (file_id, record)), arg_min(line, (file_id, record)), min(ts), max(ts),
       NULL, NULL, min(file_id), arg_min(record, (file_id, record))
FROM ends
GROUP BY run_id;

-- extra: the line minus what has a column; status stays when the column holds a derived verdict, and a
-- timestamp that did not parse stays too.
INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT run_id, seq, span_id, type, event_type, content, status_col, success, tool, ts, parent_span_id,
       CASE WHEN json_type(f.metadata) = 'OBJECT' THEN f.metadata END,
       nullif(json_merge_patch(doc, json_object(
           'run_id', NULL, 'span_id', NULL, 'parent_span_id', NULL, 'event_type', NULL, 'tool_name', NULL,
           'status', CASE WHEN kind = 'eval_case_result' THEN f.status END,
           'timestamp', CASE WHEN ts IS NULL THEN f.timestamp END,
           'metadata', CASE WHEN json_type(f.metadata) <> 'OBJECT' THEN f.metadata END))::VARCHAR,
           '{}')::JSON,
       file_id, record,
       -- the player's message the webhook relays: a person the agent serves, not its operator
       CASE WHEN kind = 'webhook_received' THEN 'counterpart' END
FROM gdev_final;

DROP TABLE gdev_lines;
DROP TABLE gdev_problems;
DROP TABLE gdev_repeats;
DROP TABLE gdev_events;
DROP VIEW gdev_mapped;
DROP TABLE gdev_final;
