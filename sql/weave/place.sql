-- Weave: a new variant joins the known lesson it is most similar to (placed_variants); the others
-- start with a label of their own (labels), which weave/spread_labels.sql spreads along similar pairs.
-- Reads sim_pairs (weave/similar.sql); leaves the temp tables similar_edges, placed_variants,
-- fresh_edges, labels and changed (the labels weave/spread_labels.sql spreads first).
CREATE OR REPLACE TEMP TABLE similar_edges AS
SELECT a AS x, b AS y, j FROM sim_pairs UNION ALL SELECT b, a, j FROM sim_pairs;

CREATE OR REPLACE TEMP TABLE placed_variants AS
SELECT e.x AS variant_id, arg_min(v.lesson_id, (-e.j, e.y)) AS lesson_id, max(e.j) AS similarity
FROM similar_edges e SEMI JOIN fresh f ON f.id = e.x JOIN variant_texts v ON v.id = e.y AND v.lesson_id IS NOT NULL
GROUP BY e.x;

CREATE OR REPLACE TEMP TABLE fresh_edges AS
SELECT e.x, e.y, e.j FROM similar_edges e
SEMI JOIN fresh a ON a.id = e.x SEMI JOIN fresh b ON b.id = e.y
WHERE e.x NOT IN (SELECT variant_id FROM placed_variants) AND e.y NOT IN (SELECT variant_id FROM placed_variants);

CREATE OR REPLACE TEMP TABLE labels AS
SELECT id, {'first_seen': first_seen, 'id': id} AS label FROM fresh
WHERE id NOT IN (SELECT variant_id FROM placed_variants);

CREATE OR REPLACE TEMP TABLE changed AS SELECT id, label FROM labels SEMI JOIN fresh_edges e ON e.x = labels.id;
