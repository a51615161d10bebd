-- Stage, after the scan: replace every valid PII match (scan_hits) in the staged records with its
-- placeholder, longest first, keeping the JSON valid. A match is replaced where it follows an even number
-- of backslashes (none, or escaped ones): the same letters after a single backslash begin with an
-- escape's letter (`\n@dataclass` is a line break and a decorator), and replacing them would break the
-- escape and the JSON. A record that holds a secret is left as it is: its trace is quarantined whole,
-- and the screen must still find where the secret was (an email pattern would take the token out of
-- `https://user:token@host`).
-- Parameters: $pii_kinds, $placeholders (VARCHAR[]): each PII pattern's kind and placeholder.
CREATE OR REPLACE TEMP TABLE redacted AS
SELECT s.file_id, s.record,
       list_reduce(list({'hit': h.hit, 'placeholder': p.placeholder} ORDER BY length(h.hit) DESC, h.hit),
                   lambda acc, x: regexp_replace(acc, '(^|[^\\])((?:\\\\)*)' || regexp_escape(x.hit),
                                                 '\1\2' || replace(x.placeholder, '\', '\\'), 'g'),
                   any_value(s.text)) AS text
-- each distinct match once: a replacement reads the whole text, and a record names one address many times
FROM scan_texts s JOIN (SELECT DISTINCT file_id, record, kind, hit FROM scan_hits) h USING (file_id, record)
JOIN (SELECT unnest($pii_kinds::VARCHAR[]) AS kind, unnest($placeholders::VARCHAR[]) AS placeholder) p USING (kind)
WHERE NOT EXISTS (SELECT 1 FROM scan_hits x
                  WHERE x.file_id = s.file_id AND x.record = s.record AND x.category = 'secret')
GROUP BY s.file_id, s.record;

UPDATE records SET doc = CAST(r.text AS JSON)
FROM redacted r
WHERE records.file_id = r.file_id AND records.record = r.record AND json_valid(r.text);

-- A redaction that broke the JSON (it should not happen) keeps the record out entirely.
INSERT INTO record_findings
SELECT file_id, record, 'secret', 'unredactable_pii' FROM redacted WHERE NOT json_valid(text);
DROP TABLE redacted;
