-- Stage, before the scan: set aside what in a record is no text, so that it is neither scanned nor
-- stored: a model's encrypted reasoning (`encrypted_content`, opaque base64 the producer hands back
-- to its API), and base64 data (a `data:...;base64,` URI, a JSON string of 256 or more base64
-- characters and nothing else: an image, a file, a screenshot). Each becomes `[opaque]`. Such runs
-- hold key-shaped letters by chance (`sk-` followed by 40 letters), and nothing learns from them.
-- JSON written inside a JSON string is treated alike (its quotes are escaped).
UPDATE records SET doc = CAST(
    regexp_replace(
        regexp_replace(
            regexp_replace(CAST(doc AS VARCHAR),
                           '(\\*"encrypted_content\\*"\s*:\s*\\*")[^"\\]*(\\*")', '\1[opaque]\2', 'g'),
            '(data:[A-Za-z]+\\?/[A-Za-z0-9.+-]+;base64,)(?:[A-Za-z0-9+=]|\\?/)+', '\1[opaque]', 'g'),
        '([\[:,]\s*\\*")(?:[A-Za-z0-9+]|\\?/){256,}={0,2}(\\*")', '\1[opaque]\2', 'g') AS JSON)
WHERE regexp_matches(CAST(doc AS VARCHAR), 'encrypted_content|;base64,|[A-Za-z0-9+/]{256}');
