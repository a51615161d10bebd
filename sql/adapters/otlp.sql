-- format: otlp
-- title: OpenTelemetry traces as OTLP JSON: resourceSpans exports (one per record), or one span per line
-- match: json_exists(doc, '$.resourceSpans')
--   OR (json_exists(doc, '$.traceId') AND json_exists(doc, '$.spanId'))
-- priority: 303
-- gathers: yes
-- roles: gen_ai.user.message / gen_ai.content.prompt = human (the application's user, as the OpenTelemetry
--   GenAI semantic conventions name it; the producers read, Vercel AI SDK, OpenLLMetry, pydantic-ai/logfire,
--   Braintrust, the OpenAI Agents SDK, say no more of who it is); feedback and correction span events = human
--   (a reviewer's); assistant messages, LLM and agent spans = agent; tool spans' results = tool; evaluation
--   spans = harness. Read in open-telemetry/semantic-conventions (docs/gen-ai) and the producers' attributes
--   listed in docs/formats.md.
--
-- A trace is a traceId, gathered across the files of the batch; its spans become events in start-time order
-- (then file and position), followed in time by their span events (exceptions, feedback, evaluations), the
-- results a span records at its end (a tool's result, an evaluation's verdicts, the agent's final answer)
-- and, for a span whose status is ERROR without an exception event, an error event at the span's end. Span
-- types follow the OpenTelemetry GenAI semantic conventions and OpenInference span kinds, and the attributes
-- of the producers that differ from them: Vercel AI SDK `ai.*`, OpenLLMetry/Traceloop `traceloop.*`,
-- pydantic-ai and logfire, Braintrust `braintrust.*` and the OpenAI Agents SDK (see docs/formats.md).
-- Trace and span ids written in proto3-JSON base64 are read as the lowercase hex the OTLP spec asks for, so
-- one trace exported both ways is one trace. A record with one unusable span is rejected whole, naming the
-- span's position, as the lessonweaver adapter does for a bad event; a span delivered again with the same
-- content is kept once and its record linked to the trace (record_links), one delivered again with other
-- content is unusable.

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

-- A trace id (16 bytes) or span id (8 bytes) as lowercase hex. The OTLP spec writes them as hex (any
-- case); generic protobuf-to-JSON converters write proto3's base64 instead: 24 characters ending '=='
-- for a trace id, 12 ending '=' for a span id. Anything else (`span-1` in hand-written spans) stays.
CREATE OR REPLACE TEMP MACRO otlp_id(s, nbytes) AS
    CASE
        WHEN length(trim(s)) = 2 * nbytes AND regexp_full_match(trim(s), '[0-9A-Fa-f]+') THEN lower(trim(s))
        WHEN (nbytes = 16 AND regexp_full_match(trim(s), '[A-Za-z0-9+/]{22}=='))
          OR (nbytes = 8 AND regexp_full_match(trim(s), '[A-Za-z0-9+/]{11}='))
             THEN coalesce(try(lower(hex(from_base64(trim(s))))), s)
        ELSE s
    END;

-- An enum written as its number or its name (`SPAN_KIND_CLIENT`, `STATUS_CODE_ERROR`, `ERROR`), as the
-- number. `names` lists the names in number order, from 0.
CREATE OR REPLACE TEMP MACRO otlp_enum(v, prefix, names) AS
    CASE WHEN list_position(names, replace(upper(trim(v->>'$')), prefix, '')) IS NOT NULL
         THEN to_json(list_position(names, replace(upper(trim(v->>'$')), prefix, '')) - 1)
         ELSE v END;

-- One attribute of a span as written, before the attributes are parsed.
CREATE OR REPLACE TEMP MACRO otlp_raw_attr(span, k) AS
    CASE json_type(span, '$.attributes')
        WHEN 'ARRAY' THEN otlp_value(json_extract(list_filter(json_extract(span, '$.attributes[*]'),
                                                              lambda a: (a->>'key') = k)[1], '$.value'))->>'$'
        WHEN 'OBJECT' THEN span->'attributes'->>k
    END;

-- Producers write structured values as JSON inside a string attribute. otlp_json parses one (NULL when it
-- is plain text, which includes JSON cut short by an attribute length limit); otlp_text is a value as
-- text, a JSON-quoted string unquoted (Traceloop and Braintrust quote a str result: "\"sunny\"").
CREATE OR REPLACE TEMP MACRO otlp_json(v) AS
    CASE WHEN json_type(v) IN ('OBJECT', 'ARRAY') THEN v
         WHEN json_type(v) = 'VARCHAR' THEN try_cast(v->>'$' AS JSON) END;

CREATE OR REPLACE TEMP MACRO otlp_text(v) AS
    CASE WHEN json_type(v) = 'VARCHAR'
              THEN coalesce(CASE WHEN json_type(try_cast(v->>'$' AS JSON)) = 'VARCHAR' THEN try_cast(v->>'$' AS JSON)->>'$' END,
                            v->>'$')
         WHEN json_type(v) <> 'NULL' THEN v::VARCHAR END;

-- The text of a chat message, in the shapes the producers write: content as a string (OpenAI, Vercel),
-- content as parts `{type: text, text}` (Vercel), or GenAI `parts` `{type: text, content}` (GenAI
-- semconv, pydantic-ai). Tool calls and tool results have no text. (These macros use lambdas, and in an
-- argument that reaches a lambda function DuckDB reads `x->'k'` as a lambda: callers pass json_extract.)
CREATE OR REPLACE TEMP MACRO otlp_parts_text(parts) AS
    nullif(trim(array_to_string(list_transform(parts, lambda p:
        CASE WHEN json_type(p) = 'VARCHAR' THEN p->>'$'
             WHEN (p->>'type') IN ('text', 'input_text', 'output_text') THEN coalesce(p->>'text', p->>'content') END), ' ')), '');

CREATE OR REPLACE TEMP MACRO otlp_msg_text(msg) AS
    CASE json_type(msg, '$.content')
        WHEN 'VARCHAR' THEN nullif(trim(msg->>'content'), '')
        WHEN 'ARRAY' THEN otlp_parts_text(json_extract(msg, '$.content[*]'))
        ELSE otlp_parts_text(json_extract(msg, '$.parts[*]'))
    END;

-- The first user message with text in a list of messages (a later "user" message may only carry tool
-- results), and the last assistant message with text.
CREATE OR REPLACE TEMP MACRO otlp_user_text(msgs) AS
    list_filter(list_transform(json_extract(msgs, '$[*]'),
                               lambda m: CASE WHEN (m->>'role') = 'user' THEN otlp_msg_text(m) END),
                lambda t: t IS NOT NULL)[1];

CREATE OR REPLACE TEMP MACRO otlp_assistant_text(msgs) AS
    list_filter(list_transform(json_extract(msgs, '$[*]'),
                               lambda m: CASE WHEN (m->>'role') = 'assistant' THEN otlp_msg_text(m) END),
                lambda t: t IS NOT NULL)[-1];

-- A user input written as plain text, a JSON string, a list of messages, or an object with `messages` or
-- `input`; never a whole JSON object.
CREATE OR REPLACE TEMP MACRO otlp_input_text(v) AS
    CASE
        WHEN otlp_json(v) IS NULL THEN otlp_text(v)
        WHEN json_type(otlp_json(v)) = 'ARRAY' THEN otlp_user_text(otlp_json(v))
        WHEN json_type(otlp_json(v)) = 'OBJECT' THEN
            coalesce(otlp_user_text(json_extract(otlp_json(v), '$.messages')),
                     CASE WHEN json_type(otlp_json(v), '$.input') = 'VARCHAR' THEN otlp_json(v)->>'input' END)
        ELSE otlp_json(v)->>'$'
    END;

-- An answer: text as it is; from a list of messages (or an object holding them), the last assistant
-- text; any other structured output as its JSON.
CREATE OR REPLACE TEMP MACRO otlp_answer_text(v) AS
    CASE
        WHEN otlp_json(v) IS NULL THEN otlp_text(v)
        WHEN json_type(otlp_json(v)) = 'ARRAY' THEN coalesce(otlp_assistant_text(otlp_json(v)), otlp_json(v)::VARCHAR)
        WHEN json_type(otlp_json(v)) = 'OBJECT' THEN
            coalesce(otlp_assistant_text(json_extract(otlp_json(v), '$.messages')),
                     CASE WHEN json_type(otlp_json(v), '$.output') = 'VARCHAR' THEN otlp_json(v)->>'output' END,
                     otlp_json(v)::VARCHAR)
        ELSE otlp_json(v)->>'$'
    END;

-- Vercel's ai.prompt: `{"prompt": "..."}` (a string or messages) or `{"messages": [...]}`.
CREATE OR REPLACE TEMP MACRO otlp_prompt_text(prompt) AS
    CASE json_type(prompt, '$.prompt')
        WHEN 'VARCHAR' THEN prompt->>'prompt'
        WHEN 'ARRAY' THEN otlp_user_text(json_extract(prompt, '$.prompt'))
        ELSE otlp_user_text(json_extract(prompt, '$.messages'))
    END;

-- Traceloop's entity input `{"args": [...], "kwargs": {...}}`: the first string argument.
CREATE OR REPLACE TEMP MACRO otlp_args_text(v) AS
    list_filter(list_concat(json_extract(otlp_json(v), '$.args[*]'), json_extract(otlp_json(v), '$.kwargs.*')),
                lambda a: json_type(a) = 'VARCHAR' AND trim(a->>'$') <> '')[1]->>'$';

CREATE OR REPLACE TEMP TABLE otlp_docs AS
SELECT file_id, file, line, record, doc,
       json_exists(doc, '$.resourceSpans') AS is_export,
       json_type(doc, '$.resourceSpans') AS t_resource_spans
FROM records_in;

-- Every span with its resource and scope, numbered in file order within its record (pos). `path` names
-- the span's place in an export document for reject reasons; a span line has no path. `f` is the span's
-- one typed parse: its top-level fields as their JSON text (NULL when missing or null, all NULL when the
-- span is no object), so what follows reads small fragments, never the whole span again.
CREATE OR REPLACE TEMP TABLE otlp_span_rows AS
SELECT *, from_json(span, '{"traceId": "JSON", "spanId": "JSON", "parentSpanId": "JSON", "name": "JSON",
                            "kind": "JSON", "startTimeUnixNano": "JSON", "endTimeUnixNano": "JSON",
                            "attributes": "JSON", "events": "JSON", "status": "JSON", "links": "JSON"}') AS f
FROM (
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
FROM otlp_docs WHERE NOT is_export
);

-- The first thing wrong with each record, in span order.
CREATE OR REPLACE TEMP TABLE otlp_problems AS
WITH span_problems AS (
    SELECT file_id, record, pos,
           CASE
             WHEN NOT regexp_matches(span, '^[ \t\r\n]*\{') THEN path || 'span is not an object'
             WHEN f.traceId IS NULL THEN path || 'missing required field ''traceId'''
             WHEN lw_json_kind(f.traceId) IN ('OBJECT', 'ARRAY') THEN path || 'field ''traceId'' must be a string'
             WHEN trim(f.traceId->>'$') = '' THEN path || 'field ''traceId'' is empty'
             WHEN f.spanId IS NULL THEN path || 'missing required field ''spanId'''
             WHEN lw_json_kind(f.spanId) IN ('OBJECT', 'ARRAY') THEN path || 'field ''spanId'' must be a string'
             WHEN trim(f.spanId->>'$') = '' THEN path || 'field ''spanId'' is empty'
             WHEN lw_json_kind(f.attributes) NOT IN ('ARRAY', 'OBJECT') THEN path || 'field ''attributes'' must be a list'
             WHEN lw_json_kind(f.events) <> 'ARRAY' THEN path || 'field ''events'' must be a list'
             WHEN first_bad_event IS NOT NULL THEN path || 'events[' || (first_bad_event - 1) || '] is not an object'
           END AS problem
    -- an event that is JSON null parses to NULL here: no object either
    FROM (SELECT *, nullif(list_position(list_transform(from_json(f.events, '["JSON"]'),
                                                        lambda e: coalesce(lw_json_kind(e) = 'OBJECT', false)), false), 0)
                        AS first_bad_event
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

-- The spans of records with no format problem, parsed once, their ids in hex. `norm` is the span as
-- written with its ids in hex and its kind and status code as numbers: the same span exported as spec
-- JSON and as protobuf JSON (base64 ids, `SPAN_KIND_CLIENT`, `STATUS_CODE_ERROR`) is then the same span.
-- `content`, what a second delivery of the span must repeat, is `norm` with its resource and scope.
CREATE OR REPLACE TEMP TABLE otlp_parsed AS
WITH ids AS (
    SELECT s.*,
           s.f.traceId->>'$' AS written_trace_id, s.f.spanId->>'$' AS written_span_id,
           trim(s.f.parentSpanId->>'$') AS written_parent_id,
           otlp_id(s.f.traceId->>'$', 16) AS trace_id,
           otlp_id(s.f.spanId->>'$', 8) AS span_id,
           otlp_id(nullif(trim(s.f.parentSpanId->>'$'), ''), 8) AS parent_span_id
    FROM otlp_span_rows s ANTI JOIN otlp_problems p USING (file_id, record)
),
rewrites AS (
    -- rewriting a span is slow, and most are written as the spec says: only the others are rewritten
    SELECT *,
           coalesce(trace_id IS DISTINCT FROM written_trace_id OR span_id IS DISTINCT FROM written_span_id
                    OR coalesce(parent_span_id, '') <> coalesce(written_parent_id, '')
                    OR lw_json_kind(f.kind) = 'VARCHAR' OR json_type(f.status, '$.code') = 'VARCHAR'
                    OR coalesce(json_array_length(f.links), 0) > 0, false) AS rewritten
    FROM ids
),
normalised AS (
    SELECT *,
           CASE WHEN rewritten THEN
               json_merge_patch(span, json_object(
                   'traceId', trace_id, 'spanId', span_id, 'parentSpanId', parent_span_id,
                   'kind', otlp_enum(f.kind, 'SPAN_KIND_',
                                     ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER']),
                   'status', CASE WHEN lw_json_kind(f.status) = 'OBJECT'
                                  THEN json_merge_patch(f.status, json_object('code',
                                           otlp_enum(f.status->'code', 'STATUS_CODE_', ['UNSET', 'OK', 'ERROR'])))
                                  ELSE f.status END,
                   'links', CASE WHEN lw_json_kind(f.links) = 'ARRAY'
                                 THEN to_json(list_transform(json_extract(f.links, '$[*]'), lambda l:
                                          CASE WHEN json_type(l) = 'OBJECT'
                                               THEN json_merge_patch(l, json_object('traceId', otlp_id(l->>'traceId', 16),
                                                                                    'spanId', otlp_id(l->>'spanId', 8)))
                                               ELSE l END))
                                 ELSE f.links END,
                   'resource', NULL, 'scope', NULL))
           ELSE json_merge_patch(span, '{"resource":null,"scope":null}') END AS norm
    FROM rewrites
)
SELECT file_id, record, pos, path, rs_index, resource, schema_url, scope, norm,
       f.attributes AS attributes, f.events AS events,
       trace_id, span_id, parent_span_id,
       f.name->>'$' AS name,
       try_cast(f.startTimeUnixNano->>'$' AS BIGINT) AS start_ns,
       try_cast(f.endTimeUnixNano->>'$' AS BIGINT) AS end_ns,
       status_code,
       nullif(trim(f.status->>'message'), '') AS status_message,
       CASE status_code WHEN '2' THEN 'error' WHEN '1' THEN 'ok' ELSE 'unset' END AS span_status,
       -- logfire's placeholder for a span that has started, and the real span's parent
       pending,
       CASE WHEN pending THEN otlp_id(otlp_raw_attr(span, 'logfire.pending_parent_id'), 8) END AS pending_parent_id,
       {'span': norm::VARCHAR, 'resource': json(resource)::VARCHAR, 'scope': json(scope)::VARCHAR} AS content
FROM (SELECT *,
             -- the status code as written, or as the rewrite made it a number
             CASE WHEN rewritten THEN norm->'status'->>'code' ELSE f.status->>'code' END AS status_code,
             -- a quick look at the text first: reading the attribute list of every span is slow
             CASE WHEN contains(span::VARCHAR, '"pending_span"')
                  THEN coalesce(otlp_raw_attr(span, 'logfire.span_type') = 'pending_span', false)
                  ELSE false END AS pending
      FROM normalised);

-- A span delivered again under the same traceId and spanId (in its record, another record or another
-- file) with other content conflicts: its record is rejected whole, and the first delivery stands.
CREATE OR REPLACE TEMP TABLE otlp_conflicts AS
WITH deliveries AS (
    SELECT s.file_id, s.record, s.pos, s.path, s.trace_id, s.span_id, s.content,
           first_value(s.content) OVER w AS first_content,
           first_value(d.file) OVER w
               || coalesce(' line ' || first_value(d.line) OVER w, ' record ' || first_value(d.record) OVER w) AS first_at,
           row_number() OVER w AS nth
    FROM otlp_parsed s JOIN otlp_docs d USING (file_id, record)
    WINDOW w AS (PARTITION BY s.trace_id, s.span_id ORDER BY s.file_id, s.record, s.pos)
),
-- A copy whose text differs from the first may still be the same span: exporters order an object's keys
-- differently (the OpenTelemetry Python JSON exporter writes `flags` before `name`, protobuf after
-- `status`). These few copies are compared as their sets of (path, value), whatever the key order.
unsure AS (
    SELECT *, row_number() OVER () AS k FROM deliveries WHERE nth > 1 AND content IS DISTINCT FROM first_content
),
trees AS (
    SELECT u.k, u.side,
           string_agg(t.fullkey || '=' || t.type || ':' || coalesce(t.atom::VARCHAR, ''), ',' ORDER BY t.fullkey) AS tree
    FROM (SELECT k, 'copy' AS side,
                 json_object('span', content.span::JSON, 'resource', content.resource::JSON,
                             'scope', content.scope::JSON) AS doc
          FROM unsure
          UNION ALL
          SELECT k, 'first', json_object('span', first_content.span::JSON, 'resource', first_content.resource::JSON,
                                         'scope', first_content.scope::JSON)
          FROM unsure) u,
         json_tree(u.doc) t
    GROUP BY u.k, u.side
)
SELECT file_id, record,
       arg_min(path || 'conflicting duplicate of event ' || span_id || ' of trace ' || trace_id
               || ' (first at ' || first_at || ')', pos) AS problem
FROM unsure u
WHERE (SELECT tree FROM trees c WHERE c.k = u.k AND c.side = 'copy')
      IS DISTINCT FROM (SELECT tree FROM trees f WHERE f.k = u.k AND f.side = 'first')
GROUP BY file_id, record;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem
FROM (SELECT * FROM otlp_problems UNION ALL SELECT * FROM otlp_conflicts) p JOIN otlp_docs d USING (file_id, record);

-- The spans that become events: the first delivery of each, from the records not rejected (the others
-- repeat it exactly). A logfire pending span (a zero-length copy sent when a span starts, with a new
-- spanId and the real span as parent) is dropped when the real span arrived; otherwise it stands in for
-- the real span, under the real span's id and parent, as logfire's own exporter does.
CREATE OR REPLACE TEMP TABLE otlp_spans AS
SELECT * EXCLUDE (span_id, parent_span_id, pending_parent_id, real_id),
       real_id AS span_id,
       CASE WHEN pending AND parent_span_id IS NOT NULL THEN nullif(pending_parent_id, '0000000000000000')
            ELSE parent_span_id END AS parent_span_id
FROM (SELECT s.* EXCLUDE (content),
             CASE WHEN s.pending AND s.parent_span_id IS NOT NULL THEN s.parent_span_id ELSE s.span_id END AS real_id
      FROM otlp_parsed s
      -- per span: its first delivery, the span itself before any pending copy of it (chosen on narrow rows)
      SEMI JOIN (SELECT file_id, record, pos
                 FROM (SELECT file_id, record, pos, trace_id, pending,
                              CASE WHEN pending AND parent_span_id IS NOT NULL THEN parent_span_id ELSE span_id END
                                  AS real_id
                       FROM otlp_parsed ANTI JOIN otlp_conflicts c USING (file_id, record))
                 QUALIFY row_number() OVER (PARTITION BY trace_id, real_id ORDER BY pending, file_id, record, pos) = 1)
          k USING (file_id, record, pos));

-- A record (or its part in a trace) made only of repeated spans or pending placeholders is linked to the
-- trace.
INSERT INTO record_links (file_id, record, trace_id)
SELECT file_id, record, trace_id FROM otlp_parsed ANTI JOIN otlp_conflicts USING (file_id, record)
EXCEPT
SELECT file_id, record, trace_id FROM otlp_spans;

CREATE OR REPLACE TEMP TABLE otlp_span_events AS
SELECT file_id, record, pos, generate_subscripts(items, 1) - 1 AS ev_index, unnest(items) AS ev
FROM (SELECT file_id, record, pos, json_extract(events, '$[*]') AS items
      FROM otlp_spans WHERE lw_json_kind(events) = 'ARRAY');

-- Attribute lists of resources, spans and span events, one row per attribute. `owner` says whose:
-- 'r<rs_index>', 's<pos>' or 'e<pos>.<ev_index>'. A list of {key, value} is OTLP; a plain object is
-- accepted too, as some span-per-line exporters write.
CREATE OR REPLACE TEMP TABLE otlp_attr_rows AS
WITH owners AS (
    SELECT DISTINCT file_id, record, 'r' || rs_index AS owner, resource->'attributes' AS attributes
    FROM otlp_spans WHERE resource IS NOT NULL
    UNION ALL
    SELECT file_id, record, 's' || pos, attributes FROM otlp_spans
    UNION ALL
    SELECT file_id, record, 'e' || pos || '.' || ev_index, ev->'attributes' FROM otlp_span_events
)
-- a list is parsed once into its items' keys and values (each value's own text, read by otlp_value)
SELECT file_id, record, owner, n, a.key->>'$' AS key, otlp_value(a.value) AS value
FROM (SELECT file_id, record, owner, generate_subscripts(items, 1) AS n, unnest(items) AS a
      FROM (SELECT *, from_json(attributes, '[{"key": "JSON", "value": "JSON"}]') AS items
            FROM owners WHERE lw_json_kind(attributes) = 'ARRAY'))
UNION ALL
SELECT file_id, record, owner, generate_subscripts(entries, 1), unnest(entries).key, unnest(entries).value
FROM (SELECT *, map_entries(try_cast(attributes AS MAP(VARCHAR, JSON))) AS entries
      FROM owners WHERE json_type(attributes) = 'OBJECT');

-- Per owner: the attributes as one JSON object (a stack trace is kept out of it: it stays in the event's
-- extra), and the values the mapping looks for under varying keys.
CREATE OR REPLACE TEMP TABLE otlp_attrs AS
WITH key_roles AS (
    -- what each key is for, worked out once per distinct key (keys repeat on every span), not per attribute
    SELECT key,
           key = 'exception.stacktrace' AS is_stacktrace,
           -- the text of a feedback or correction, by the last word of its key
           CASE regexp_extract(lower(key), '(^|[._])(comment|correction|feedback|text|message|note)$', 2)
                WHEN 'comment' THEN 1 WHEN 'correction' THEN 2 WHEN 'feedback' THEN 3
                WHEN 'text' THEN 4 WHEN 'message' THEN 5 WHEN 'note' THEN 6 END AS feedback_rank,
           -- evaluation results: GenAI gen_ai.evaluation.*, OpenInference evaluations.<i>.evaluation.*, eval.*
           regexp_matches(lower(key), '(^|\.)(evaluations?|eval)\.(.*\.)?(score(\.value)?|label)$') AS is_verdict,
           regexp_matches(lower(key), '(^|\.)label$') AS is_label,
           regexp_matches(lower(key), '(^|\.)score(\.value)?$') AS is_score,
           regexp_matches(lower(key), '(^|\.)(evaluation|evaluator|eval)[._]name$') AS is_eval_name,
           regexp_matches(lower(key), '(^|[._])explanation$') AS is_explanation
    FROM (SELECT DISTINCT key FROM otlp_attr_rows WHERE key IS NOT NULL)
)
SELECT file_id, record, owner,
       ('{' || string_agg(to_json(key)::VARCHAR || ':' || coalesce(value::VARCHAR, 'null'), ',' ORDER BY n)
                  FILTER (WHERE NOT k.is_stacktrace) || '}')::JSON AS attrs,
       any_value(value) FILTER (WHERE k.is_stacktrace) AS stacktrace,
       arg_min(value->>'$', k.feedback_rank) FILTER (WHERE k.feedback_rank IS NOT NULL AND json_type(value) = 'VARCHAR')
           AS feedback_text,
       bool_or(k.is_verdict) AS has_verdict,
       arg_min(value->>'$', n) FILTER (WHERE k.is_label) AS eval_label,
       arg_min(try_cast(value->>'$' AS DOUBLE), n) FILTER (WHERE k.is_score) AS eval_score,
       arg_min(value->>'$', n) FILTER (WHERE k.is_eval_name) AS eval_name,
       arg_min(value->>'$', n) FILTER (WHERE k.is_explanation) AS eval_explanation
FROM otlp_attr_rows LEFT JOIN key_roles k USING (key)
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

-- Each span's type. The GenAI conventions and OpenInference say it with one attribute; the producers that
-- differ say it their own way: Vercel's `ai.operationId`, Traceloop's `traceloop.span.kind`, Braintrust's
-- `braintrust.span_attributes` type, logfire's message template (the span name). The order matters: a
-- handoff is an OpenInference TOOL span, and Vercel's agent roots and Traceloop's agent spans carry the
-- model or agent attributes of what they contain.
CREATE OR REPLACE TEMP TABLE otlp_typed_spans AS
WITH keyed AS (
    SELECT s.*, a.attrs, a.has_verdict, a.eval_label, a.eval_score, a.eval_name, a.eval_explanation,
           a.attrs->>'gen_ai.operation.name' AS op,
           upper(a.attrs->>'openinference.span.kind') AS oi_kind,
           a.attrs->>'ai.operationId' AS ai_op,
           lower(a.attrs->>'traceloop.span.kind') AS tl_kind,
           -- a JSON string `{"type": "llm"}`, or the flattened key hand-written code uses
           lower(coalesce(otlp_json(a.attrs->'braintrust.span_attributes')->>'type',
                          a.attrs->>'braintrust.span_attributes.type')) AS bt_type,
           a.attrs->>'logfire.msg_template' AS lf_template,
           -- a top span has no parent in the trace
           s.parent_span_id IS NULL
               OR NOT EXISTS (SELECT 1 FROM otlp_spans p WHERE p.trace_id = s.trace_id AND p.span_id = s.parent_span_id)
               AS is_top
    FROM otlp_spans s
    LEFT JOIN otlp_attrs a ON a.file_id = s.file_id AND a.record = s.record AND a.owner = 's' || s.pos
),
roles AS (
    SELECT *,
           CASE WHEN op = 'handoff' OR tl_kind = 'handoff' OR (oi_kind = 'TOOL' AND name LIKE 'handoff to %')
                     OR lf_template LIKE 'Handoff:%' THEN 'handoff'
                WHEN oi_kind = 'GUARDRAIL' OR lf_template LIKE 'Guardrail %' THEN 'guardrail'
           END AS role,
           -- Vercel's operation spans: they hold the steps (`.doGenerate`, `.doStream`) and tool calls
           coalesce(ai_op IN ('ai.generateText', 'ai.streamText', 'ai.generateObject', 'ai.streamObject',
                              'ai.embed', 'ai.embedMany', 'ai.rerank'), false) AS ai_root,
           -- logfire names a span by its message template (`Agent run: {name!r}`); the rendered message reads better
           CASE WHEN lf_template IS NOT NULL AND contains(name, '{') THEN coalesce(attrs->>'logfire.msg', name)
                ELSE name END AS label
    FROM keyed
),
typed AS (
    SELECT *,
           CASE
             WHEN oi_kind = 'EVALUATOR' THEN 'evaluation_result'
             -- a Braintrust score span with `braintrust.scores` gets one evaluation per score (otlp_verdicts)
             WHEN bt_type = 'score' AND (attrs->'braintrust.scores') IS NULL THEN 'evaluation_result'
             WHEN role IS NOT NULL THEN 'workflow_step'
             WHEN op = 'execute_tool' OR oi_kind = 'TOOL' OR ai_op = 'ai.toolCall' OR tl_kind = 'tool'
                  OR bt_type IN ('tool', 'function') OR lf_template = 'Function: {name}' THEN 'tool_call'
             WHEN ai_root OR tl_kind IN ('workflow', 'task', 'agent') OR bt_type IN ('eval', 'task', 'score')
                  THEN 'workflow_step'
             WHEN op IN ('chat', 'text_completion', 'generate_content', 'embeddings')
                  OR oi_kind IN ('LLM', 'EMBEDDING')
                  OR regexp_matches(ai_op, '\.do(Generate|Stream|Embed|Rerank)$')
                  OR lower(attrs->>'llm.request.type') IN ('chat', 'completion', 'embedding', 'rerank')
                  OR bt_type = 'llm'
                  OR (json_type(attrs->'logfire.tags') = 'ARRAY'
                      AND list_contains(json_extract_string(attrs->'logfire.tags', '$[*]'), 'LLM'))
                  THEN 'model_call'
             WHEN coalesce(attrs->>'gen_ai.tool.name', attrs->>'tool.name') IS NOT NULL THEN 'tool_call'
             WHEN has_verdict THEN 'evaluation_result'
             -- a model named with no operation or span kind: still a model call
             WHEN op IS NULL AND oi_kind IS NULL AND attrs->>'gen_ai.request.model' IS NOT NULL THEN 'model_call'
             ELSE 'workflow_step'
           END AS type
    FROM roles
)
SELECT *,
       CASE WHEN type = 'tool_call' THEN
           coalesce(attrs->>'gen_ai.tool.name', attrs->>'tool.name', attrs->>'ai.toolCall.name',
                    CASE WHEN tl_kind = 'tool' THEN attrs->>'traceloop.entity.name' END,
                    CASE WHEN bt_type IN ('tool', 'function') THEN otlp_json(attrs->'braintrust.span_attributes')->>'name' END,
                    CASE WHEN lf_template = 'Function: {name}' THEN attrs->>'name' END,
                    lw_tool_from_content(name))
       END AS tool_name,
       -- a tool's result, read only when the call did not fail: a failed call's "result" is the error
       -- text the model was shown, which the error event already carries
       CASE WHEN type = 'tool_call' AND span_status <> 'error' THEN list_filter([
           {'key': 'gen_ai.tool.call.result', 'text': otlp_text(attrs->'gen_ai.tool.call.result')},
           {'key': 'tool_response', 'text': otlp_text(attrs->'tool_response')},  -- pydantic-ai format 2
           {'key': 'ai.toolCall.result', 'text': otlp_text(attrs->'ai.toolCall.result')},
           {'key': 'output.value', 'text': CASE WHEN oi_kind = 'TOOL' THEN otlp_text(attrs->'output.value') END},
           {'key': 'traceloop.entity.output',
            'text': CASE WHEN tl_kind = 'tool' THEN otlp_text(attrs->'traceloop.entity.output') END},
           {'key': 'braintrust.output_json',
            'text': CASE WHEN bt_type IN ('tool', 'function')
                         THEN otlp_text(coalesce(attrs->'braintrust.output_json', attrs->'braintrust.output')) END},
           {'key': 'output', 'text': CASE WHEN lf_template = 'Function: {name}' THEN otlp_text(attrs->'output') END}
       ], lambda c: c.text IS NOT NULL)[1] END AS tool_output,
       CASE WHEN role = 'handoff' THEN
           coalesce(attrs->>'gen_ai.handoff.from_agent', attrs->>'from_agent',
                    CASE WHEN oi_kind = 'TOOL' THEN attrs->>'input.value' END) END AS handoff_from,
       CASE WHEN role = 'handoff' THEN
           coalesce(attrs->>'gen_ai.handoff.to_agent', attrs->>'to_agent',
                    CASE WHEN oi_kind = 'TOOL' THEN attrs->>'output.value' END,
                    nullif(regexp_extract(name, '^handoff to (.+)$', 1), '')) END AS handoff_to,
       -- logfire writes whether a guardrail tripped; OpenInference does not (the turn span's error says so)
       CASE WHEN role = 'guardrail' THEN lw_bool(attrs->>'triggered') END AS tripped
FROM typed;

CREATE OR REPLACE TEMP TABLE otlp_typed_span_events AS
SELECT e.file_id, e.record, e.pos, e.ev_index, e.ev, s.trace_id, s.span_id, s.type AS span_type,
       s.tool_name AS span_tool,
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
LEFT JOIN otlp_attrs a ON a.file_id = e.file_id AND a.record = e.record AND a.owner = 'e' || e.pos || '.' || e.ev_index
-- Vercel's stream timing marks (`ai.stream.firstChunk`, `ai.stream.finish`) are not steps: they stay in
-- their span's extra
WHERE NOT coalesce(starts_with(e.ev->>'name', 'ai.stream.'), false);

-- Evaluations a span records as a map of verdicts, one evaluation each: pydantic-evals case spans
-- (`assertions`, `scores`, `labels`: `{"<evaluator>": {"name", "value", "reason", ...}}`) and Braintrust's
-- `braintrust.scores` (`{"<scorer>": 0.8}`). An assertion's value is true or false; a label fails by its
-- word and a Braintrust score (0 to 1 by definition) below 0.5, as for other evaluations. A pydantic-evals
-- score is a measurement of no set scale or direction (a length, a latency): it is kept with no verdict.
CREATE OR REPLACE TEMP TABLE otlp_verdicts AS
WITH maps AS (
    SELECT s.file_id, s.record, s.pos, s.trace_id, s.span_id, coalesce(s.end_ns, s.start_ns) AS ts_ns, k.attr,
           otlp_json(s.attrs->k.attr) AS verdicts
    FROM otlp_typed_spans s
    JOIN (VALUES ('assertions'), ('scores'), ('labels'), ('braintrust.scores')) k(attr)
      ON k.attr = 'braintrust.scores' OR (s.attrs->>'case_name') IS NOT NULL OR s.lf_template = 'case: {case_name}'
    WHERE json_type(otlp_json(s.attrs->k.attr)) = 'OBJECT'
),
entries AS (
    SELECT m.*, e.id AS n, e.key, e.value::JSON AS entry,
           CASE WHEN e.type = 'OBJECT' THEN e.value::JSON->'value' ELSE e.value::JSON END AS verdict
    FROM maps m, json_each(m.verdicts) e
),
readings AS (
    SELECT file_id, record, pos, trace_id, span_id, ts_ns, attr, n, key, entry,
           coalesce(entry->>'name', key) AS name,
           CASE attr WHEN 'assertions' THEN CASE lw_bool(verdict->>'$') WHEN true THEN 'pass' WHEN false THEN 'fail' END
                     WHEN 'labels' THEN verdict->>'$' END AS label,
           CASE WHEN attr IN ('scores', 'braintrust.scores') THEN try_cast(verdict->>'$' AS DOUBLE) END AS score,
           CASE WHEN json_type(entry) = 'OBJECT' THEN nullif(trim(entry->>'reason'), '') END AS reason
    FROM entries
)
SELECT *, CASE WHEN attr <> 'scores' THEN otlp_eval_failed(label, score) END AS failed
FROM readings;

-- The agent span of each trace: the top span, else the outermost agent run (by start), that records the
-- user's input or the agent's answer in the producer's own attribute. Its input is the trace's task (when
-- none is named), its answer the trace's final answer. Messages of model calls are not read: each
-- repeats the conversation so far.
CREATE OR REPLACE TEMP TABLE otlp_agent_spans AS
WITH texts AS (
    SELECT trace_id, span_id, file_id, record, pos, start_ns, end_ns, span_status, is_top,
           CASE WHEN ai_root THEN otlp_prompt_text(otlp_json(json_extract(attrs, '$."ai.prompt"'))) END AS ai_prompt,
           CASE WHEN op = 'invoke_agent' THEN otlp_user_text(otlp_json(json_extract(attrs, '$."gen_ai.input.messages"'))) END AS genai_input,
           otlp_user_text(otlp_json(json_extract(attrs, '$."pydantic_ai.all_messages"'))) AS pydantic_input,
           otlp_user_text(otlp_json(json_extract(attrs, '$.all_messages_events'))) AS pydantic_v1_input,
           CASE WHEN tl_kind IN ('workflow', 'agent') THEN otlp_args_text(json_extract(attrs, '$."traceloop.entity.input"')) END AS traceloop_input,
           CASE WHEN bt_type IN ('eval', 'task')
                THEN otlp_input_text(coalesce(json_extract(attrs, '$."braintrust.input_json"'), json_extract(attrs, '$."braintrust.input"'))) END AS braintrust_input,
           CASE WHEN oi_kind IN ('AGENT', 'CHAIN') THEN otlp_input_text(json_extract(attrs, '$."input.value"')) END AS oi_input,
           CASE WHEN ai_root THEN attrs->>'ai.response.text' END AS ai_answer,
           CASE WHEN op = 'invoke_agent' THEN otlp_text(attrs->'final_result') END AS pydantic_answer,
           CASE WHEN op = 'invoke_agent' THEN otlp_assistant_text(otlp_json(json_extract(attrs, '$."gen_ai.output.messages"'))) END AS genai_answer,
           CASE WHEN tl_kind IN ('workflow', 'agent') THEN otlp_answer_text(json_extract(attrs, '$."traceloop.entity.output"')) END AS traceloop_answer,
           CASE WHEN bt_type IN ('eval', 'task')
                THEN otlp_answer_text(coalesce(json_extract(attrs, '$."braintrust.output_json"'), json_extract(attrs, '$."braintrust.output"'))) END AS braintrust_answer,
           CASE WHEN oi_kind IN ('AGENT', 'CHAIN') THEN otlp_answer_text(json_extract(attrs, '$."output.value"')) END AS oi_answer
    FROM otlp_typed_spans
    -- a CHAIN's input counts only on the top span: deeper chains are sub-steps
    WHERE is_top OR ai_root OR op = 'invoke_agent' OR tl_kind IN ('workflow', 'agent') OR bt_type IN ('eval', 'task')
       OR oi_kind = 'AGENT'
),
candidates AS (
    SELECT trace_id, span_id, file_id, record, pos, start_ns, end_ns, span_status, is_top,
           list_filter([{'key': 'ai.prompt', 'text': ai_prompt},
                        {'key': 'gen_ai.input.messages', 'text': genai_input},
                        {'key': 'pydantic_ai.all_messages', 'text': pydantic_input},
                        {'key': 'all_messages_events', 'text': pydantic_v1_input},
                        {'key': 'traceloop.entity.input', 'text': traceloop_input},
                        {'key': 'braintrust.input_json', 'text': braintrust_input},
                        {'key': 'input.value', 'text': oi_input}],
                       lambda c: trim(c.text) <> '')[1] AS input,
           list_filter([{'key': 'ai.response.text', 'text': ai_answer},
                        {'key': 'final_result', 'text': pydantic_answer},
                        {'key': 'gen_ai.output.messages', 'text': genai_answer},
                        {'key': 'traceloop.entity.output', 'text': traceloop_answer},
                        {'key': 'braintrust.output_json', 'text': braintrust_answer},
                        {'key': 'output.value', 'text': oi_answer}],
                       lambda c: trim(c.text) <> '')[1] AS output
    FROM texts
)
SELECT * FROM candidates
WHERE input IS NOT NULL OR output IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY is_top DESC, start_ns NULLS LAST, file_id, record, pos) = 1;

-- All events of all traces, with their sort key: time, then place in the file; within a span, the span
-- itself, its span events, what it recorded at its end (tool result, verdicts), the final answer, then
-- its status error.
CREATE OR REPLACE TEMP TABLE otlp_events AS
SELECT file_id, record, trace_id, start_ns AS sort_ns, pos, 0 AS part, 0 AS ev_index,
       span_id AS event_id, type,
       coalesce(role, attrs->>'openinference.span.kind', op, attrs->>'traceloop.span.kind', bt_type, ai_op, 'span')
           AS raw_type,
       CASE WHEN type = 'tool_call' THEN coalesce(tool_name, name)
            WHEN type = 'evaluation_result' THEN coalesce(otlp_eval_text(eval_name, eval_label, eval_score, eval_explanation), label)
            WHEN handoff_from IS NOT NULL OR handoff_to IS NOT NULL
                 THEN 'handoff from ' || coalesce(handoff_from, '?') || ' to ' || coalesce(handoff_to, '?')
            ELSE label END AS content,
       -- an evaluator's status is its verdict, a guardrail's whether it tripped; an evaluator that crashed
       -- gets its error event below
       CASE WHEN type = 'evaluation_result'
                 THEN CASE otlp_eval_failed(eval_label, eval_score) WHEN true THEN 'failed' WHEN false THEN 'passed' END
            WHEN tripped IS NOT NULL AND span_status <> 'error' THEN CASE WHEN tripped THEN 'triggered' ELSE 'passed' END
            -- a pending span standing in for a span whose end never arrived: no outcome known
            WHEN pending THEN 'pending'
            ELSE span_status END AS status,
       CASE WHEN type = 'evaluation_result' THEN NOT otlp_eval_failed(eval_label, eval_score)
            WHEN tripped IS NOT NULL AND span_status <> 'error' THEN NOT tripped
            WHEN pending THEN NULL
            ELSE span_status <> 'error' END AS success,
       tool_name, start_ns AS ts_ns, parent_span_id AS parent_id, attrs AS metadata,
       nullif(json_merge_patch(
           json_merge_patch(norm, '{"traceId":null,"spanId":null,"parentSpanId":null,"attributes":null,"events":null,"resource":null}'),
           json_object('scope', scope,
                       'events', CASE WHEN contains(events, '"ai.stream.')
                                      THEN to_json(list_filter(json_extract(events, '$[*]'),
                                                               lambda e: starts_with(e->>'name', 'ai.stream.'))) END,
                       'from_agent', handoff_from, 'to_agent', handoff_to))::VARCHAR, '{}')::JSON AS extra
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
-- A tool call that did not fail and recorded its result: the result, at the call's end.
SELECT file_id, record, trace_id, coalesce(end_ns, start_ns), pos, 2, 0,
       span_id || '/result', 'tool_result', tool_output.key, tool_output.text, 'ok', true,
       tool_name, coalesce(end_ns, start_ns), span_id, NULL, NULL
FROM otlp_typed_spans WHERE tool_output IS NOT NULL
UNION ALL
SELECT file_id, record, trace_id, ts_ns, pos, 2, n,
       span_id || '/' || attr || '/' || key, 'evaluation_result', attr, otlp_eval_text(name, label, score, reason),
       CASE failed WHEN true THEN 'failed' WHEN false THEN 'passed' END,
       NOT failed, NULL, ts_ns, span_id,
       CASE WHEN json_type(entry) = 'OBJECT' THEN entry END, NULL
FROM otlp_verdicts
UNION ALL
-- The agent's answer, once per trace, when its span did not fail.
SELECT file_id, record, trace_id, coalesce(end_ns, start_ns), pos, 3, 0,
       span_id || '/final_answer', 'final_answer', output.key, output.text, NULL, NULL,
       NULL, coalesce(end_ns, start_ns), span_id, NULL, NULL
FROM otlp_agent_spans WHERE output IS NOT NULL AND span_status <> 'error'
UNION ALL
-- A span that ended in ERROR is an error at its end, unless an exception event already says so. logfire
-- leaves the status message empty and writes the error as JSON in an `error` attribute.
SELECT s.file_id, s.record, s.trace_id, coalesce(s.end_ns, s.start_ns), s.pos, 4, 0,
       s.span_id || '/status', 'error', 'status:' || s.status_code,
       coalesce(s.status_message,
                CASE WHEN json_type(otlp_json(s.attrs->'error'), '$.message') = 'VARCHAR'
                     THEN concat_ws(': ', otlp_json(s.attrs->'error')->>'message',
                                    otlp_json(s.attrs->'error')->'data'->>'error') END,
                s.attrs->>'error.type', coalesce(s.label, 'span') || ' ended with status ERROR'),
       'error', false, s.tool_name, coalesce(s.end_ns, s.start_ns), s.span_id, NULL,
       json_object('status', s.norm->'status')
FROM otlp_typed_spans s
WHERE s.span_status = 'error'
  AND NOT EXISTS (SELECT 1 FROM otlp_typed_span_events e
                  WHERE e.file_id = s.file_id AND e.record = s.record AND e.pos = s.pos AND e.type = 'error');

-- One trace per traceId, over its spans in all the files of the batch, starting at its first record (by
-- file, then position). Top spans have no parent in the trace; the earliest is the root.
CREATE OR REPLACE TEMP TABLE otlp_traces AS
WITH roots AS (
    SELECT trace_id, failed, unnest(root)
    FROM (SELECT trace_id, bool_or(span_status = 'error') AS failed,
                 arg_min(struct_pack(root_file_id := file_id, root_record := record, rs_index, name, label, attrs,
                                     resource, schema_url),
                         (start_ns IS NULL, start_ns, file_id, record, pos)) AS root
          FROM otlp_typed_spans WHERE is_top GROUP BY trace_id)
),
spans AS (
    SELECT trace_id, min(file_id) AS file_id, arg_min(record, (file_id, record)) AS first_record,
           min(start_ns) AS start_ns, max(coalesce(end_ns, start_ns)) AS end_ns
    FROM otlp_spans GROUP BY trace_id
)
SELECT s.file_id, s.trace_id, s.first_record, s.start_ns, s.end_ns, r.failed, r.name AS root_name,
       r.label AS root_label, r.attrs AS root_attrs, ra.attrs AS resource_attrs, ag.input.text AS input_text,
       nullif(json_merge_patch(json_merge_patch(coalesce(r.resource, '{}'), '{"attributes":null}'),
                               json_object('schemaUrl', r.schema_url))::VARCHAR, '{}')::JSON AS extra
FROM spans s JOIN roots r USING (trace_id)
LEFT JOIN otlp_attrs ra ON ra.file_id = r.root_file_id AND ra.record = r.root_record AND ra.owner = 'r' || r.rs_index
LEFT JOIN otlp_agent_spans ag ON ag.trace_id = s.trace_id;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT t.trace_id, 'otlp',
       coalesce(t.resource_attrs->>'agent.name', t.resource_attrs->>'gen_ai.agent.name',
                t.root_attrs->>'gen_ai.agent.name', t.root_attrs->>'ai.telemetry.functionId',
                t.resource_attrs->>'service.name', 'unknown_service'),
       -- a task named by the producer; else what the user asked (its first line, short); else the name
       -- of the workflow or of the root span
       coalesce(t.root_attrs->>'task', t.root_attrs->>'agent.task', t.resource_attrs->>'agent.task',
                t.root_attrs->>'gen_ai.agent.description', t.resource_attrs->>'gen_ai.agent.description',
                lw_clip(split_part(trim(t.input_text), chr(10), 1), 200),
                t.root_attrs->>'traceloop.workflow.name',
                -- logfire's OpenAI Agents root: the workflow's name, as OpenInference names the root span
                CASE WHEN t.root_attrs->>'logfire.msg_template' = 'OpenAI Agents trace: {name}' THEN t.root_attrs->>'name' END,
                t.root_label),
       CASE WHEN t.failed THEN 'failed' ELSE 'success' END,
       -- only the keys the privacy screen hashes in metadata, so the raw id does not stay behind
       coalesce(t.resource_attrs->>'tenant_id', t.resource_attrs->>'tenant',
                t.root_attrs->>'tenant_id', t.root_attrs->>'tenant'),
       d.file, d.line, otlp_ts(t.start_ns), otlp_ts(t.end_ns),
       t.resource_attrs, t.extra, t.file_id, t.first_record
FROM otlp_traces t JOIN otlp_docs d ON d.file_id = t.file_id AND d.record = t.first_record;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record)
SELECT e.trace_id, o.seq, e.event_id, e.type, e.raw_type, e.content, e.status, e.success, e.tool_name,
       otlp_ts(e.ts_ns), e.parent_id, e.metadata, e.extra, e.file_id, e.record
FROM otlp_events e
-- the order is worked out on narrow rows, then joined to the events
JOIN (SELECT rowid AS event_row,
             row_number() OVER (PARTITION BY trace_id
                                ORDER BY sort_ns NULLS LAST, file_id, record, pos, part, ev_index) AS seq
      FROM otlp_events) o ON o.event_row = e.rowid;

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
DROP TABLE otlp_verdicts;
DROP TABLE otlp_agent_spans;
DROP TABLE otlp_events;
DROP TABLE otlp_traces;
DROP MACRO otlp_eval_failed;
DROP MACRO otlp_eval_text;
DROP MACRO otlp_args_text;
DROP MACRO otlp_prompt_text;
DROP MACRO otlp_answer_text;
DROP MACRO otlp_input_text;
DROP MACRO otlp_assistant_text;
DROP MACRO otlp_user_text;
DROP MACRO otlp_msg_text;
DROP MACRO otlp_parts_text;
DROP MACRO otlp_text;
DROP MACRO otlp_json;
DROP MACRO otlp_raw_attr;
DROP MACRO otlp_enum;
DROP MACRO otlp_id;
DROP MACRO otlp_value;
DROP MACRO otlp_scalar;
DROP MACRO otlp_ts;
