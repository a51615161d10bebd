-- Weave, after lessons.sql: tell apart lessons whose titles came out the same (the same detector and
-- task, different evidence: each git commit an agent made unasked, each route of a gate). Each gets, in
-- brackets, the first few words of its evidence that the others with its title do not all share (the
-- ones fewest of them have, in the order they appear); lessons still alike after that get their
-- source when it is theirs alone, else their rank. The title keeps to about $title_chars characters:
-- the words are cut to under half of that.
-- Parameters: $title_chars (INTEGER): how long a title may be; $words (INTEGER): words to name.
CREATE OR REPLACE TEMP TABLE same_title AS
SELECT lesson_id, title, source, evidence, priority, count(*) OVER (PARTITION BY title) AS alike
FROM lessons QUALIFY alike > 1;

CREATE OR REPLACE TEMP TABLE title_words AS
WITH words AS (
    -- a word once per lesson, whatever its case or the punctuation after it ("Deploy", "deploy:")
    SELECT lesson_id, title, alike, lower(w) AS word_key, arg_min(w, pos) AS word, min(pos) AS pos
    FROM (SELECT lesson_id, title, alike, left(rtrim(unnest(found), './:@-'), 24) AS w,
                 generate_subscripts(found, 1) AS pos
          FROM (SELECT lesson_id, title, alike,
                       regexp_extract_all(regexp_replace(coalesce(evidence, ''), '\\[nrt"]', ' ', 'g'),
                                          '[A-Za-z0-9][A-Za-z0-9_./:@-]{2,}') AS found
                FROM same_title))
    GROUP BY lesson_id, title, alike, lower(w)
),
rare AS (
    SELECT *, count(*) OVER (PARTITION BY title, word_key) AS holders FROM words  -- lessons that have it
)
SELECT lesson_id, string_agg(word, ' ' ORDER BY pos) AS named
FROM (SELECT * FROM rare WHERE holders < alike
      QUALIFY row_number() OVER (PARTITION BY lesson_id ORDER BY holders, pos) <= $words)
GROUP BY lesson_id;

UPDATE lessons SET title = lw_clip(s.title, greatest(24, $title_chars - 3 - length(s.suffix))) || ' (' || s.suffix || ')'
FROM (SELECT lesson_id, title,
             -- no word of its own, or the same words as another: its source when that is its alone, else its rank
             concat_ws(', ', lw_clip(named, $title_chars // 2 - 8), CASE WHEN named IS NULL OR count(*) OVER (PARTITION BY title, named) > 1 THEN
                 CASE WHEN source IS NOT NULL AND count(*) OVER (PARTITION BY title, named, source) = 1 THEN source
                      ELSE '#' || row_number() OVER (PARTITION BY title, named ORDER BY priority DESC, lesson_id) END
             END) AS suffix
      FROM same_title LEFT JOIN title_words USING (lesson_id)) s
WHERE lessons.lesson_id = s.lesson_id;

DROP TABLE same_title;
DROP TABLE title_words;
