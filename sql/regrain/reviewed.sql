-- Regrain, before: which findings each reviewed lesson is made of (a finding by its trace, detector and
-- place), so that its decision can follow them into the lesson that absorbs them at the new grain.
-- Leaves the temp table reviewed_findings.
CREATE OR REPLACE TEMP TABLE reviewed_findings AS
SELECT DISTINCT d.lesson_id AS old_lesson, d.trace_id, d.detector, coalesce(d.seq, -1) AS place
FROM detections d SEMI JOIN reviews r USING (lesson_id);
