-- format: otlp
-- title: OpenTelemetry traces as OTLP JSON: resourceSpans exports (one per record), or one span per line
-- match: json_exists(doc, '$.resourceSpans')
--   OR (json_exists(doc, '$.traceId') AND json_exists(doc, '$.spanId'))
-- priority: 300
-- gathers: yes
--
-- A trace is a traceId, gathered across the files of the batch; its spans become events in start-time order
-- (then file and position), followed in time by their span events (exceptions, feedback, evaluations) and,
-- for a span whose status is ERROR without an exception event, an error event at the span's end. Span types
-- follow the OpenTelemetry GenAI semantic conventions and OpenInference span kinds (see docs/formats.md). A
-- record with one unusable span is rejected whole, naming the span's position, as the lessonweaver adapter
-- does for a bad event; a span delivered again with the same content is kept once and its record linked to
-- the trace (record_links), one delivered again with other content is unusable.

-- An OTLP AnyValue as plain JSON. intValue is a string in OTLP JSON (int64); a non-finite double stays
-- text because JSON has no NaN. Nested arrays and kvlists are converted one level deep.
CREATE OR REPLACE TEMP MACRO otlp_scalar(v) AS
    CASE
        WHEN json_exists(v, '$.stringValue') THEN to_json(v->>'stringValue')
        WHEN json_exists(v, '$.intValue') THEN coalesce(to_json(try_cast(v->>'intValue' AS HUGEINT)), to_json(v->>'intValue'))
        WHEN json_exists(v, '$.doubleValue') THEN
            CASE WHEN isfinite(try_cast(v->>'doubleValue' AS DOUBLE)) THEN to_json(CAST(v->>'doubleValue' AS DOUBLE))
                 ELSE to_json(v->>'doubleValue') END
        WHEN json_exists(v, '$.boolValue') THEN to_json(lw_truthy(v->>'boolValue'))
        WHEN json_exists(v, '$.bytesValue') THEN to_json(v->>'bytesValue')
        ELSE v
    END;

CREATE OR REPLACE TEMP MACRO otlp_value(v) AS
    CASE
        WHEN json_exists(v, '$.arrayValue') THEN
            to_json(list_transform(json_extract(v, '$.arrayValue.values[*]'), lambda x: otlp_scalar(x)))
        -- assembled as text: a kvlist may repeat a key, which a MAP would refuse
        WHEN json_exists(v, '$.kvlistValue') THEN
            ('{' || array_to_string(list_transform(json_extract(v, '$.kvlistValue.values[*]'),
                lambda kv: to_json(coalesce(kv->>'key', ''))::VARCHAR || ':' || coalesce(otlp_scalar(kv->'value')::VARCHAR, 'null')),
                ',') || '}')::JSON
        ELSE otlp_scalar(v)
    END;

-- OTLP timestamps are nanoseconds since the epoch, written as a string or a number.
CREATE OR REPLACE TEMP MACRO otlp_ts(ns) AS make_timestamp(ns // 1000);

CREATE OR REPLACE TEMP TABLE otlp_docs AS
SELECT file_id, file, line, record, doc,
       json_exists(doc, '$.resourceSpans') AS is_export,
       json_type(doc, '$.resourceSpans') AS t_resource_spans
FROM records_in;

-- Every span with its resource and scope, numbered in file order within its record (pos). `path` names
-- the span's place in an export document for reject reasons; a span line has no path.
CREATE OR REPLACE TEMP TABLE otlp_span_rows AS
WITH resource_spans AS (
    SELECT file_id, record, generate_subscripts(items, 1) - 1 AS rs_index, unnest(items) AS rs
    FROM (SELECT file_id, record, json_extract(doc, '$.resourceSpans[*]') AS items
          FROM otlp_docs WHERE t_resource_spans = 'ARRAY')
),
scope_lists AS (
    -- exports before OTLP 1.0 call scopeSpans instrumentationLibrarySpans
    SELECT file_id, record, rs_index, rs, container,
           CASE container WHEN 'scopeSpans' THEN json_extract(rs, '$.scopeSpans[*]')
                ELSE json_extract(rs, '$.instrumentationLibrarySpans[*]') END AS items
    FROM (SELECT *, CASE WHEN json_exists(rs, '$.scopeSpans') THEN 'scopeSpans'
                         ELSE 'instrumentationLibrarySpans' END AS container
          FROM resource_spans)
),
scope_spans AS (
    SELECT file_id, record, rs_index, rs, container, generate_subscripts(items, 1) - 1 AS sc_index,
           unnest(items) AS sc
    FROM scope_lists
),
spans AS (
    SELECT file_id, record, rs_index, rs->'resource' AS resource, rs->>'schemaUrl' AS schema_url,
           coalesce(sc->'scope', sc->'instrumentationLibrary') AS scope,
           container, sc_index, generate_subscripts(items, 1) - 1 AS sp_index, unnest(items) AS span
    FROM (SELECT *, json_extract(sc, '$.spans[*]') AS items FROM scope_spans)
)
SELECT file_id, record,
       row_number() OVER (PARTITION BY file_id, record ORDER BY rs_index, sc_index, sp_index) AS pos,
       'resourceSpans[' || rs_index || '].' || container || '[' || sc_index || '].spans[' || sp_index || ']: ' AS path,
       rs_index, resource, schema_url, scope, span
FROM spans
UNION ALL
SELECT file_id, record, 1, '', 0, doc->'resource', NULL, doc->'scope', doc
FROM otlp_docs WHERE NOT is_export;

-- The first thing wrong with each record, in span order.
CREATE OR REPLACE TEMP TABLE otlp_problems AS
WITH span_problems AS (
    SELECT file_id, record, pos,
           CASE
             WHEN json_type(span) <> 'OBJECT' THEN path || 'span is not an object'
             WHEN coalesce(json_type(span, '$.traceId'), 'NULL') = 'NULL' THEN path || 'missing required field ''traceId'''
             WHEN json_type(span, '$.traceId') IN ('OBJECT', 'ARRAY') THEN path || 'field ''traceId'' must be a string'
             WHEN trim(span->>'traceId') = '' THEN path || 'field ''traceId'' is empty'
             WHEN coalesce(json_type(span, '$.spanId'), 'NULL') = 'NULL' THEN path || 'missing required field ''spanId'''
             WHEN json_type(span, '$.spanId') IN ('OBJECT', 'ARRAY') THEN path || 'field ''spanId'' must be a string'
             WHEN trim(span->>'spanId') = '' THEN path || 'field ''spanId'' is empty'
             WHEN coalesce(json_type(span, '$.attributes'), 'NULL') NOT IN ('NULL', 'ARRAY', 'OBJECT')
                  THEN path || 'field ''attributes'' must be a list'
             WHEN coalesce(json_type(span, '$.events'), 'NULL') NOT IN ('NULL', 'ARRAY')
                  THEN path || 'field ''events'' must be a list'
             WHEN first_bad_event IS NOT NULL THEN path || 'events[' || (first_bad_event - 1) || '] is not an object'
           END AS problem
    FROM (SELECT *, nullif(list_position(list_transform(json_extract(span, '$.events[*]'),
                                                        lambda e: json_type(e) = 'OBJECT'), false), 0) AS first_bad_event
          FROM otlp_span_rows)
)
SELECT file_id, record, arg_min(problem, pos) AS problem
FROM span_problems WHERE problem IS NOT NULL GROUP BY file_id, record
UNION ALL
SELECT file_id, record, 'field ''resourceSpans'' must be a list'
FROM otlp_docs WHERE is_export AND t_resource_spans <> 'ARRAY'
UNION ALL
SELECT d.file_id, d.record, 'no spans in ''resourceSpans'''
FROM otlp_docs d
WHERE d.is_export AND d.t_resource_spans = 'ARRAY'
  AND NOT EXISTS (SELECT 1 FROM otlp_span_rows s WHERE s.file_id = d.file_id AND s.record = d.record);

-- The spans of records with no format problem, parsed once. `content` is what a second delivery of the
-- span must repeat: the span as written, its resource and its scope.
CREATE OR REPLACE TEMP TABLE otlp_parsed AS
SELECT s.file_id, s.record, s.pos, s.path, s.rs_index, s.resource, s.schema_url, s.scope, s.span,
       s.span->>'traceId' AS trace_id,
       s.span->>'spanId' AS span_id,
       nullif(trim(s.span->>'parentSpanId'), '') AS parent_span_id,
       s.span->>'name' AS name,
       try_cast(s.span->>'startTimeUnixNano' AS BIGINT) AS start_ns,
       try_cast(s.span->>'endTimeUnixNano' AS BIGINT) AS end_ns,
       s.span->'status'->>'code' AS status_code,
       nullif(trim(s.span->'status'->>'message'), '') AS status_message,
       CASE upper(trim(s.span->'status'->>'code'))
            WHEN '2' THEN 'error' WHEN 'STATUS_CODE_ERROR' THEN 'error' WHEN 'ERROR' THEN 'error'
            WHEN '1' THEN 'ok' WHEN 'STATUS_CODE_OK' THEN 'ok' WHEN 'OK' THEN 'ok'
            ELSE 'unset' END AS span_status,
       {'span': json(json_merge_patch(s.span, '{"resource":null,"scope":null}'))::VARCHAR,
        'resource': json(s.resource)::VARCHAR, 'scope': json(s.scope)::VARCHAR} AS content
FROM otlp_span_rows s ANTI JOIN otlp_problems p USING (file_id, record);

-- A span delivered again under the same traceId and spanId (in its record, another record or another
-- file) with other content conflicts: its record is rejected whole, and the first delivery stands.
CREATE OR REPLACE TEMP TABLE otlp_conflicts AS
SELECT file_id, record, arg_min(problem, pos) AS problem
FROM (
    SELECT s.file_id, s.record, s.pos,
           s.path || 'conflicting duplicate of event ' || s.span_id || ' of trace ' || s.trace_id || ' (first at '
               || first_value(d.file) OVER w
               || coalesce(' line ' || first_value(d.line) OVER w, ' record ' || first_value(d.record) OVER w)
               || ')' AS problem,
           s.content IS NOT DISTINCT FROM first_value(s.content) OVER w AS identical,
           row_number() OVER w AS nth
    FROM otlp_parsed s JOIN otlp_docs d USING (file_id, record)
    WINDOW w AS (PARTITION BY s.trace_id, s.span_id ORDER BY s.file_id, s.record, s.pos)
)
WHERE nth > 1 AND NOT identical
GROUP BY file_id, record;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem
FROM (SELECT * FROM otlp_problems UNION ALL SELECT * FROM otlp_conflicts) p JOIN otlp_docs d USING (file_id, record);

-- The spans that become events: the first delivery of each, from the records not rejected. The others
-- repeat it exactly.
CREATE OR REPLACE TEMP TABLE otlp_spans AS
SELECT * EXCLUDE (delivery, content) FROM (
    SELECT s.*, row_number() OVER (PARTITION BY trace_id, span_id ORDER BY file_id, record, pos) AS delivery
    FROM otlp_parsed s ANTI JOIN otlp_conflicts c USING (file_id, record)
) WHERE delivery = 1;

-- A record (or its part in a trace) made only of repeated spans is linked to the trace.
INSERT INTO record_links (file_id, record, trace_id)
SELECT file_id, record, trace_id FROM otlp_parsed ANTI JOIN otlp_conflicts USING (file_id, record)
EXCEPT
SELECT file_id, record, trace_id FROM otlp_spans;

CREATE OR REPLACE TEMP TABLE otlp_span_events AS
SELECT file_id, record, pos, generate_subscripts(items, 1) - 1 AS ev_index, unnest(items) AS ev
FROM (SELECT file_id, record, pos, json_extract(span, '$.events[*]') AS items
      FROM otlp_spans WHERE json_type(span, '$.events') = 'ARRAY');

-- Attribute lists of resources, spans and span events, one row per attribute. `owner` says whose:
-- 'r<rs_index>', 's<pos>' or 'e<pos>.<ev_index>'. A list of {key, value} is OTLP; a plain object is
-- accepted too, as some span-per-line exporters write.
CREATE OR REPLACE TEMP TABLE otlp_attr_rows AS
WITH owners AS (
    SELECT DISTINCT file_id, record, 'r' || rs_index AS owner, resource->'attributes' AS attributes
    FROM otlp_spans WHERE resource IS NOT NULL
    UNION ALL
    SELECT file_id, record, 's' || pos, span->'attributes' FROM otlp_spans
    UNION ALL
    SELECT file_id, record, 'e' || pos || '.' || ev_index, ev->'attributes' FROM otlp_span_events
)
SELECT file_id, record, owner, n, a->>'key' AS key, otlp_value(a->'value') AS value
FROM (SELECT file_id, record, owner, generate_subscripts(items, 1) AS n, unnest(items) AS a
      FROM (SELECT *, json_extract(attributes, '$[*]') AS items FROM owners WHERE json_type(attributes) = 'ARRAY'))
UNION ALL
SELECT file_id, record, owner, generate_subscripts(entries, 1), unnest(entries).key, unnest(entries).value
FROM (SELECT *, map_entries(try_cast(attributes AS MAP(VARCHAR, JSON))) AS entries
      FROM owners WHERE json_type(attributes) = 'OBJECT');

-- Per owner: the attributes as one JSON object (a stack trace is kept out of it: it stays in the event's
-- extra), and the values the mapping looks for under varying keys.
CREATE OR REPLACE TEMP TABLE otlp_attrs AS
SELECT file_id, record, owner,
       ('{' || string_agg(to_json(key)::VARCHAR || ':' || coalesce(value::VARCHAR, 'null'), ',' ORDER BY n)
                  FILTER (WHERE key <> 'exception.stacktrace') || '}')::JSON AS attrs,
       any_value(value) FILTER (WHERE key = 'exception.stacktrace') AS stacktrace,
       -- the text of a feedback or correction, by the last word of its key
       arg_min(value->>'$', CASE regexp_extract(lower(key), '(^|[._])(comment|correction|feedback|text|message|note)$', 2)
                              WHEN 'comment' THEN 1 WHEN 'correction' THEN 2 WHEN 'feedback' THEN 3
                              WHEN 'text' THEN 4 WHEN 'message' THEN 5 WHEN 'note' THEN 6 END)
           FILTER (WHERE json_type(value) = 'VARCHAR'
                     AND regexp_matches(lower(key), '(^|[._])(comment|correction|feedback|text|message|note)$')) AS feedback_text,
       -- evaluation results: GenAI gen_ai.evaluation.*, OpenInference evaluations.<i>.evaluation.*, eval.*
       bool_or(regexp_matches(lower(key), '(^|\.)(evaluations?|eval)\.(.*\.)?(score(\.value)?|label)$')) AS has_verdict,
       arg_min(value->>'$', n) FILTER (WHERE regexp_matches(lower(key), '(^|\.)label$')) AS eval_label,
       arg_min(try_cast(value->>'$' AS DOUBLE), n)
           FILTER (WHERE regexp_matches(lower(key), '(^|\.)score(\.value)?$')) AS eval_score,
       arg_min(value->>'$', n)
           FILTER (WHERE regexp_matches(lower(key), '(^|\.)(evaluation|evaluator|eval)[._]name$')) AS eval_name,
       arg_min(value->>'$', n) FILTER (WHERE regexp_matches(lower(key), '(^|[._])explanation$')) AS eval_explanation
FROM otlp_attr_rows
GROUP BY file_id, record, owner;

-- An evaluation's verdict: its label decides when it has one (score directions differ between
-- evaluators); otherwise a score below 0.5, on the common 0..1 scale where higher is better, fails.
CREATE OR REPLACE TEMP MACRO otlp_eval_failed(label, score) AS
    CASE
        WHEN label IS NOT NULL THEN replace(replace(lower(trim(label)), ' ', '_'), '-', '_') IN
            ('fail', 'failed', 'failure', 'failing', 'incorrect', 'wrong', 'false', 'no', 'bad', 'not_relevant',
             'irrelevant', 'hallucinated', 'unfaithful', 'unsafe', 'toxic', 'rejected', 'error')
        WHEN score IS NOT NULL THEN score < 0.5
    END;

CREATE OR REPLACE TEMP MACRO otlp_eval_text(name, label, score, explanation) AS
    concat_ws(': ', name, coalesce(label, 'score ' || score)) || coalesce(' - ' || explanation, '');

CREATE OR REPLACE TEMP TABLE otlp_typed_spans AS
SELECT s.*, a.attrs, a.has_verdict, a.eval_label, a.eval_score, a.eval_name, a.eval_explanation,
       coalesce(a.attrs->>'gen_ai.tool.name', a.attrs->>'tool.name') AS tool_attr,
       CASE
         WHEN upper(a.attrs->>'openinference.span.kind') = 'EVALUATOR' THEN 'evaluation_result'
         WHEN a.attrs->>'gen_ai.operation.name' = 'execute_tool'
              OR upper(a.attrs->>'openinference.span.kind') = 'TOOL' THEN 'tool_call'
         WHEN a.attrs->>'gen_ai.operation.name' IN ('chat', 'text_completion', 'generate_content', 'embeddings')
              OR upper(a.attrs->>'openinference.span.kind') IN ('LLM', 'EMBEDDING') THEN 'model_call'
         WHEN coalesce(a.attrs->>'gen_ai.tool.name', a.attrs->>'tool.name') IS NOT NULL THEN 'tool_call'
         WHEN a.has_verdict THEN 'evaluation_result'
         -- a model named with no operation or span kind: still a model call
         WHEN a.attrs->>'gen_ai.operation.name' IS NULL AND a.attrs->>'openinference.span.kind' IS NULL
              AND a.attrs->>'gen_ai.request.model' IS NOT NULL THEN 'model_call'
         ELSE 'workflow_step'
       END AS type
FROM otlp_spans s LEFT JOIN otlp_attrs a ON a.file_id = s.file_id AND a.record = s.record AND a.owner = 's' || s.pos;

CREATE OR REPLACE TEMP TABLE otlp_typed_span_events AS
SELECT e.file_id, e.record, e.pos, e.ev_index, e.ev, s.trace_id, s.span_id, s.type AS span_type,
       CASE WHEN s.type = 'tool_call' THEN coalesce(s.tool_attr, lw_tool_from_content(s.name)) END AS span_tool,
       s.start_ns AS span_start_ns,
       e.ev->>'name' AS name,
       try_cast(e.ev->>'timeUnixNano' AS BIGINT) AS time_ns,
       a.attrs, a.stacktrace, a.feedback_text, a.eval_label, a.eval_score, a.eval_name, a.eval_explanation,
       CASE
         WHEN lower(e.ev->>'name') = 'exception' THEN 'error'
         WHEN regexp_matches(lower(e.ev->>'name'), '(^|[._-])(feedback|correction)s?([._-]|$)') THEN 'human_correction'
         -- whole words only: 'retrieval' holds 'eval'
         WHEN regexp_matches(lower(e.ev->>'name'), '(^|[._-])(eval|evaluation)s?([._-]|$)') OR a.has_verdict
              THEN 'evaluation_result'
         -- GenAI message events of the older semantic conventions
         WHEN e.ev->>'name' IN ('gen_ai.user.message', 'gen_ai.content.prompt') THEN 'user_message'
         WHEN e.ev->>'name' IN ('gen_ai.assistant.message', 'gen_ai.choice', 'gen_ai.content.completion') THEN 'assistant_message'
         WHEN e.ev->>'name' = 'gen_ai.tool.message' THEN 'tool_result'
         ELSE lw_canonical_type(e.ev->>'name')
       END AS type
FROM otlp_span_events e
JOIN otlp_typed_spans s USING (file_id, record, pos)
LEFT JOIN otlp_attrs a ON a.file_id = e.file_id AND a.record = e.record AND a.owner = 'e' || e.pos || '.' || e.ev_index;

-- All events of all traces, with their sort key: time, then place in the file; within a span, the span
-- itself, its span events, then its status error.
CREATE OR REPLACE TEMP TABLE otlp_events AS
SELECT file_id, record, trace_id, start_ns AS sort_ns, pos, 0 AS part, 0 AS ev_index,
       span_id AS event_id, type,
       coalesce(attrs->>'openinference.span.kind', attrs->>'gen_ai.operation.name', 'span') AS raw_type,
       CASE type WHEN 'tool_call' THEN coalesce(tool_attr, name)
                 WHEN 'evaluation_result' THEN coalesce(otlp_eval_text(eval_name, eval_label, eval_score, eval_explanation), name)
                 ELSE name END AS content,
       -- an evaluator's status is its verdict; an evaluator that crashed gets its error event below
       CASE WHEN type = 'evaluation_result'
            THEN CASE otlp_eval_failed(eval_label, eval_score) WHEN true THEN 'failed' WHEN false THEN 'passed' END
            ELSE span_status END AS status,
       CASE WHEN type = 'evaluation_result' THEN NOT otlp_eval_failed(eval_label, eval_score)
            ELSE span_status <> 'error' END AS success,
       CASE WHEN type = 'tool_call' THEN coalesce(tool_attr, lw_tool_from_content(name)) END AS tool_name,
       start_ns AS ts_ns, parent_span_id AS parent_id, attrs AS metadata,
       nullif(json_merge_patch(
           json_merge_patch(span, '{"traceId":null,"spanId":null,"parentSpanId":null,"attributes":null,"events":null,"resource":null}'),
           json_object('scope', scope))::VARCHAR, '{}')::JSON AS extra
FROM otlp_typed_spans
UNION ALL
SELECT file_id, record, trace_id, coalesce(time_ns, span_start_ns), pos, 1, ev_index,
       span_id || '/events/' || ev_index, type, name,
       CASE type
         WHEN 'error' THEN concat_ws(': ', attrs->>'exception.type', attrs->>'exception.message')
         WHEN 'human_correction' THEN feedback_text
         WHEN 'evaluation_result' THEN otlp_eval_text(eval_name, eval_label, eval_score, eval_explanation)
         ELSE coalesce(attrs->>'content', attrs->>'gen_ai.prompt', attrs->>'gen_ai.completion', attrs->>'message')
       END,
       CASE type WHEN 'error' THEN 'error'
                 WHEN 'evaluation_result' THEN CASE otlp_eval_failed(eval_label, eval_score) WHEN true THEN 'failed'
                                                                                             WHEN false THEN 'passed' END
       END,
       CASE type WHEN 'error' THEN false WHEN 'evaluation_result' THEN NOT otlp_eval_failed(eval_label, eval_score) END,
       CASE WHEN type = 'error' OR span_type = 'tool_call' THEN span_tool END,
       time_ns, span_id, attrs,
       nullif(json_merge_patch(json_merge_patch(ev, '{"name":null,"attributes":null}'),
                               json_object('exception.stacktrace', stacktrace))::VARCHAR, '{}')::JSON
FROM otlp_typed_span_events
UNION ALL
-- A span that ended in ERROR is an error at its end, unless an exception event already says so.
SELECT s.file_id, s.record, s.trace_id, coalesce(s.end_ns, s.start_ns), s.pos, 2, 0,
       s.span_id || '/status', 'error', 'status:' || s.status_code,
       coalesce(s.status_message, s.attrs->>'error.type', coalesce(s.name, 'span') || ' ended with status ERROR'),
       'error', false,
       CASE WHEN s.type = 'tool_call' THEN coalesce(s.tool_attr, lw_tool_from_content(s.name)) END,
       coalesce(s.end_ns, s.start_ns), s.span_id, NULL,
       json_object('status', s.span->'status')
FROM otlp_typed_spans s
WHERE s.span_status = 'error'
  AND NOT EXISTS (SELECT 1 FROM otlp_typed_span_events e
                  WHERE e.file_id = s.file_id AND e.record = s.record AND e.pos = s.pos AND e.type = 'error');

-- One trace per traceId, over its spans in all the files of the batch, starting at its first record (by
-- file, then position). Top spans have no parent in the trace; the earliest is the root.
CREATE OR REPLACE TEMP TABLE otlp_traces AS
WITH tops AS (
    SELECT s.* FROM otlp_typed_spans s
    WHERE s.parent_span_id IS NULL
       OR NOT EXISTS (SELECT 1 FROM otlp_spans p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)
),
roots AS (
    SELECT trace_id, failed, unnest(root)
    FROM (SELECT trace_id, bool_or(span_status = 'error') AS failed,
                 arg_min(struct_pack(root_file_id := file_id, root_record := record, rs_index, name, attrs,
                                     resource, schema_url),
                         (start_ns IS NULL, start_ns, file_id, record, pos)) AS root
          FROM tops GROUP BY trace_id)
),
spans AS (
    SELECT trace_id, min(file_id) AS file_id, arg_min(record, (file_id, record)) AS first_record,
           min(start_ns) AS start_ns, max(coalesce(end_ns, start_ns)) AS end_ns
    FROM otlp_spans GROUP BY trace_id
)
SELECT s.file_id, s.trace_id, s.first_record, s.start_ns, s.end_ns, r.failed, r.name AS root_name,
       r.attrs AS root_attrs, ra.attrs AS resource_attrs,
       nullif(json_merge_patch(json_merge_patch(coalesce(r.resource, '{}'), '{"attributes":null}'),
                               json_object('schemaUrl', r.schema_url))::VARCHAR, '{}')::JSON AS extra
FROM spans s JOIN roots r USING (trace_id)
LEFT JOIN otlp_attrs ra ON ra.file_id = r.root_file_id AND ra.record = r.root_record AND ra.owner = 'r' || r.rs_index;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT t.trace_id, 'otlp',
       coalesce(t.resource_attrs->>'agent.name', t.resource_attrs->>'gen_ai.agent.name',
                t.root_attrs->>'gen_ai.agent.name', t.resource_attrs->>'service.name', 'unknown_service'),
       coalesce(t.root_attrs->>'task', t.root_attrs->>'agent.task', t.resource_attrs->>'agent.task',
                t.root_attrs->>'gen_ai.agent.description', t.resource_attrs->>'gen_ai.agent.description', t.root_name),
       CASE WHEN t.failed THEN 'failed' ELSE 'success' END,
       -- only the keys the privacy screen hashes in metadata, so the raw id does not stay behind
       coalesce(t.resource_attrs->>'tenant_id', t.resource_attrs->>'tenant',
                t.root_attrs->>'tenant_id', t.root_attrs->>'tenant'),
       d.file, d.line, otlp_ts(t.start_ns), otlp_ts(t.end_ns),
       t.resource_attrs, t.extra, t.file_id, t.first_record
FROM otlp_traces t JOIN otlp_docs d ON d.file_id = t.file_id AND d.record = t.first_record;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT trace_id,
       row_number() OVER (PARTITION BY trace_id
                          ORDER BY sort_ns NULLS LAST, file_id, record, pos, part, ev_index),
       event_id, type, raw_type, content, status, success, tool_name, otlp_ts(ts_ns), parent_id, metadata,
       extra, file_id, record
FROM otlp_events;

DROP TABLE otlp_docs;
DROP TABLE otlp_span_rows;
DROP TABLE otlp_problems;
DROP TABLE otlp_parsed;
DROP TABLE otlp_conflicts;
DROP TABLE otlp_spans;
DROP TABLE otlp_span_events;
DROP TABLE otlp_attr_rows;
DROP TABLE otlp_attrs;
DROP TABLE otlp_typed_spans;
DROP TABLE otlp_typed_span_events;
DROP TABLE otlp_events;
DROP TABLE otlp_traces;
DROP MACRO otlp_value;
DROP MACRO otlp_scalar;
DROP MACRO otlp_ts;
DROP MACRO otlp_eval_failed;
DROP MACRO otlp_eval_text;
