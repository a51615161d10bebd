-- Stage, after adapting: move every sensitive trace into the table quarantine (trace_id, reason) and
-- delete its traces and events rows; then mark the kept traces whose secrets were redacted. A trace is sensitive by a reserved tag (in its metadata or an
-- event's) or by a finding of the scan in one of its records; the first reason found is kept: tags
-- before findings, secrets before PII, patterns in the order of patterns.PATTERNS.
-- Parameters: $flagged (VARCHAR[]): the finding categories that quarantine ('secret', and 'pii' when PII
--   quarantines instead of being redacted); $kinds (VARCHAR[]): the pattern kinds, in order.

-- The first reserved tag in a JSON object that marks it sensitive, or NULL. Any value of a tag other
-- than the safe ones listed makes a trace sensitive, unknown ones too.
CREATE OR REPLACE TEMP MACRO lw_sensitive_tag(meta) AS CASE
    WHEN lw_truthy(meta->>'contains_secret') THEN 'tag:contains_secret'
    WHEN lw_truthy(meta->>'contains_pii') THEN 'tag:contains_pii'
    WHEN nullif(trim(meta->>'sensitivity'), '') IS NOT NULL
         AND lower(trim(meta->>'sensitivity')) NOT IN ('none', 'low', 'public') THEN 'tag:sensitivity'
    WHEN nullif(trim(meta->>'data_classification'), '') IS NOT NULL
         AND lower(trim(meta->>'data_classification')) NOT IN ('public', 'internal') THEN 'tag:data_classification'
END;

-- Could this JSON text hold a reserved tag? Its key is spelt out, or escaped (\u0073ensitivity). Most
-- events' metadata holds none, and looking up four keys in each costs more than looking at the text.
CREATE OR REPLACE TEMP MACRO lw_may_tag(meta) AS
    meta IS NOT NULL AND regexp_matches(CAST(meta AS VARCHAR), 'contains_(secret|pii)|sensitivity|data_classification|\\u');

CREATE OR REPLACE TABLE quarantine AS
SELECT trace_id, arg_min(reason, rank) AS reason FROM (
    SELECT trace_id, lw_sensitive_tag(metadata) AS reason, 0 AS rank FROM traces
    UNION ALL
    -- (a CASE, so that the look at the text comes first: a filter's terms may be taken in any order)
    SELECT trace_id, CASE WHEN lw_may_tag(metadata) THEN lw_sensitive_tag(metadata) END AS reason, seq AS rank
    FROM events
    UNION ALL
    SELECT rt.trace_id, f.category || ':' || f.kind,
           1000000 + (CASE f.category WHEN 'secret' THEN 0 ELSE 1000 END)
                   + coalesce(list_position($kinds::VARCHAR[], f.kind) - 1, 999)
    FROM record_findings f JOIN record_traces rt USING (file_id, record)
    WHERE list_contains($flagged::VARCHAR[], f.category)
) WHERE reason IS NOT NULL GROUP BY trace_id;

DELETE FROM events WHERE trace_id IN (SELECT trace_id FROM quarantine);
DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM quarantine);

-- A kept trace whose secrets were replaced by markers (stage/redact.sql) says so: the kinds redacted.
ALTER TABLE traces ADD COLUMN IF NOT EXISTS redacted VARCHAR[];
UPDATE traces SET redacted = r.kinds
FROM (SELECT rt.trace_id, list_sort(list_distinct(flatten(list(s.kinds)))) AS kinds
      FROM secret_redactions s JOIN record_traces rt USING (file_id, record) GROUP BY rt.trace_id) r
WHERE traces.trace_id = r.trace_id;
DROP TABLE secret_redactions;
