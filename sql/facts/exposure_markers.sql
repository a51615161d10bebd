-- Where in a kept trace the agent exposed a secret that the scan redacted: the events of the agent or
-- of its tools that hold a marker `[SECRET:<kind>#<hash>]` (stage/redact.sql) in their content,
-- arguments or metadata; the marker names the kind, never the value. A person's own message is no
-- exposure: pasting a key is their act, not the agent's. Leaves exposure_spots (trace_id, seq, kind) for
-- facts/exposures_place.sql.
-- Parameters: $kept (BOOLEAN): only traces still in `traces` whose exposures are not noted yet (a
--   detect after the screen, a redetect), replacing any noted before; else every staged trace.
DELETE FROM exposures WHERE $kept AND trace_id IN (SELECT trace_id FROM traces);

CREATE OR REPLACE TEMP TABLE exposure_spots AS
SELECT DISTINCT trace_id, seq, kind FROM (
    SELECT trace_id, seq, unnest(regexp_extract_all(text, '\[SECRET:([a-z0-9_]+)#[0-9a-f]{8}\]', 1)) AS kind
    FROM (SELECT trace_id, seq, concat_ws(chr(10), content, CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)) AS text
          FROM events WHERE lw_actor(type, actor) IN ('agent', 'tool'))
    WHERE contains(text, '[SECRET:')
);
