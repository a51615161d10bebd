-- Stage, after the scan: replace in the staged records every valid PII match (scan_hits) with its
-- placeholder, and, when secrets are redacted, every secret value with a typed marker
-- `[SECRET:<kind>#<8 hex>]`: the kind, and a hash of the value salted with the database's salt, so that
-- one value stays one marker within a database while nobody without the salt can test a guessed value
-- against it. A secret value is replaced in every record of its file that holds it (a key pasted once
-- and printed again later, in another field, inside JSON written in a JSON string), longest first.
-- A match is replaced where it follows an even number of backslashes (none, or escaped ones): the same
-- letters after a single backslash begin with an escape's letter (`\n@dataclass` is a line break and a
-- decorator), and replacing them would break the escape and the JSON. Secrets go first: an address
-- pattern would otherwise take the password out of `postgres://admin:pw@db.host` and leave no marker.
-- When secrets quarantine instead, a record that holds one is left as it is: its trace is quarantined
-- whole, and the screen must still find where the secret was (an email pattern would take the token
-- out of `https://user:token@host`).
-- Parameters: $pii_kinds, $placeholders (VARCHAR[]): each PII pattern's kind and placeholder, empty when
--   PII quarantines; $redact_secrets (BOOLEAN); $salt (VARCHAR); $kinds (VARCHAR[]): the secret kinds,
--   most specific first. Reads secret_cores (kind, hit, core: the secret value in each secret match).
-- Leaves secret_redactions (file_id, record, kinds VARCHAR[]): the kinds of secret replaced in a record.

-- each secret value of a file once, named by the most specific kind that found it or a value inside it
-- (`x-access-token:ghp_…@github.com` is a keyed value that holds a GitHub token)
CREATE OR REPLACE TEMP TABLE secret_values AS
WITH found AS (
    SELECT DISTINCT h.file_id, c.core, h.kind
    FROM scan_hits h JOIN secret_cores c USING (kind, hit)
    WHERE h.category = 'secret' AND $redact_secrets AND length(c.core) >= 4
)
SELECT file_id, core, kind,
       '[SECRET:' || kind || '#' || substr(sha256($salt || ':secret:' || core), 1, 8) || ']' AS marker
FROM (SELECT v.file_id, v.core, arg_min(w.kind, coalesce(list_position($kinds::VARCHAR[], w.kind), 999)) AS kind
      FROM found v JOIN found w ON w.file_id = v.file_id AND contains(v.core, w.core)
      GROUP BY v.file_id, v.core);

CREATE OR REPLACE TEMP TABLE replacements AS
SELECT h.file_id, h.record, h.hit AS target, p.placeholder AS replacement, NULL AS kind
FROM (SELECT DISTINCT file_id, record, kind, hit FROM scan_hits WHERE category = 'pii') h
JOIN (SELECT unnest($pii_kinds::VARCHAR[]) AS kind, unnest($placeholders::VARCHAR[]) AS placeholder) p USING (kind)
WHERE $redact_secrets OR NOT EXISTS (SELECT 1 FROM scan_hits x
                                     WHERE x.file_id = h.file_id AND x.record = h.record AND x.category = 'secret')
UNION ALL
SELECT r.file_id, r.record, v.core, v.marker, v.kind
FROM records r JOIN secret_values v USING (file_id)
WHERE contains(CAST(r.doc AS VARCHAR), v.core);

CREATE OR REPLACE TEMP TABLE redacted AS
SELECT x.file_id, x.record,
       list_reduce(list({'hit': x.target, 'replacement': x.replacement}
                        ORDER BY x.kind IS NULL, length(x.target) DESC, x.target),
                   lambda acc, y: regexp_replace(acc, '(^|[^\\])((?:\\\\)*)' || regexp_escape(y.hit),
                                                 '\1\2' || replace(y.replacement, '\', '\\'), 'g'),
                   CAST(any_value(r.doc) AS VARCHAR)) AS text,
       list_sort(list(DISTINCT x.kind) FILTER (WHERE x.kind IS NOT NULL)) AS kinds
-- each distinct target once: a replacement reads the whole text, and a record names one address many times
FROM (SELECT DISTINCT * FROM replacements) x JOIN records r USING (file_id, record)
GROUP BY x.file_id, x.record;

UPDATE records SET doc = CAST(r.text AS JSON)
FROM redacted r
WHERE records.file_id = r.file_id AND records.record = r.record AND json_valid(r.text);

CREATE OR REPLACE TEMP TABLE secret_redactions AS
SELECT file_id, record, kinds FROM redacted WHERE len(kinds) > 0 AND json_valid(text);

-- A redaction that broke the JSON (it should not happen) keeps the record out entirely.
INSERT INTO record_findings
SELECT file_id, record, 'unredactable', 'json' FROM redacted WHERE NOT json_valid(text);
DROP TABLE redacted; DROP TABLE replacements; DROP TABLE secret_values;
