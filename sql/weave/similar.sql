-- Similar texts (lessons.find_similar): the temp table sim_pairs (a, b, j) holds the pairs of ids of
-- sim_texts (id, block, text, known) whose word sets have a Jaccard similarity j of at least
-- $threshold, within one block, each pair once (a < b). Known texts are compared with unknown ones only.
-- Parameters: $threshold (DOUBLE); $small_block: blocks of at most this many texts compare every pair;
--   $minhashes, $band_rows, $bands ($minhashes / $band_rows): the MinHash signature of larger blocks;
--   $heads: in a MinHash bucket, each unknown text is paired with this many known and unknown ones.
CREATE OR REPLACE TEMP TABLE sim_words AS
SELECT id, block, known, block_size, words, len(words) AS n FROM (
    SELECT id, block, coalesce(known, false) AS known, count(*) OVER (PARTITION BY block) AS block_size,
           list_transform(list_distinct(list_filter(string_split(text, ' '), lambda w: w <> '')),
                          lambda w: hash(w)) AS words
    FROM sim_texts);

-- Small blocks: every pair with an unknown text is a candidate (a few per text).
CREATE OR REPLACE TEMP TABLE sim_candidates AS
SELECT x.id AS a, y.id AS b FROM sim_words x JOIN sim_words y USING (block)
WHERE x.block_size <= $small_block AND x.id < y.id AND NOT (x.known AND y.known);

-- Large blocks: MinHash buckets.
CREATE OR REPLACE TEMP TABLE sim_bands AS
SELECT id, block, known, band, hash(sig[band * $band_rows + 1 : band * $band_rows + $band_rows]) AS signature
FROM (SELECT id, block, known,
             list_transform(range($minhashes), lambda k: list_min(list_transform(words, lambda w: hash(w, k)))) AS sig
      FROM sim_words WHERE block_size > $small_block AND n > 0), range($bands) b(band);

INSERT INTO sim_candidates
WITH heads AS (
    SELECT block, band, signature,
           list_concat(coalesce(min(id, $heads) FILTER (WHERE known), []),
                       coalesce(min(id, $heads) FILTER (WHERE NOT known), [])) AS heads
    FROM sim_bands GROUP BY ALL HAVING count(*) > 1
),
linked AS (
    SELECT x.id, unnest(h.heads) AS other FROM sim_bands x JOIN heads h USING (block, band, signature)
    WHERE NOT x.known
)
SELECT DISTINCT least(id, other), greatest(id, other) FROM linked WHERE id <> other;

-- Exact Jaccard of the word sets (hashed), for candidates whose sizes allow the threshold at all.
CREATE OR REPLACE TEMP TABLE sim_pairs AS
SELECT a, b, shared / (nx + ny - shared) AS j FROM (
    SELECT c.a, c.b, x.n AS nx, y.n AS ny,
           list_sum(list_transform(x.words, lambda w: list_contains(y.words, w)::INTEGER)) AS shared
    FROM sim_candidates c JOIN sim_words x ON x.id = c.a JOIN sim_words y ON y.id = c.b
    WHERE x.n > 0 AND least(x.n, y.n) >= $threshold * greatest(x.n, y.n)
) WHERE j >= $threshold;

DROP TABLE sim_words; DROP TABLE sim_bands; DROP TABLE sim_candidates;
