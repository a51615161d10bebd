-- format: agent_kernel
-- title: agent-kernel ActionTrace: one trace per record, its actions as events
-- match: coalesce(doc->>'kind', '') = 'agent_kernel.ActionTrace'
--   OR (json_exists(doc, '$.trace_id') AND json_exists(doc, '$.actions'))
-- priority: 300
--
-- goal is the task and result the outcome; each action is an event whose type goes through
-- lw_canonical_type, whose status (ok, error, ...) gives success, and whose output is the content.

CREATE OR REPLACE TEMP TABLE agent_kernel_docs AS
SELECT file_id, file, line, record, doc,
       json_type(doc, '$.trace_id') AS t_trace_id,
       json_type(doc, '$.goal') AS t_goal,
       json_type(doc, '$.actions') AS t_actions
FROM records_in;

CREATE OR REPLACE TEMP TABLE agent_kernel_actions AS
SELECT file_id, record, pos, json_type(action) AS t_action, action,
       from_json(action, '{"id": "VARCHAR", "type": "VARCHAR", "status": "VARCHAR", "success": "VARCHAR",
                           "output": "VARCHAR", "tool": "VARCHAR", "tool_name": "VARCHAR", "timestamp": "VARCHAR",
                           "parent_id": "VARCHAR", "metadata": "JSON"}') AS a
FROM (
    SELECT file_id, record, generate_subscripts(items, 1) AS pos, unnest(items) AS action
    FROM (SELECT file_id, record, json_extract(doc, '$.actions[*]') AS items
          FROM agent_kernel_docs WHERE t_actions = 'ARRAY')
);

-- The first thing wrong with each record: its own fields, then its first bad action.
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
    FROM agent_kernel_docs
),
action_problems AS (
    SELECT file_id, record,
           arg_min(CASE
                     WHEN t_action <> 'OBJECT' THEN 'action ' || pos || ' is not an object'
                     WHEN trim(coalesce(a.id, '')) = '' THEN 'action ' || pos || ': missing required field ''id'''
                     WHEN trim(coalesce(a.type, '')) = '' THEN 'action ' || pos || ': missing required field ''type'''
                   END, pos) FILTER (WHERE t_action <> 'OBJECT' OR trim(coalesce(a.id, '')) = ''
                                            OR trim(coalesce(a.type, '')) = '') AS problem
    FROM agent_kernel_actions GROUP BY file_id, record
)
SELECT f.file_id, f.record, coalesce(f.problem, ap.problem) AS problem
FROM field_problems f LEFT JOIN action_problems ap USING (file_id, record)
WHERE coalesce(f.problem, ap.problem) IS NOT NULL;

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
FROM agent_kernel_docs d
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
FROM agent_kernel_actions ac JOIN traces t USING (file_id, record)
WHERE t.format = 'agent_kernel';

DROP TABLE agent_kernel_docs;
DROP TABLE agent_kernel_actions;
DROP TABLE agent_kernel_problems;
