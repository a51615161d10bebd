-- Weave, first: one text per variant (its earliest evidence, normalised) in its block (what may be
-- merged: the detector, source, tenant and normalised task, or the lesson key), and the variants
-- without a lesson yet. Ends with their number.
-- Leaves the temp tables variant_texts and fresh.

-- Databases from before variants existed: each detection's lesson id was its variant id.
UPDATE detections SET variant_id = lesson_id WHERE variant_id IS NULL AND lesson_id IS NOT NULL;

CREATE OR REPLACE TEMP TABLE variant_texts AS
SELECT d.variant_id AS id,
       -- a detection with a lesson key is grouped by it, not by source and task
       any_value(CASE WHEN d.lesson_key IS NOT NULL
                      THEN concat_ws('|', d.detector, coalesce(t.tenant, ''), 'key:' || d.lesson_key)
                      ELSE concat_ws('|', d.detector, coalesce(t.source, ''), coalesce(t.tenant, ''),
                                     lw_normalise(t.task)) END) AS block,
       lw_normalise(arg_min(d.evidence, (d.detected_at, d.trace_id))) AS text,
       min(d.detected_at) AS first_seen,
       any_value(v.lesson_id) AS lesson_id
FROM detections d JOIN traces t USING (trace_id)
LEFT JOIN lesson_variants v ON v.variant_id = d.variant_id
WHERE d.variant_id IS NOT NULL
GROUP BY d.variant_id;

CREATE OR REPLACE TEMP TABLE fresh AS
SELECT id, first_seen FROM variant_texts WHERE lesson_id IS NULL;

SELECT count(*) FROM fresh;
