-- Weave: the texts weave/similar.sql compares. Only blocks with a new variant and another one need
-- comparing. Leaves the temp table sim_texts.
CREATE OR REPLACE TEMP TABLE sim_texts AS
SELECT id, block, text, lesson_id IS NOT NULL AS known FROM variant_texts
WHERE block IN (SELECT block FROM variant_texts GROUP BY block
                HAVING count(*) > 1 AND count(*) FILTER (WHERE lesson_id IS NULL) > 0);
