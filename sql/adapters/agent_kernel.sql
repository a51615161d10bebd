-- format: agent_kernel
-- title: agent-kernel (weaver-kernel) ActionTraces: the export envelope, the JSONL audit log, bare traces
-- match: CASE WHEN list_has_any(json_keys(doc), ['schema', 'record_hash', 'action_id', 'kind', 'actions'])
--   THEN coalesce(doc->>'schema', '') = 'weaver_kernel.action_trace_export'
--     OR (json_exists(doc, '$.trace.action_id') AND json_exists(doc, '$.record_hash'))
--     OR (json_exists(doc, '$.action_id') AND json_exists(doc, '$.capability_id'))
--     OR coalesce(doc->>'kind', '') = 'agent_kernel.ActionTrace'
--     OR (json_exists(doc, '$.trace_id') AND json_exists(doc, '$.actions'))
--   ELSE false END
-- priority: 310
-- roles: no user role: an ActionTrace is one capability call of an agent (principal_id) = agent, its result
--   or error = tool; an export's `correction` = human (a reviewer's, `corrected_by`). Read in
--   dgenio/weaver-kernel's ActionTrace (../shared/samples/other, the lessonweaver project's interop example).
--
-- weaver-kernel audits every capability call as an ActionTrace: one action (an invoke, a handle expansion
-- or a refused grant) with its arguments, status, error, sensitivity and, in an export, a reviewer's
-- correction. It records no run or session id, so each ActionTrace is a trace of its own (trace_id =
-- action_id): the agent (principal_id) is its source and the capability its task. Its events: the call,
-- then its result or its error, then the correction. Three shapes carry ActionTraces:
--   - the export envelope {"schema": "weaver_kernel.action_trace_export", "version": "1", "traces": [...]};
--   - the hash-chained audit log (JsonlTraceStore), a line per trace: {seq, prev_hash, record_hash, trace};
--   - bare trace objects, one per line (`weaver-kernel audit export`).
-- The same action in an audit log and in an export of it is one trace: the copy with a correction, else the
-- first, is used, and the other records are linked to it. Also read: the earlier interop shape
-- {"kind": "agent_kernel.ActionTrace", trace_id, goal, actions[], result} of one trace with many actions.
-- The match looks at the record's keys first: each JSON function parses the record again, and a record
-- of tens of megabytes parsed several times at once can exhaust a batch's memory.

CREATE OR REPLACE TEMP TABLE agent_kernel_docs AS
SELECT file_id, file, line, record, doc,
       CASE WHEN coalesce(doc->>'schema', '') = 'weaver_kernel.action_trace_export' THEN 'envelope'
            WHEN json_exists(doc, '$.trace.action_id') AND json_exists(doc, '$.record_hash') THEN 'audit'
            WHEN json_exists(doc, '$.action_id') THEN 'action'
            ELSE 'interop' END AS shape
FROM records_in;

-- Every ActionTrace object, with where it came from (pos: its place in an envelope's list).
CREATE OR REPLACE TEMP TABLE agent_kernel_objects AS
SELECT file_id, record, shape, pos, t,
       from_json(t, '{"action_id": "VARCHAR", "capability_id": "VARCHAR", "principal_id": "VARCHAR",
                      "token_id": "VARCHAR", "invoked_at": "VARCHAR", "response_mode": "VARCHAR",
                      "driver_id": "VARCHAR", "handle_id": "VARCHAR", "sensitivity": "VARCHAR",
                      "status": "VARCHAR", "event_type": "VARCHAR", "reason_code": "VARCHAR",
                      "error": "VARCHAR", "args": "JSON", "result_summary": "JSON", "correction": "JSON"}') AS a
FROM (
    SELECT file_id, record, shape, generate_subscripts(items, 1) AS pos, unnest(items) AS t
    FROM (SELECT file_id, record, shape, json_extract(doc, '$.traces[*]') AS items
          FROM agent_kernel_docs WHERE shape = 'envelope' AND json_type(doc, '$.traces') = 'ARRAY')
    UNION ALL
    SELECT file_id, record, shape, 1, doc->'trace' FROM agent_kernel_docs WHERE shape = 'audit'
    UNION ALL
    SELECT file_id, record, shape, 1, doc FROM agent_kernel_docs WHERE shape = 'action'
);

-- The first thing wrong with each record of the three ActionTrace shapes.
CREATE OR REPLACE TEMP TABLE agent_kernel_action_problems AS
SELECT file_id, record, arg_min(problem, pos) AS problem FROM (
    SELECT o.file_id, o.record, o.pos,
           (CASE WHEN o.shape = 'envelope' THEN 'traces[' || (o.pos - 1) || ']: '
                 WHEN o.shape = 'audit' THEN 'trace: ' ELSE '' END)
           || CASE
                WHEN json_type(o.t) <> 'OBJECT' THEN 'not an object'
                WHEN coalesce(json_type(o.t, '$.action_id'), 'NULL') = 'NULL' THEN 'missing required field ''action_id'''
                WHEN json_type(o.t, '$.action_id') <> 'VARCHAR' THEN 'field ''action_id'' must be a string'
                WHEN trim(o.a.action_id) = '' THEN 'field ''action_id'' is empty'
                WHEN coalesce(json_type(o.t, '$.capability_id'), 'NULL') = 'NULL' THEN 'missing required field ''capability_id'''
                WHEN json_type(o.t, '$.capability_id') <> 'VARCHAR' THEN 'field ''capability_id'' must be a string'
                WHEN coalesce(json_type(o.t, '$.correction'), 'NULL') NOT IN ('NULL', 'OBJECT')
                     THEN 'field ''correction'' must be an object'
              END AS problem
    FROM agent_kernel_objects o
) WHERE problem IS NOT NULL GROUP BY file_id, record
UNION ALL
SELECT file_id, record, 'field ''traces'' must be a list' FROM agent_kernel_docs
WHERE shape = 'envelope' AND coalesce(json_type(doc, '$.traces'), 'NULL') <> 'ARRAY';

-- The ActionTraces to load: per action_id, the copy with a correction, else the first (envelopes before
-- audit lines, then file order). The other copies' records are linked to it below.
CREATE OR REPLACE TEMP TABLE agent_kernel_actions AS
SELECT * EXCLUDE (nth) FROM (
    SELECT o.*, d.file, d.line,
           row_number() OVER (PARTITION BY o.a.action_id
                              ORDER BY json_type(o.t, '$.correction') = 'OBJECT' DESC, o.shape = 'envelope' DESC,
                                       o.file_id, o.record, o.pos) AS nth
    FROM agent_kernel_objects o JOIN agent_kernel_docs d USING (file_id, record)
    ANTI JOIN agent_kernel_action_problems p USING (file_id, record)
) WHERE nth = 1;

INSERT INTO record_links (file_id, record, trace_id)
SELECT o.file_id, o.record, o.a.action_id FROM agent_kernel_objects o
ANTI JOIN agent_kernel_action_problems p USING (file_id, record)
EXCEPT SELECT file_id, record, a.action_id FROM agent_kernel_actions;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT a.action_id, 'agent_kernel', coalesce(nullif(trim(a.principal_id), ''), 'agent-kernel'),
       CASE WHEN a.event_type IN ('expand', 'deny') THEN a.event_type || ' ' ELSE '' END || a.capability_id,
       CASE WHEN json_type(t, '$.correction') = 'OBJECT' THEN 'corrected_by_human'
            WHEN a.status IS NOT NULL THEN a.status
            WHEN a.error IS NOT NULL THEN 'failed' ELSE 'succeeded' END,
       NULL, file, line, lw_utc(a.invoked_at), lw_utc(a.invoked_at),
       -- the kernel's sensitivity tag screens the trace (privacy.screen reads metadata.sensitivity)
       json_object('sensitivity', a.sensitivity, 'event_type', a.event_type, 'response_mode', a.response_mode,
                   'driver_id', a.driver_id, 'reason_code', a.reason_code, 'shape', shape),
       nullif(json_merge_patch(t, '{"action_id":null,"capability_id":null,"principal_id":null,"invoked_at":null,
                                    "status":null,"error":null,"args":null,"result_summary":null,"correction":null,
                                    "sensitivity":null,"event_type":null,"response_mode":null,"driver_id":null,
                                    "reason_code":null}')::VARCHAR, '{}')::JSON,
       file_id, record
FROM agent_kernel_actions;

-- The call; its result, or the error that ended it (a refused grant is an error too); the correction.
INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT a.action_id, 1, a.action_id || '/call', 'tool_call', coalesce(a.event_type, 'invoke'), a.capability_id,
       NULL, NULL, a.capability_id, lw_utc(a.invoked_at), NULL,
       json_object('args', a.args, 'token_id', a.token_id, 'handle_id', a.handle_id), NULL, file_id, record
FROM agent_kernel_actions
UNION ALL
SELECT a.action_id, 2, a.action_id || CASE WHEN a.error IS NULL THEN '/result' ELSE '/error' END,
       CASE WHEN a.error IS NULL THEN 'tool_result' ELSE 'error' END,
       coalesce(a.status, CASE WHEN a.error IS NULL THEN 'succeeded' ELSE 'failed' END),
       coalesce(CASE WHEN a.event_type = 'deny' THEN 'denied (' || coalesce(a.reason_code, 'no reason code') || '): ' END, '')
           || coalesce(a.error, concat_ws(', ', a.result_summary->>'fact_count' || ' facts',
                                           a.result_summary->>'row_count' || ' rows',
                                           a.result_summary->>'warning_count' || ' warnings')),
       coalesce(a.status, CASE WHEN a.error IS NULL THEN 'succeeded' ELSE 'failed' END),
       a.error IS NULL AND coalesce(a.status, 'succeeded') <> 'failed',
       a.capability_id, lw_utc(a.invoked_at), a.action_id || '/call',
       json_object('result_summary', a.result_summary), NULL, file_id, record
FROM agent_kernel_actions
UNION ALL
SELECT a.action_id, 3, a.action_id || '/correction', 'human_correction', 'correction',
       coalesce(a.correction->>'note', a.correction->>'text', a.correction->>'comment', 'corrected'),
       NULL, NULL, NULL, lw_utc(coalesce(a.correction->>'corrected_at', a.invoked_at)),
       a.action_id || '/call', json_object('corrected_by', a.correction->>'corrected_by'),
       nullif(json_merge_patch(a.correction, '{"note":null,"corrected_by":null}')::VARCHAR, '{}')::JSON,
       file_id, record
FROM agent_kernel_actions WHERE json_type(t, '$.correction') = 'OBJECT';

-- The interop shape: one trace of many actions per record.
CREATE OR REPLACE TEMP TABLE agent_kernel_interop AS
SELECT file_id, file, line, record, doc,
       json_type(doc, '$.trace_id') AS t_trace_id,
       json_type(doc, '$.goal') AS t_goal,
       json_type(doc, '$.actions') AS t_actions
FROM agent_kernel_docs WHERE shape = 'interop';

CREATE OR REPLACE TEMP TABLE agent_kernel_interop_actions AS
SELECT file_id, record, pos, json_type(action) AS t_action, action,
       from_json(action, '{"id": "VARCHAR", "type": "VARCHAR", "status": "VARCHAR", "success": "VARCHAR",
                           "output": "VARCHAR", "tool": "VARCHAR", "tool_name": "VARCHAR", "timestamp": "VARCHAR",
                           "parent_id": "VARCHAR", "metadata": "JSON"}') AS a
FROM (
    SELECT file_id, record, generate_subscripts(items, 1) AS pos, unnest(items) AS action
    FROM (SELECT file_id, record, json_extract(doc, '$.actions[*]') AS items
          FROM agent_kernel_interop WHERE t_actions = 'ARRAY')
);

-- The first thing wrong with each interop record: its own fields, then its first bad action.
CREATE OR REPLACE TEMP TABLE agent_kernel_problems AS
WITH field_problems AS (
    SELECT file_id, record,
           CASE
             WHEN coalesce(t_trace_id, 'NULL') = 'NULL' THEN 'missing required field ''trace_id'''
             WHEN t_trace_id IN ('OBJECT', 'ARRAY') THEN 'field ''trace_id'' must be a string'
             WHEN trim(doc->>'trace_id') = '' THEN 'field ''trace_id'' is empty'
             WHEN coalesce(t_goal, 'NULL') = 'NULL' THEN 'missing required field ''goal'''
             WHEN t_goal IN ('OBJECT', 'ARRAY') THEN 'field ''goal'' must be a string'
             WHEN coalesce(t_actions, 'NULL') = 'NULL' THEN 'missing required field ''actions'''
             WHEN t_actions <> 'ARRAY' THEN 'field ''actions'' must be a list'
           END AS problem
    FROM agent_kernel_interop
),
action_problems AS (
    SELECT file_id, record,
           arg_min(CASE
                     WHEN t_action <> 'OBJECT' THEN 'action ' || pos || ' is not an object'
                     WHEN trim(coalesce(a.id, '')) = '' THEN 'action ' || pos || ': missing required field ''id'''
                     WHEN trim(coalesce(a.type, '')) = '' THEN 'action ' || pos || ': missing required field ''type'''
                   END, pos) FILTER (WHERE t_action <> 'OBJECT' OR trim(coalesce(a.id, '')) = ''
                                            OR trim(coalesce(a.type, '')) = '') AS problem
    FROM agent_kernel_interop_actions GROUP BY file_id, record
)
SELECT f.file_id, f.record, coalesce(f.problem, ap.problem) AS problem
FROM field_problems f LEFT JOIN action_problems ap USING (file_id, record)
WHERE coalesce(f.problem, ap.problem) IS NOT NULL
UNION ALL
SELECT * FROM agent_kernel_action_problems;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem
FROM agent_kernel_problems p JOIN agent_kernel_docs d USING (file_id, record);

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT doc->>'trace_id', 'agent_kernel', 'agent-kernel', doc->>'goal', doc->>'result',
       doc->'metadata'->>'tenant_id', file, line, NULL, NULL, doc->'metadata',
       -- kind only names the format, which the format column records
       nullif(json_merge_patch(doc, '{"kind":null,"trace_id":null,"goal":null,"result":null,"actions":null,"metadata":null}')::VARCHAR,
              '{}')::JSON,
       file_id, record
FROM agent_kernel_interop d
WHERE NOT EXISTS (SELECT 1 FROM agent_kernel_problems p WHERE p.file_id = d.file_id AND p.record = d.record);

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT t.trace_id,
       row_number() OVER (PARTITION BY ac.file_id, ac.record ORDER BY try_cast(ac.a.timestamp AS TIMESTAMP) NULLS LAST, ac.pos),
       ac.a.id, lw_canonical_type(ac.a.type), ac.a.type, ac.a.output, ac.a.status,
       -- an explicit success flag wins over the status word
       coalesce(lw_bool(ac.a.success), CASE WHEN lw_failed(ac.a.status, NULL) THEN false
                                            WHEN lw_succeeded(ac.a.status, NULL) THEN true END),
       coalesce(ac.a.tool, ac.a.tool_name),
       try_cast(ac.a.timestamp AS TIMESTAMP), ac.a.parent_id, ac.a.metadata,
       nullif(json_merge_patch(ac.action, '{"id":null,"type":null,"status":null,"success":null,"output":null,"tool":null,
                                            "tool_name":null,"timestamp":null,"parent_id":null,"metadata":null}')::VARCHAR,
              '{}')::JSON,
       ac.file_id, ac.record
FROM agent_kernel_interop_actions ac JOIN traces t USING (file_id, record)
WHERE t.format = 'agent_kernel';

DROP TABLE agent_kernel_docs;
DROP TABLE agent_kernel_objects;
DROP TABLE agent_kernel_action_problems;
DROP TABLE agent_kernel_actions;
DROP TABLE agent_kernel_interop;
DROP TABLE agent_kernel_interop_actions;
DROP TABLE agent_kernel_problems;
