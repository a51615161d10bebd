-- Weave, one round: each variant whose label changed in the last round (changed) offers it to its
-- similar neighbours, and a neighbour takes the earliest label offered when it is earlier than its
-- own. Ends with the number of labels that changed: none, and the groups are settled, each with the
-- label of its earliest variant.
-- Only the frontier is touched, not every label each round: most variants have no similar neighbour,
-- and of the rest few change after the first rounds.
CREATE OR REPLACE TEMP TABLE taken AS
SELECT o.id, o.label FROM (
    SELECT e.y AS id, min(c.label) AS label FROM changed c JOIN fresh_edges e ON e.x = c.id GROUP BY e.y
) o JOIN labels l USING (id)
WHERE o.label < l.label;

DROP TABLE changed;
ALTER TABLE taken RENAME TO changed;
UPDATE labels SET label = c.label FROM changed c WHERE labels.id = c.id;

SELECT count(*) FROM changed;
