-- format: traceevent
-- title: TraceEvent JSONL: one event per line, runs linked by metadata.run_id (../shared/formats/traceevent-jsonl.md)
-- match: json_exists(doc, '$.event_id') AND json_exists(doc, '$.event_type') AND json_exists(doc, '$.payload')
-- priority: 300
-- gathers: yes
-- roles: no user role and no person: agent-arena runs are autonomous (adityamhaske/agent-arena
--   core/architectures/*.py). run_start's task prompt = harness (the run's task statement, a workflow_step);
--   a supervisor's instruction to a worker (worker_start) and a peer's handoff to the next peer (peer_handoff,
--   its result passed on as the next agent's context) = parent (a message another agent addressed to it);
--   agent_start, llm calls, the critic's review, worker results, final outputs = agent; tool_result = tool.
--
-- Reads records_in(file_id, file, line, record, doc) and fills staging traces, events, rejects and
-- record_links. A trace is a run: metadata.run_id, else the nearest run_id up the parent_event_id chain
-- (within the file), else the event_id of the run_start at the chain's root; a run's lines are gathered
-- across all the files of the batch. Real runs differ from the spec (llm_response
-- and agent_start exist, worker_* carry `worker`, critic_review carries `draft_answer`): both are read.
-- Each line is parsed once into its fields; orders are worked out on narrow rows.

CREATE OR REPLACE TEMP MACRO traceevent_strip(s) AS regexp_replace(s, '^\s+|\s+$', '', 'g');

CREATE OR REPLACE TEMP TABLE traceevent_lines AS
SELECT file_id, file, line, record, doc,
       json_type(f.event_id) AS t_event_id,
       json_type(f.event_type) AS t_event_type,
       json_type(f.payload) AS t_payload,
       json_type(f.metadata) AS t_metadata,
       nullif(traceevent_strip(f.event_id->>'$'), '') AS event_id,
       nullif(traceevent_strip(f.event_type->>'$'), '') AS event_type,
       lower(traceevent_strip(f.event_type->>'$')) AS kind,
       nullif(traceevent_strip(f.parent_event_id->>'$'), '') AS parent_id,
       nullif(traceevent_strip(f.metadata->>'run_id'), '') AS run_id,
       -- a payload or metadata written as null is kept as the JSON null it is (asked of the line only then)
       CASE WHEN f.payload IS NOT NULL THEN f.payload WHEN json_exists(doc, '$.payload') THEN 'null'::JSON END AS payload,
       CASE WHEN f.metadata IS NOT NULL THEN f.metadata WHEN json_exists(doc, '$.metadata') THEN 'null'::JSON END
           AS metadata,
       -- an offset is honoured; a time without one is already UTC
       CASE WHEN regexp_matches(f.timestamp->>'$', '(Z|[+-]\d\d:?\d\d)$')
            THEN timezone('UTC', try_cast(f.timestamp->>'$' AS TIMESTAMPTZ))
            ELSE try_cast(f.timestamp->>'$' AS TIMESTAMP) END AS ts
-- each line in one typed parse: its fields as their JSON text (a JSON null, like a missing field, is NULL)
FROM (SELECT *, from_json(doc, '{"event_id": "JSON", "event_type": "JSON", "parent_event_id": "JSON",
                                 "metadata": "JSON", "payload": "JSON", "timestamp": "JSON"}') AS f
      FROM records_in);

-- Lines a parent_event_id can point at: the first line carrying each event_id in its file.
CREATE OR REPLACE TEMP TABLE traceevent_nodes AS
SELECT file_id, record, event_id, parent_id, run_id, kind
FROM traceevent_lines
WHERE event_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY file_id, event_id ORDER BY record) = 1;

-- The run of every line: its own run_id, else up the parent chain to the first run_id or a root run_start.
-- UNION (not UNION ALL) drops repeated steps, so a cycle in the chain ends the walk.
CREATE OR REPLACE TEMP TABLE traceevent_line_traces AS
WITH RECURSIVE walk(file_id, record, next_id) AS (
    SELECT file_id, record, parent_id FROM traceevent_lines WHERE run_id IS NULL AND parent_id IS NOT NULL
    UNION
    SELECT w.file_id, w.record, n.parent_id
    FROM walk w JOIN traceevent_nodes n ON n.file_id = w.file_id AND n.event_id = w.next_id
    WHERE n.run_id IS NULL AND n.parent_id IS NOT NULL
),
resolved AS (
    SELECT w.file_id, w.record,
           coalesce(any_value(n.run_id) FILTER (WHERE n.run_id IS NOT NULL),
                    any_value(n.event_id) FILTER (WHERE n.parent_id IS NULL AND n.kind = 'run_start')) AS trace_id
    FROM walk w JOIN traceevent_nodes n ON n.file_id = w.file_id AND n.event_id = w.next_id
    GROUP BY w.file_id, w.record
)
SELECT l.file_id, l.record,
       coalesce(l.run_id, r.trace_id,
                CASE WHEN l.parent_id IS NULL AND l.kind = 'run_start' THEN l.event_id END) AS trace_id
FROM traceevent_lines l LEFT JOIN resolved r USING (file_id, record);

-- The first thing wrong with each line; then, among the good lines, each later line carrying an event_id
-- already seen in its run (in any file): the same JSON is a replay or a second delivery, linked to the
-- run; anything else is a conflict, rejected. The first line wins either way.
CREATE OR REPLACE TEMP TABLE traceevent_set_aside AS
WITH checked AS (
    SELECT l.file_id, l.record, l.line, l.file, l.event_id, lt.trace_id,
           CASE
             WHEN l.t_event_id IS NULL OR l.t_event_id = 'NULL' OR l.event_id IS NULL
               THEN 'missing required field ''event_id'''
             WHEN l.t_event_id NOT IN ('VARCHAR', 'BIGINT', 'UBIGINT') THEN 'field ''event_id'' must be a string'
             WHEN l.t_event_type IS NULL OR l.t_event_type = 'NULL' OR l.event_type IS NULL
               THEN 'missing required field ''event_type'''
             WHEN l.t_event_type <> 'VARCHAR' THEN 'field ''event_type'' must be a string'
             WHEN l.t_payload NOT IN ('OBJECT', 'NULL') THEN 'field ''payload'' must be an object'
             WHEN l.t_metadata NOT IN ('OBJECT', 'NULL') THEN 'field ''metadata'' must be an object'
             WHEN lt.trace_id IS NULL AND l.parent_id IS NULL
               THEN 'no metadata.run_id and no parent_event_id: cannot tell which run it belongs to'
             WHEN lt.trace_id IS NULL
               THEN 'no metadata.run_id, and its parent_event_id chain reaches no event with a run_id or a run_start in this file'
           END AS problem
    FROM traceevent_lines l JOIN traceevent_line_traces lt USING (file_id, record)
),
repeats AS (
    SELECT file_id, record, trace_id,
           CASE WHEN NOT identical
                THEN 'conflicting duplicate of event ' || event_id || ' of trace ' || trace_id || ' (first at '
                     || first_file || coalesce(' line ' || first_line, ' record ' || first_record) || ')' END AS problem
    FROM (SELECT c.*,
                 first_value(c.file) OVER w AS first_file, first_value(c.line) OVER w AS first_line,
                 first_value(c.record) OVER w AS first_record,
                 -- the same text, else the same JSON (parsed only where the texts differ)
                 c.doc = first_value(c.doc) OVER w OR json(c.doc)::VARCHAR = json(first_value(c.doc) OVER w)::VARCHAR
                     AS identical,
                 row_number() OVER w AS nth
          FROM (SELECT checked.*, l.doc
                FROM checked JOIN traceevent_lines l USING (file_id, record) WHERE problem IS NULL) c
          WINDOW w AS (PARTITION BY trace_id, event_id ORDER BY file_id, record))
    WHERE nth > 1
)
SELECT file_id, record, NULL AS trace_id, problem FROM checked WHERE problem IS NOT NULL
UNION ALL
SELECT file_id, record, trace_id, problem FROM repeats;

INSERT INTO rejects (file_id, line, record, reason)
SELECT l.file_id, l.line, l.record, c.problem
FROM traceevent_set_aside c JOIN traceevent_lines l USING (file_id, record)
WHERE c.problem IS NOT NULL;

INSERT INTO record_links (file_id, record, trace_id)
SELECT file_id, record, trace_id FROM traceevent_set_aside WHERE problem IS NULL;

-- The usable lines, in run order: by timestamp, then position. A line without a timestamp keeps the
-- timestamp of the line before it, so it stays where it was written.
CREATE OR REPLACE TEMP TABLE traceevent_kept AS
SELECT l.*, o.trace_id, o.seq
FROM traceevent_lines l
-- the order is worked out on narrow rows, then joined to the lines
JOIN (SELECT l.file_id, l.record, lt.trace_id,
             row_number() OVER (PARTITION BY lt.trace_id ORDER BY l.sort_ts NULLS FIRST, l.file_id, l.record) AS seq
      FROM (SELECT file_id, record, last_value(ts IGNORE NULLS) OVER (PARTITION BY file_id ORDER BY record) AS sort_ts
            FROM traceevent_lines) l
      JOIN traceevent_line_traces lt USING (file_id, record)
      -- the lines set aside are rejected or linked
      ANTI JOIN traceevent_set_aside c USING (file_id, record)) o USING (file_id, record);

-- peer_handoff messages have a fixed form: `HANDOFF: customer_id=..., tier=..., name=..., status=...`.
CREATE OR REPLACE TEMP TABLE traceevent_handoffs AS
WITH pieces AS (
    SELECT file_id, record, generate_subscripts(parts, 1) AS pos, unnest(parts) AS piece
    FROM (SELECT file_id, record,
                 string_split(regexp_replace(
                     regexp_replace(payload->>'handoff_message', '^\s*HANDOFF:\s*', ''),
                     ',\s*([A-Za-z_][A-Za-z0-9_]*)=', chr(31) || '\1=', 'g'), chr(31)) AS parts
          FROM traceevent_kept
          WHERE kind = 'peer_handoff' AND regexp_matches(payload->>'handoff_message', '^\s*HANDOFF:'))
),
fields AS (
    SELECT file_id, record, pos, traceevent_strip(split_part(piece, '=', 1)) AS key,
           traceevent_strip(substr(piece, strpos(piece, '=') + 1)) AS value
    FROM pieces WHERE strpos(piece, '=') > 1
    QUALIFY row_number() OVER (PARTITION BY file_id, record, key ORDER BY pos) = 1
)
SELECT file_id, record,
       ('{' || string_agg(to_json(key)::VARCHAR || ':' || to_json(value)::VARCHAR, ',' ORDER BY pos) || '}')::JSON AS handoff
FROM fields GROUP BY file_id, record;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT trace_id, 'traceevent',
       'agent-arena' || coalesce(':' || coalesce(
           arg_min(payload->>'architecture', seq) FILTER (WHERE kind = 'run_start'),
           arg_max(payload->>'architecture', seq) FILTER (WHERE kind = 'run_finish')), ''),
       coalesce(arg_min(traceevent_strip(payload->>'task_prompt'), seq) FILTER (WHERE kind = 'run_start'),
                arg_min(traceevent_strip(payload->>'prompt'), seq)
                    FILTER (WHERE kind IN ('agent_start', 'supervisor_start'))),
       CASE WHEN NOT bool_or(kind IN ('agent_finish', 'run_finish', 'supervisor_finish', 'revision_finish'))
                 THEN 'incomplete'
            WHEN bool_or(kind = 'error') THEN 'failure'
            ELSE 'success' END,
       arg_min(metadata->>'tenant_id', (file_id, record)),
       arg_min(file, (file_id, record)), arg_min(line, (file_id, record)),
       min(ts), max(ts),
       arg_min(metadata, (file_id, record)),
       NULL,
       min(file_id), arg_min(record, (file_id, record))
FROM traceevent_kept
GROUP BY trace_id;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT k.trace_id, k.seq, k.event_id,
       CASE
         WHEN k.kind IN ('run_start', 'agent_start', 'supervisor_start', 'worker_start', 'revision_start',
                         'peer_handoff', 'agent_step') THEN 'workflow_step'
         WHEN k.kind IN ('llm_call', 'llm_response') THEN 'model_call'
         WHEN k.kind IN ('agent_finish', 'run_finish', 'supervisor_finish', 'revision_finish') THEN 'final_answer'
         -- the critic and a worker speak to another agent: their text is an agent's message
         WHEN k.kind IN ('critic_review', 'worker_finish') THEN 'assistant_message'
         ELSE lw_canonical_type(k.kind)
       END,
       k.event_type,
       CASE k.kind
         WHEN 'run_start' THEN traceevent_strip(k.payload->>'task_prompt')
         WHEN 'agent_start' THEN traceevent_strip(k.payload->>'prompt')
         WHEN 'supervisor_start' THEN traceevent_strip(k.payload->>'prompt')
         WHEN 'worker_start' THEN concat_ws(': ', coalesce(k.payload->>'worker', k.payload->>'worker_name'),
                                            traceevent_strip(k.payload->>'instruction'))
         WHEN 'worker_finish' THEN traceevent_strip(k.payload->>'result')
         WHEN 'critic_review' THEN traceevent_strip(k.payload->>'critique')
         WHEN 'revision_start' THEN traceevent_strip(k.payload->>'critique')
         WHEN 'peer_handoff' THEN traceevent_strip(k.payload->>'handoff_message')
         -- the spec's llm_call carries its response; real ones only the conversation so far
         WHEN 'llm_call' THEN coalesce(k.payload->>'response', traceevent_strip(k.payload->>'$.messages[#-1].content'))
         WHEN 'llm_response' THEN coalesce(
             nullif(traceevent_strip(k.payload->>'text'), ''),
             nullif(array_to_string(list_transform(json_extract(k.payload, '$.tool_calls[*]'),
                 lambda c: (c->>'name') || '(' || coalesce((c->'arguments')::VARCHAR, '') || ')'), '; '), ''))
         WHEN 'tool_call' THEN (k.payload->'arguments')::VARCHAR
         WHEN 'tool_result' THEN k.payload->>'result'
         -- the traceback stays in extra: it is long, and full of local paths
         WHEN 'error' THEN concat_ws(': ', k.payload->>'error_type', k.payload->>'message')
         WHEN 'agent_finish' THEN k.payload->>'final_output'
         WHEN 'run_finish' THEN k.payload->>'final_output'
         WHEN 'supervisor_finish' THEN k.payload->>'final_output'
         WHEN 'revision_finish' THEN k.payload->>'final_output'
         ELSE k.payload::VARCHAR
       END,
       CASE WHEN k.kind = 'tool_result' AND lw_truthy(k.payload->>'error') THEN 'error'
            WHEN k.kind = 'tool_result' AND lw_falsy(k.payload->>'error') THEN 'success' END,
       CASE WHEN k.kind = 'tool_result' AND lw_truthy(k.payload->>'error') THEN false
            WHEN k.kind = 'tool_result' AND lw_falsy(k.payload->>'error') THEN true END,
       CASE WHEN k.kind IN ('tool_call', 'tool_result') THEN nullif(traceevent_strip(k.payload->>'tool_name'), '') END,
       k.ts, k.parent_id,
       CASE WHEN h.handoff IS NOT NULL
            THEN json_merge_patch(coalesce(k.metadata, '{}'), json_object('handoff', h.handoff))
            WHEN k.kind IN ('worker_start', 'worker_finish')
            THEN json_merge_patch(coalesce(k.metadata, '{}'),
                                  json_object('worker', coalesce(k.payload->>'worker', k.payload->>'worker_name')))
            ELSE k.metadata END,
       k.payload,
       k.file_id, k.record,
       -- another agent's instruction to this one: a supervisor's to its worker, a peer's handoff
       CASE WHEN k.kind IN ('worker_start', 'peer_handoff') THEN 'parent' END
FROM traceevent_kept k LEFT JOIN traceevent_handoffs h USING (file_id, record);

DROP TABLE traceevent_lines;
DROP TABLE traceevent_nodes;
DROP TABLE traceevent_line_traces;
DROP TABLE traceevent_set_aside;
DROP TABLE traceevent_kept;
DROP TABLE traceevent_handoffs;
DROP MACRO traceevent_strip;
