-- format: lessonweaver
-- title: lessonweaver trace JSON: one trace per record (../shared/formats/lessonweaver-trace.md)
-- match: json_exists(doc, '$.events') OR (json_exists(doc, '$.trace_id') AND json_exists(doc, '$.task'))
--   OR coalesce(doc->>'schema', '') LIKE 'weaver-spec/failure-case%'
-- priority: 100
-- roles: as its events' types say (../shared/formats/lessonweaver-trace.md): user_message = human (user
--   input), human_correction = human (a person's feedback correcting the agent; a failure case's
--   `correction`), tool results = tool, workflow steps and evaluations = harness, the rest = agent. The format
--   names no other author, so no actor is set (NULL: as the type says).
--
-- Reads records_in(file_id, file, line, record, doc) and fills staging traces, events and rejects.
-- Also reads the weaver-spec failure-case records that lessonweaver's own examples include: the failure
-- becomes an error event and its correction a human_correction.

-- The keys of a record and of an event that have a canonical column; any other key is kept in extra.
CREATE OR REPLACE TEMP MACRO lw_record_keys() AS
    ['trace_id', 'source', 'task', 'outcome', 'metadata', 'events', 'schema', 'failure_id', 'failure', 'correction'];
CREATE OR REPLACE TEMP MACRO lw_event_keys() AS
    ['id', 'type', 'content', 'status', 'success', 'metadata', 'timestamp', 'parent_id', 'tool_name'];

-- Could trim() make this id or type empty? trim() strips the 17 Unicode space characters (U+0020, U+00A0
-- and above), so every string it empties starts with one of them: true for all of those, and for the few
-- others that start with a control character or any non-ASCII one. Two comparisons instead of a trim per event.
CREATE OR REPLACE TEMP MACRO lw_maybe_blank(x) AS x IS NULL OR x < '!' OR x >= chr(160);

-- Each record is parsed once into a typed struct, events included. The required fields arrive as their
-- JSON text (a number and an object would both arrive as text in a VARCHAR), which says their kind, and
-- are then read as strings from that short text. Events come as a list of structs; a record whose
-- `events` is not a list (the struct has none) is asked its kind again, alone. The keys with no canonical
-- column (kept in extra) are the one other pass: json_keys of the record and of its events, flags only.
-- The few records the flags point at are examined again below; the rest go straight from the struct to
-- `events`.
CREATE OR REPLACE TEMP TABLE lw_docs AS
SELECT file_id, file, line, record,
       from_json(j_trace_id, '"VARCHAR"') AS trace_id, from_json(j_source, '"VARCHAR"') AS source,
       from_json(j_task, '"VARCHAR"') AS task, from_json(j_outcome, '"VARCHAR"') AS outcome,
       metadata, schema, failure_id, failure, correction, evs, is_failure_case,
       lw_json_kind(j_trace_id) AS t_trace_id, lw_json_kind(j_source) AS t_source, lw_json_kind(j_task) AS t_task,
       lw_json_kind(j_outcome) AS t_outcome,
       CASE WHEN evs IS NOT NULL THEN 'ARRAY' ELSE json_type(doc, '$.events') END AS t_events,
       NOT list_has_all(lw_record_keys(), json_keys(doc))
           OR (coalesce(schema, '') NOT LIKE 'weaver-spec/failure-case%' AND schema IS NOT NULL) AS has_extra,
       evs IS NOT NULL AND NOT list_has_all(lw_event_keys(), flatten(json_keys(doc, '$.events[*]'))) AS events_extra,
       -- A trace whose events may be wrong (not objects, no id or type, an id twice): only these are
       -- examined event by event below. An event that is not an object parses to NULL fields, so a
       -- missing id (which list_unique does not count) or type flags it too.
       evs IS NOT NULL AND (
           list_bool_or(list_transform(evs, lambda e: lw_maybe_blank(e.id) OR lw_maybe_blank(e.type)))
           OR list_unique(list_transform(evs, lambda e: e.id)) < len(evs)) AS events_suspect
FROM (SELECT file_id, file, line, record, doc, d.trace_id AS j_trace_id, d.source AS j_source, d.task AS j_task,
             d.outcome AS j_outcome, d.metadata, d.schema, d.failure_id, d.failure, d.correction, d.events AS evs,
             coalesce(d.schema, '') LIKE 'weaver-spec/failure-case%' AS is_failure_case
      FROM (SELECT *,
                   from_json(doc, '{"trace_id": "JSON", "source": "JSON", "task": "JSON", "outcome": "JSON",
                                    "metadata": "JSON", "schema": "VARCHAR", "failure_id": "VARCHAR",
                                    "failure": "JSON", "correction": "JSON",
                                    "events": [{"id": "VARCHAR", "type": "VARCHAR", "content": "VARCHAR",
                                                "status": "VARCHAR", "success": "VARCHAR", "metadata": "JSON",
                                                "timestamp": "VARCHAR", "parent_id": "VARCHAR", "tool_name": "VARCHAR"}]}') AS d
            FROM records_in));

-- Event by event, for the suspect traces only: the struct and the event's JSON type.
CREATE OR REPLACE TEMP TABLE lw_suspect_events AS
SELECT file_id, record, generate_subscripts(evs, 1) AS seq, unnest(evs) AS e,
       coalesce(unnest(json_type(r.doc, '$.events[*]')), 'NULL') AS t_ev
FROM lw_docs d JOIN records_in r USING (file_id, record)
WHERE d.events_suspect AND NOT d.is_failure_case;

-- The first thing wrong with each trace record, in the order a person would fix them.
CREATE OR REPLACE TEMP TABLE lw_problems AS
WITH field_problems AS (
    SELECT file_id, record,
           CASE
             WHEN t_trace_id IS NULL OR t_trace_id = 'NULL' THEN 'missing required field ''trace_id'''
             WHEN t_trace_id NOT IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE') THEN 'field ''trace_id'' must be a string'
             WHEN trim(trace_id) = '' THEN 'field ''trace_id'' is empty'
             WHEN t_source IS NULL OR t_source = 'NULL' THEN 'missing required field ''source'''
             WHEN t_task IS NULL OR t_task = 'NULL' THEN 'missing required field ''task'''
             WHEN t_outcome IS NULL OR t_outcome = 'NULL' THEN 'missing required field ''outcome'''
             WHEN t_events IS NULL OR t_events = 'NULL' THEN 'missing required field ''events'''
             WHEN t_events <> 'ARRAY' THEN 'field ''events'' must be a list'
             WHEN t_source IN ('OBJECT', 'ARRAY') THEN 'field ''source'' must be a string'
             WHEN t_task IN ('OBJECT', 'ARRAY') THEN 'field ''task'' must be a string'
             WHEN t_outcome IN ('OBJECT', 'ARRAY') THEN 'field ''outcome'' must be a string'
           END AS problem
    FROM lw_docs WHERE NOT is_failure_case
    UNION ALL
    SELECT file_id, record,
           CASE WHEN failure_id IS NULL THEN 'missing required field ''failure_id''' END
    FROM lw_docs WHERE is_failure_case
),
event_problems AS (
    SELECT file_id, record,
           arg_min(CASE
                     WHEN t_ev <> 'OBJECT' THEN 'event ' || seq || ' is not an object'
                     WHEN e.id IS NULL OR trim(e.id) = '' THEN 'event ' || seq || ': missing required field ''id'''
                     WHEN e.type IS NULL OR trim(e.type) = '' THEN 'event ' || seq || ': missing required field ''type'''
                     ELSE 'event ' || seq || ': duplicate event id (the same as event ' || first_seq || ')'
                   END, seq) FILTER (WHERE t_ev <> 'OBJECT' OR e.id IS NULL OR trim(e.id) = ''
                                            OR e.type IS NULL OR trim(e.type) = '' OR seq > first_seq) AS problem
    FROM (SELECT *, min(seq) OVER (PARTITION BY file_id, record, e.id) AS first_seq FROM lw_suspect_events)
    GROUP BY file_id, record
)
SELECT f.file_id, f.record, coalesce(f.problem, ep.problem) AS problem
FROM field_problems f LEFT JOIN event_problems ep USING (file_id, record)
WHERE coalesce(f.problem, ep.problem) IS NOT NULL;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem
FROM lw_problems p JOIN lw_docs d USING (file_id, record);

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT CASE WHEN is_failure_case THEN failure_id ELSE trace_id END,
       'lessonweaver',
       source,
       task,
       CASE WHEN NOT is_failure_case THEN outcome
            WHEN correction IS NOT NULL THEN 'corrected_by_human'
            ELSE 'failure' END,
       metadata->>'tenant_id',
       file, line, NULL, NULL,
       metadata,
       CASE WHEN has_extra THEN nullif(json_merge_patch((SELECT r.doc FROM records_in r
                                                          WHERE r.file_id = d.file_id AND r.record = d.record),
                                                         CASE WHEN is_failure_case
           THEN '{"failure_id":null,"source":null,"task":null,"metadata":null,"failure":null,"correction":null}'
           ELSE '{"trace_id":null,"source":null,"task":null,"outcome":null,"metadata":null,"events":null}' END)::VARCHAR,
           '{}')::JSON END,
       file_id, record
FROM lw_docs d
WHERE NOT EXISTS (SELECT 1 FROM lw_problems p WHERE p.file_id = d.file_id AND p.record = d.record);

-- Fields with no canonical column, for the few events that have them: taken from the record's text.
CREATE OR REPLACE TEMP TABLE lw_event_extras AS
SELECT file_id, record, seq,
       -- the event without its known keys: a patch that sets each of them to null removes it
       json_merge_patch(json_extract(doc, '$.events[' || (seq - 1) || ']'),
                        to_json(map_from_entries(list_transform(lw_event_keys(), lambda k: {'k': k, 'v': NULL::JSON}))))
           AS extra
FROM (
    SELECT r.file_id, r.record, r.doc, generate_subscripts(keys, 1) AS seq, unnest(keys) AS ks
    FROM (SELECT file_id, record, doc, json_keys(doc, '$.events[*]') AS keys
          FROM records_in SEMI JOIN (SELECT file_id, record FROM lw_docs WHERE events_extra) USING (file_id, record)) r
)
WHERE NOT list_has_all(lw_event_keys(), ks);

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT t.trace_id, ev.seq, ev.e.id, lw_canonical_type(ev.e.type), ev.e.type, ev.e.content, ev.e.status,
       lw_bool(ev.e.success),
       coalesce(ev.e.tool_name, ev.e.metadata->>'tool', ev.e.metadata->>'tool_name',
                CASE WHEN lw_canonical_type(ev.e.type) IN ('tool_call', 'tool_result')
                     THEN lw_tool_from_content(ev.e.content) END),
       try_cast(ev.e.timestamp AS TIMESTAMP),
       ev.e.parent_id,
       ev.e.metadata,
       x.extra,
       ev.file_id, ev.record
FROM (SELECT file_id, record, generate_subscripts(evs, 1) AS seq, unnest(evs) AS e
      FROM lw_docs WHERE NOT is_failure_case AND t_events = 'ARRAY') ev
JOIN traces t USING (file_id, record)
LEFT JOIN lw_event_extras x USING (file_id, record, seq)
WHERE t.format = 'lessonweaver';

-- Failure cases: the failure, then its correction.
INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT t.trace_id, 1, 'failure', 'error', 'failure',
       concat_ws(' ', d.failure->>'summary', d.failure->>'detail'),
       'failed', false, NULL, NULL, NULL,
       json_object('severity', d.failure->>'severity'), NULL, d.file_id, d.record
FROM lw_docs d JOIN traces t USING (file_id, record)
WHERE d.is_failure_case AND d.failure IS NOT NULL
UNION ALL
SELECT t.trace_id, 2, 'correction', 'human_correction', 'correction',
       d.correction->>'summary', NULL, NULL, NULL, NULL, NULL, NULL, NULL, d.file_id, d.record
FROM lw_docs d JOIN traces t USING (file_id, record)
WHERE d.is_failure_case AND d.correction IS NOT NULL;

DROP TABLE lw_docs;
DROP TABLE lw_suspect_events;
DROP TABLE lw_event_extras;
DROP TABLE lw_problems;
DROP MACRO lw_record_keys;
DROP MACRO lw_event_keys;
DROP MACRO lw_maybe_blank;
