-- Weave, first: one text per variant (its signature, normalised) in its block (the variants that may be
-- merged: those of one detector family, whatever task, source or tenant they came from), and the
-- variants without a lesson yet. Ends with their number.
-- Leaves the temp tables variant_texts and fresh.

-- Databases from before variants existed: each detection's lesson id was its variant id.
UPDATE detections SET variant_id = lesson_id WHERE variant_id IS NULL AND lesson_id IS NOT NULL;

CREATE OR REPLACE TEMP TABLE variant_texts AS
SELECT d.variant_id AS id,
       any_value(coalesce(d.family, d.detector)) AS block,
       lw_normalise(arg_min(coalesce(d.signature, d.evidence), (d.detected_at, d.trace_id))) AS text,
       min(d.detected_at) AS first_seen,
       any_value(v.lesson_id) AS lesson_id
FROM detections d
LEFT JOIN lesson_variants v ON v.variant_id = d.variant_id
WHERE d.variant_id IS NOT NULL
GROUP BY d.variant_id;

CREATE OR REPLACE TEMP TABLE fresh AS
SELECT id, first_seen FROM variant_texts WHERE lesson_id IS NULL;

SELECT count(*) FROM fresh;
