-- Load: a fate for each staged trace that is not simply new: delivered twice (in this load or
-- before: 'duplicate' with the same content, 'conflict' with other content), or 'held_back' because
-- its trace_id is quarantined, or 'forgotten' because `lessonweaver forget` removed a trace of that id
-- (only a hash of the id is kept, in `forgotten`). Usually there are none, and only those traces are ranked, so the
-- load's memory does not grow with the number of traces.
-- Leaves the temp tables batch_quarantine, held, fates, fate_records and not_new.
CREATE OR REPLACE TEMP TABLE batch_quarantine AS SELECT * FROM staged_quarantine;

CREATE OR REPLACE TEMP TABLE held AS
SELECT trace_id, any_value(reason) AS reason FROM (
    SELECT trace_id, reason FROM quarantine UNION ALL SELECT trace_id, reason FROM batch_quarantine)
GROUP BY trace_id;

CREATE OR REPLACE TEMP TABLE fates AS
WITH s AS (SELECT trace_id, batch, file, line, content_hash FROM staged_traces),
involved AS (
    SELECT trace_id FROM s GROUP BY trace_id HAVING count(*) > 1
    UNION SELECT trace_id FROM traces SEMI JOIN s USING (trace_id)
    UNION SELECT trace_id FROM held SEMI JOIN s USING (trace_id)
    UNION SELECT trace_id FROM s WHERE sha256(trace_id) IN (SELECT trace_hash FROM forgotten)
),
ranked AS (
    SELECT s.*, row_number() OVER w AS nth, first_value(content_hash) OVER w AS first_hash,
           first_value(file) OVER w AS first_file
    FROM s SEMI JOIN involved USING (trace_id)
    WINDOW w AS (PARTITION BY trace_id ORDER BY batch, file, line)
)
SELECT s.trace_id, s.batch,
       CASE
         WHEN sha256(s.trace_id) IN (SELECT trace_hash FROM forgotten) THEN 'forgotten'
         WHEN hq.trace_id IS NOT NULL THEN 'held_back'
         WHEN x.trace_id IS NOT NULL AND x.content_hash IS NOT DISTINCT FROM s.content_hash THEN 'duplicate'
         WHEN x.trace_id IS NOT NULL THEN 'conflict'
         WHEN s.nth > 1 AND s.content_hash = s.first_hash THEN 'duplicate'
         WHEN s.nth > 1 THEN 'conflict'
         ELSE 'new'
       END AS fate,
       coalesce(x.file, s.first_file) AS other_file,
       hq.reason AS held_reason
FROM ranked s
LEFT JOIN traces x USING (trace_id)
LEFT JOIN held hq USING (trace_id);

CREATE OR REPLACE TEMP TABLE fate_records AS
SELECT r.*, f.fate, f.other_file, f.held_reason
FROM staged_trace_records r JOIN fates f USING (trace_id, batch)
WHERE f.fate IN ('conflict', 'held_back', 'forgotten');

-- A batch keeps one copy of a trace (adapters settle duplicates within it), so (trace_id, batch)
-- names one staged trace.
CREATE OR REPLACE TEMP TABLE not_new AS SELECT trace_id, batch FROM fates WHERE fate <> 'new';
