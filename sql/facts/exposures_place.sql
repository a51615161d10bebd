-- Where the agent exposed a secret (facts/exposures.sql says what a row is), from exposure_spots
-- (trace_id, seq, kind: stage/exposures.sql or facts/exposure_markers.sql): each event named by its most
-- specific kind (the first in $kinds), with how it came out and the call that did it.
-- Parameters: $salt (VARCHAR): the database's salt (tenants are hashed with it too); $sealed (BOOLEAN):
--   the traces will be quarantined, so their findings are kept under a salted hash of their id (else
--   under the id itself); $kinds (VARCHAR[]): the secret kinds, most specific first.
INSERT INTO exposures
WITH placed AS (
    SELECT e.trace_id, e.seq, any_value(e.type) AS type, any_value(e.tool_name) AS tool_name,
           any_value(e.event_id) AS event_id, any_value(e.parent_id) AS parent_id,
           any_value(e.metadata->>'tool_call_id') AS call_ref,
           arg_min(s.kind, coalesce(list_position($kinds::VARCHAR[], s.kind), 999)) AS kind
    FROM events e JOIN exposure_spots s USING (trace_id, seq)
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
    SELECT p.trace_id, p.seq, p.kind, p.event_id,
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
    GROUP BY p.trace_id, p.seq, p.kind, p.event_id, p.type, p.tool_name
)
SELECT CASE WHEN $sealed THEN 'sealed-' || substr(sha256($salt || ':sealed:' || m.trace_id), 1, 16) ELSE m.trace_id END,
       m.trace_id, m.seq, m.event_id, m.kind, m.how,
       m.tool, coalesce(m.command, m.tool),
       -- a kept trace's tenant is hashed by then (stage/tenants.sql); a sealed one's is hashed here
       CASE WHEN NOT $sealed THEN t.tenant
            WHEN nullif(t.tenant, '') IS NOT NULL THEN 'tenant-' || substr(sha256($salt || ':' || t.tenant), 1, 16) END,
       t.source, lw_project(t.metadata, t.source), t.file
FROM made_by m JOIN traces t USING (trace_id);
DROP TABLE exposure_spots;
