-- Weave, one round: each new variant takes the earliest label among its own and its similar
-- neighbours' (next_labels). Ends with the number of labels that changed: none, and the groups are
-- settled.
CREATE OR REPLACE TEMP TABLE next_labels AS
SELECT l.id, least(l.label, min(n.label)) AS label
FROM labels l LEFT JOIN fresh_edges e ON e.x = l.id LEFT JOIN labels n ON n.id = e.y
GROUP BY l.id, l.label;

SELECT count(*) FROM next_labels JOIN labels USING (id) WHERE next_labels.label <> labels.label;
