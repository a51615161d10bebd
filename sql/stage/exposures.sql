-- Screen, first, when secrets quarantine: where in a trace the agent exposed a secret, from the scan's
-- secret matches (secret_hits: file_id, record, kind, hit) and the events adapted from those records.
-- A match is placed at the event of its record that holds it: its text compared whole, or by its
-- longest run of token characters (a value written inside JSON inside JSON is escaped differently in
-- the record than in the event), or by what comes before its first escape. A person's own message is no exposure. Leaves exposure_spots
-- (trace_id, seq, kind) for facts/exposures_place.sql.
CREATE OR REPLACE TEMP TABLE exposure_spots AS
WITH hits AS (
    SELECT file_id, record, kind, hit,
           coalesce(list_sort(list_transform(regexp_extract_all(hit, '[A-Za-z0-9+/_=.-]{6,}'),
                                             lambda x: {'n': -length(x), 'x': x}))[1].x, hit) AS core,
           CASE WHEN kind = 'private_key' THEN regexp_extract(hit, '^[^\\]+') ELSE '' END AS head  -- its BEGIN line
    FROM secret_hits
),
ev AS (
    SELECT e.trace_id, e.seq, e.file_id, e.record, lw_actor(e.type, e.actor) AS actor,
           concat_ws(chr(10), e.content, CASE WHEN e.type = 'tool_call' THEN lw_call_args(e.metadata, e.extra, e.content) END) AS text
    FROM events e SEMI JOIN hits h USING (file_id, record)
)
SELECT DISTINCT e.trace_id, e.seq, h.kind
FROM ev e JOIN hits h USING (file_id, record)
WHERE e.actor IN ('agent', 'tool')
  AND (contains(e.text, h.hit) OR contains(e.text, h.core) OR (h.head <> '' AND contains(e.text, h.head)));
