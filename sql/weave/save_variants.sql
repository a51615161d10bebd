-- Weave: record where each new variant went (a known lesson, or the lesson named by its group's
-- label), give its detections that lesson, and drop the weave's temp tables.
INSERT INTO lesson_variants
SELECT variant_id, lesson_id, round(similarity, 4), now()::TIMESTAMP FROM placed_variants
UNION ALL
SELECT l.id, l.label.id,
       CASE WHEN l.label.id = l.id THEN 1.0 ELSE round(max(e.j), 4) END, now()::TIMESTAMP
FROM labels l LEFT JOIN fresh_edges e ON e.x = l.id
GROUP BY l.id, l.label;

UPDATE detections SET lesson_id = v.lesson_id FROM lesson_variants v
WHERE detections.variant_id = v.variant_id AND detections.lesson_id IS DISTINCT FROM v.lesson_id;

DROP TABLE variant_texts; DROP TABLE fresh; DROP TABLE sim_texts; DROP TABLE sim_pairs;
DROP TABLE similar_edges; DROP TABLE placed_variants; DROP TABLE fresh_edges; DROP TABLE labels;
