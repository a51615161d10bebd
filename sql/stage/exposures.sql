-- Screen, first: where the agent exposed a secret (facts/exposures.sql says what a row is), from the
-- scan's secret matches (secret_hits: file_id, record, kind, hit) and the events adapted from those
-- records. A match is placed at the event of its record that holds it: its text compared whole, or by
-- its longest run of token characters (a value written inside JSON inside JSON is escaped differently
-- in the record than in the event). An event with several kinds is named by the most specific (the
-- first in $kinds). A person's own message is no exposure.
-- Parameters: $salt (VARCHAR): the database's salt (tenants are hashed with it too); $kinds
--   (VARCHAR[]): the secret kinds, most specific first.
INSERT INTO exposures
WITH hits AS (
    SELECT file_id, record, kind, hit,
           coalesce(list_sort(list_transform(regexp_extract_all(hit, '[A-Za-z0-9+/_=.-]{6,}'),
                                             lambda x: {'n': -length(x), 'x': x}))[1].x, hit) AS core
    FROM secret_hits
),
ev AS (
    SELECT e.trace_id, e.seq, e.type, e.tool_name, e.event_id, e.parent_id, e.file_id, e.record,
           e.metadata->>'tool_call_id' AS call_ref, lw_actor(e.type, e.actor) AS actor,
           concat_ws(chr(10), e.content, CASE WHEN e.type = 'tool_call' THEN lw_call_args(e.metadata, e.extra, e.content) END) AS text
    FROM events e SEMI JOIN hits h USING (file_id, record)
),
placed AS (
    SELECT e.trace_id, e.seq, any_value(e.type) AS type, any_value(e.tool_name) AS tool_name,
           any_value(e.event_id) AS event_id, any_value(e.parent_id) AS parent_id, any_value(e.call_ref) AS call_ref,
           arg_min(h.kind, coalesce(list_position($kinds::VARCHAR[], h.kind), 999)) AS kind
    FROM ev e JOIN hits h USING (file_id, record)
    WHERE e.actor IN ('agent', 'tool') AND (contains(e.text, h.hit) OR contains(e.text, h.core))
    GROUP BY e.trace_id, e.seq
),
calls AS (
    SELECT e.trace_id, e.seq, e.event_id, e.tool_name, e.metadata->>'tool_call_id' AS call_ref,
           lw_tool_key(e.tool_name, lw_command(lw_call_args(e.metadata, e.extra, e.content))) AS command
    FROM events e SEMI JOIN placed p USING (trace_id)
    WHERE e.type = 'tool_call'
),
-- a result's call: the one it names (its parent or call id), else the last call of its tool before
-- it, else the last call before it
made_by AS (
    SELECT p.trace_id, p.seq, p.kind,
           CASE p.type WHEN 'tool_result' THEN 'output' WHEN 'tool_call' THEN 'command' ELSE 'reply' END AS how,
           CASE WHEN p.type = 'tool_call' THEN p.tool_name
                ELSE arg_max(c.tool_name, (coalesce(c.event_id = p.parent_id OR c.call_ref = p.call_ref, false),
                                           c.tool_name IS NOT DISTINCT FROM p.tool_name, c.seq)) END AS tool,
           CASE WHEN p.type = 'tool_call' THEN any_value(c.command) FILTER (WHERE c.seq = p.seq)
                ELSE arg_max(c.command, (coalesce(c.event_id = p.parent_id OR c.call_ref = p.call_ref, false),
                                         c.tool_name IS NOT DISTINCT FROM p.tool_name, c.seq)) END AS command
    FROM placed p
    LEFT JOIN calls c ON c.trace_id = p.trace_id AND c.seq <= p.seq AND (p.type <> 'tool_call' OR c.seq = p.seq)
    WHERE p.type <> 'tool_result' OR c.seq < p.seq OR c.seq IS NULL
    GROUP BY p.trace_id, p.seq, p.kind, p.type, p.tool_name
)
SELECT 'sealed-' || substr(sha256($salt || ':sealed:' || m.trace_id), 1, 16), m.trace_id, m.seq, m.kind, m.how,
       m.tool, coalesce(m.command, m.tool),
       CASE WHEN nullif(t.tenant, '') IS NOT NULL THEN 'tenant-' || substr(sha256($salt || ':' || t.tenant), 1, 16) END,
       t.source, lw_project(t.metadata, t.source), t.file
FROM made_by m JOIN traces t USING (trace_id);
