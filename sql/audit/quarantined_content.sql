-- Audit of the database: a quarantined trace's id where content lives (traces, events, detections,
-- and lessons' example traces), as (place, trace_id): none may be there.
SELECT place, trace_id FROM (
    SELECT DISTINCT 1 AS n, 'traces.trace_id' AS place, trace_id FROM quarantine SEMI JOIN traces USING (trace_id)
    UNION ALL
    SELECT DISTINCT 2, 'events.trace_id', trace_id FROM quarantine SEMI JOIN events USING (trace_id)
    UNION ALL
    SELECT DISTINCT 3, 'detections.trace_id', trace_id FROM quarantine SEMI JOIN detections USING (trace_id)
    UNION ALL
    -- the examples unnested and joined: list_contains in the join condition compared every quarantined
    -- id with every lesson (18k x 92k pairs: 20 s)
    SELECT DISTINCT 4, 'lessons.example_trace_ids', trace_id
    FROM quarantine SEMI JOIN (SELECT unnest(example_trace_ids) AS trace_id FROM lessons) USING (trace_id)
)
ORDER BY n, trace_id;
