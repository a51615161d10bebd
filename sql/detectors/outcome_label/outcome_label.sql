-- id: outcome_label
-- title: The producer labelled what went wrong
-- severity: medium
-- category: producer_flag
-- description: Each entry of a trace's top-level outcome_labels list (label, severity, notes; a plain
--   string is a label), and a recurring_pattern value in its metadata.
-- lesson: Avoid this known pattern: {evidence}
WITH labels AS (
    SELECT trace_id, generate_subscripts(entries, 1) AS n, unnest(entries) AS entry
    FROM (SELECT trace_id, json_extract(extra, '$.outcome_labels[*]') AS entries
          FROM traces WHERE json_type(extra, '$.outcome_labels') = 'ARRAY')
)
SELECT trace_id,
       CASE WHEN json_type(entry) = 'OBJECT'
            THEN coalesce(entry->>'label', 'unlabelled') || coalesce(': ' || nullif(trim(entry->>'notes'), ''), '')
            ELSE trim(entry::VARCHAR, '"') END AS evidence,
       CASE WHEN json_type(entry) = 'OBJECT'
                 AND lower(entry->>'severity') IN ('info', 'low', 'medium', 'high', 'critical')
            THEN lower(entry->>'severity') END AS severity,
       'Outcome label: ' || coalesce(CASE WHEN json_type(entry) = 'OBJECT' THEN entry->>'label' END,
                                     trim(entry::VARCHAR, '"')) AS problem
FROM labels

UNION ALL

SELECT trace_id, 'recurring pattern: ' || (metadata->>'recurring_pattern'), NULL,
       'A recurring pattern the producer recorded: ' || (metadata->>'recurring_pattern')
FROM traces
WHERE nullif(trim(metadata->>'recurring_pattern'), '') IS NOT NULL
