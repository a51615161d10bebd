-- id: handoff_loss
-- title: Information was lost between agents
-- severity: high
-- description: A flag raised in a tool result (a top-level field of the result object whose value is true,
--   such as credit_hold in a CRM profile) that never reaches the next agent: a later peer_handoff whose
--   parsed fields (events.metadata.handoff) describe the same record (at least one field with the same
--   value) but lack the flag, or a worker_finish summary from the worker that got the result which
--   mentions the flag neither by name nor in words (credit_hold, "credit hold"). Only raised flags count:
--   a flag that is false is the default, and other fields (names, tiers, ids) are carried or asked for
--   on purpose, so flagging every dropped key would bury the few that change what the next agent must do.
-- lesson: Pass every raised flag on when handing work to another agent: {evidence}
WITH results AS (
    SELECT trace_id, seq, tool_name,
           CASE WHEN json_type(extra, '$.result') = 'OBJECT' THEN extra->'result'
                WHEN json_valid(content) AND json_type(content::JSON) = 'OBJECT' THEN content::JSON END AS record
    FROM events
    WHERE type = 'tool_result' AND NOT lw_failed(status, success)
),
fields AS (
    SELECT trace_id, seq, tool_name, record, unnest(json_keys(record)) AS field
    FROM results WHERE record IS NOT NULL
),
flags AS (
    SELECT trace_id, seq, tool_name, record, field
    FROM fields
    WHERE json_type(record->field) IN ('BOOLEAN', 'VARCHAR') AND lw_truthy(record->>field)
),
handoffs AS (
    SELECT trace_id, event_id, seq, content, metadata->'handoff' AS handoff,
           coalesce(extra->>'from_agent', 'one agent') AS from_agent, coalesce(extra->>'to_agent', 'the next') AS to_agent
    FROM events
    WHERE lower(raw_type) = 'peer_handoff' AND json_type(metadata, '$.handoff') = 'OBJECT'
),
worker_summaries AS (
    SELECT f.trace_id, f.event_id, f.seq, f.content, f.metadata->>'worker' AS worker,
           (SELECT max(s.seq) FROM events s
            WHERE s.trace_id = f.trace_id AND s.seq < f.seq AND lower(s.raw_type) = 'worker_start'
              AND s.metadata->>'worker' IS NOT DISTINCT FROM f.metadata->>'worker') AS start_seq
    FROM events f
    WHERE lower(f.raw_type) = 'worker_finish'
),
losses AS (
    SELECT h.trace_id, h.event_id, h.seq, fl.field, fl.tool_name, h.content,
           'the handoff from ' || h.from_agent || ' to ' || h.to_agent AS carrier
    FROM handoffs h JOIN flags fl ON fl.trace_id = h.trace_id AND fl.seq < h.seq
    WHERE NOT list_contains(json_keys(h.handoff), fl.field)
      AND EXISTS (SELECT 1 FROM unnest(json_keys(h.handoff)) AS k(key)
                  WHERE list_contains(json_keys(fl.record), k.key)
                    AND lower(fl.record->>k.key) = lower(h.handoff->>k.key))
    UNION ALL
    SELECT w.trace_id, w.event_id, w.seq, fl.field, fl.tool_name, w.content,
           coalesce(w.worker, 'the worker') || '''s summary' AS carrier
    FROM worker_summaries w JOIN flags fl ON fl.trace_id = w.trace_id AND fl.seq > w.start_seq AND fl.seq < w.seq
)
SELECT trace_id, event_id, seq,
       field || '=true from ' || coalesce(tool_name, 'a tool result') || ' is missing from ' || carrier AS evidence,
       'A flag raised in a tool result was dropped when the work passed to another agent.' AS problem,
       'When handing work on, carry ' || field || '=true (from ' || coalesce(tool_name, 'the tool result')
           || ') explicitly: the next agent cannot act on a flag it never receives.' AS lesson
FROM losses
-- mentioned by name or in words (credit_hold, "credit hold", creditHold) counts as carried
WHERE NOT contains(lower(coalesce(content, '')), lower(field))
  AND NOT contains(lower(coalesce(content, '')),
                   lower(replace(regexp_replace(field, '([a-z0-9])([A-Z])', '\1 \2', 'g'), '_', ' ')))
QUALIFY row_number() OVER (PARTITION BY trace_id, event_id, field ORDER BY seq) = 1
