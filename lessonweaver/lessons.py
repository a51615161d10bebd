"""Weave: group detections into lessons, merge near-duplicate wordings, and track each lesson over nights.

A variant is one exact problem: the detector, the trace's source and task, and the evidence normalised
(case, punctuation, numbers and ids folded, see lw_normalise); its id is a hash of that key. Variants
worded alike (token-set Jaccard similarity of their normalised evidence at or above the merge threshold, for the
same detector, source, tenant and normalised task) are one lesson. Which lesson a variant belongs to
is kept in `lesson_variants`, so a lesson keeps its id from night to night.

Every run records what it saw in `sightings`; the lifecycle comes from there:
- new: first seen tonight;
- recurring: seen on an earlier night and not resolved (whether or not it was seen tonight);
- resolved: not seen for `resolve_after` nights;
- regressed: seen tonight after having been resolved.

Lessons are rebuilt from all detections on every run; that is cheap next to staging (detections are
few next to events), and it keeps them exact. Reviews (`reviews`) survive every rebuild.
"""

import datetime as dt

import duckdb

from lessonweaver.crashpoints import reached
from lessonweaver.detectors import SEVERITIES, Detector

EXAMPLES = 5  # example trace ids kept per lesson
STATUSES = ("new", "regressed", "recurring", "resolved")  # the lifecycle, in the order reports show it
MINHASHES, BAND_ROWS = 32, 2  # MinHash signature length and rows per LSH band: candidate pairs only
SMALL_BLOCK = 16  # blocks of at most this many variants compare every pair; larger ones go through MinHash
BUCKET_HEADS = 3  # in a MinHash bucket, each new variant is compared with this many known and new ones
# Severity weight in the priority score: a critical problem outranks many low ones.
SEVERITY_WEIGHT = {"info": 0.5, "low": 1, "medium": 2, "high": 3, "critical": 5}
RECENCY_HALF_LIFE = 7.0  # nights after which a lesson's priority halves if it is not seen again
# An agent's or a policy's mistake is a lesson for the agent; an environment problem (an expired key, a
# provider outage) is one for operators, ranked below; an inferred finding below one read from a record.
CATEGORY_WEIGHT = {"agent": 1.0, "policy": 1.0, "producer_flag": 0.9, "environment": 0.5}
CONFIDENCE_WEIGHT = {"certain": 1.0, "likely": 0.6}


def register_detectors(con: duckdb.DuckDBPyConnection, detectors: list[Detector]) -> None:
    con.execute("DELETE FROM detectors")
    con.executemany(
        "INSERT INTO detectors (detector, title, severity, description, path, category, confidence) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(d.id, d.title, d.severity, d.description, str(d.sql.path), d.category, d.confidence) for d in detectors],
    )


def find_similar(con: duckdb.DuckDBPyConnection, texts: str, threshold: float) -> None:
    """Leave the temp table `sim_pairs (a, b, j)`: pairs of ids from the relation `texts` (id, block, text,
    known) whose word sets have a Jaccard similarity `j` of at least `threshold`, within one block, each
    pair once (a < b). Known texts (already placed) are only compared with unknown ones.

    In a block of a few texts every pair with an unknown text is a candidate. In larger blocks candidates
    come from MinHash locality-sensitive hashing (32 hashes in bands of 2): texts that share a band's
    signature form a bucket, and each unknown text in it is paired with the bucket's first few known and
    unknown texts, not with every member, so near-identical texts by the thousand in one block cost a
    few pairs each, not a pair for every two of them. Every candidate is checked exactly. All of it is set-at-a-time, so memory stays within DuckDB's limit (spilling past it),
    whatever the number of texts."""
    bands = MINHASHES // BAND_ROWS
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE sim_words AS
        SELECT id, block, known, block_size, words, len(words) AS n FROM (
            SELECT id, block, coalesce(known, false) AS known, count(*) OVER (PARTITION BY block) AS block_size,
                   list_transform(list_distinct(list_filter(string_split(text, ' '), lambda w: w <> '')),
                                  lambda w: hash(w)) AS words
            FROM {texts});

        -- Small blocks: every pair with an unknown text is a candidate (a few per text).
        CREATE OR REPLACE TEMP TABLE sim_candidates AS
        SELECT x.id AS a, y.id AS b FROM sim_words x JOIN sim_words y USING (block)
        WHERE x.block_size <= {SMALL_BLOCK} AND x.id < y.id AND NOT (x.known AND y.known);

        -- Large blocks: MinHash buckets.
        CREATE OR REPLACE TEMP TABLE sim_bands AS
        SELECT id, block, known, band, hash(sig[band * {BAND_ROWS} + 1 : band * {BAND_ROWS} + {BAND_ROWS}]) AS signature
        FROM (SELECT id, block, known,
                     list_transform(range({MINHASHES}), lambda k: list_min(list_transform(words, lambda w: hash(w, k)))) AS sig
              FROM sim_words WHERE block_size > {SMALL_BLOCK} AND n > 0), range({bands}) b(band);

        INSERT INTO sim_candidates
        WITH heads AS (
            SELECT block, band, signature,
                   list_concat(coalesce(min(id, {BUCKET_HEADS}) FILTER (WHERE known), []),
                               coalesce(min(id, {BUCKET_HEADS}) FILTER (WHERE NOT known), [])) AS heads
            FROM sim_bands GROUP BY ALL HAVING count(*) > 1
        ),
        linked AS (
            SELECT x.id, unnest(h.heads) AS other FROM sim_bands x JOIN heads h USING (block, band, signature)
            WHERE NOT x.known
        )
        SELECT DISTINCT least(id, other), greatest(id, other) FROM linked WHERE id <> other;

        """
    )
    # Exact Jaccard of the word sets (hashed), for candidates whose sizes allow the threshold at all.
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE sim_pairs AS
        SELECT a, b, shared / (nx + ny - shared) AS j FROM (
            SELECT c.a, c.b, x.n AS nx, y.n AS ny,
                   list_sum(list_transform(x.words, lambda w: list_contains(y.words, w)::INTEGER)) AS shared
            FROM sim_candidates c JOIN sim_words x ON x.id = c.a JOIN sim_words y ON y.id = c.b
            WHERE x.n > 0 AND least(x.n, y.n) >= $threshold * greatest(x.n, y.n)
        ) WHERE j >= $threshold
        """, {"threshold": threshold})
    con.execute("DROP TABLE sim_words; DROP TABLE sim_bands; DROP TABLE sim_candidates")


def similar_pairs(con: duckdb.DuckDBPyConnection, texts: str, threshold: float) -> list[tuple[str, str, float]]:
    """The pairs find_similar finds among `texts` (id, block, text), none of them known, sorted."""
    find_similar(con, f"(SELECT id, block, text, false AS known FROM {texts})", threshold)
    pairs = con.execute("SELECT a, b, j FROM sim_pairs ORDER BY a, b").fetchall()
    con.execute("DROP TABLE sim_pairs")
    return pairs


def merge_variants(con: duckdb.DuckDBPyConnection, threshold: float) -> int:
    """Give every variant without a lesson one: the lesson of the most similar known variant, else a new
    lesson shared by the new variants alike (the earliest seen names it). Returns variants placed.

    Set-at-a-time throughout: blocks with a single variant (most, when tasks, tenants and sources are
    many) are placed without comparing anything, and the new variants alike are grouped by propagating
    the earliest label along similar pairs, a few rounds of one query each."""
    # Databases from before variants existed: each detection's lesson id was its variant id.
    con.execute("UPDATE detections SET variant_id = lesson_id WHERE variant_id IS NULL AND lesson_id IS NOT NULL")
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE variant_texts AS
        SELECT d.variant_id AS id,
               -- a detection with a lesson key is grouped by it, not by source and task
               any_value(CASE WHEN d.lesson_key IS NOT NULL
                              THEN concat_ws('|', d.detector, coalesce(t.tenant, ''), 'key:' || d.lesson_key)
                              ELSE concat_ws('|', d.detector, coalesce(t.source, ''), coalesce(t.tenant, ''),
                                             lw_normalise(t.task)) END) AS block,
               lw_normalise(arg_min(d.evidence, (d.detected_at, d.trace_id))) AS text,
               min(d.detected_at) AS first_seen,
               any_value(v.lesson_id) AS lesson_id
        FROM detections d JOIN traces t USING (trace_id)
        LEFT JOIN lesson_variants v ON v.variant_id = d.variant_id
        WHERE d.variant_id IS NOT NULL
        GROUP BY d.variant_id;

        CREATE OR REPLACE TEMP TABLE fresh AS
        SELECT id, first_seen FROM variant_texts WHERE lesson_id IS NULL;
        """
    )
    placed = con.execute("SELECT count(*) FROM fresh").fetchone()[0]
    if not placed:
        con.execute("DROP TABLE variant_texts; DROP TABLE fresh")
        return 0
    # Only blocks with a new variant and another one need comparing.
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE variant_candidates AS
        SELECT id, block, text, lesson_id IS NOT NULL AS known FROM variant_texts
        WHERE block IN (SELECT block FROM variant_texts GROUP BY block
                        HAVING count(*) > 1 AND count(*) FILTER (WHERE lesson_id IS NULL) > 0)
        """
    )
    find_similar(con, "variant_candidates", threshold)
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE similar_edges AS
        SELECT a AS x, b AS y, j FROM sim_pairs UNION ALL SELECT b, a, j FROM sim_pairs;

        -- A new variant joins the known lesson it is most similar to.
        CREATE OR REPLACE TEMP TABLE placed_variants AS
        SELECT e.x AS variant_id, arg_min(v.lesson_id, (-e.j, e.y)) AS lesson_id, max(e.j) AS similarity
        FROM similar_edges e SEMI JOIN fresh f ON f.id = e.x JOIN variant_texts v ON v.id = e.y AND v.lesson_id IS NOT NULL
        GROUP BY e.x;

        -- The rest group among themselves: each takes the earliest label along similar pairs.
        CREATE OR REPLACE TEMP TABLE fresh_edges AS
        SELECT e.x, e.y, e.j FROM similar_edges e
        SEMI JOIN fresh a ON a.id = e.x SEMI JOIN fresh b ON b.id = e.y
        WHERE e.x NOT IN (SELECT variant_id FROM placed_variants) AND e.y NOT IN (SELECT variant_id FROM placed_variants);

        CREATE OR REPLACE TEMP TABLE labels AS
        SELECT id, {'first_seen': first_seen, 'id': id} AS label FROM fresh
        WHERE id NOT IN (SELECT variant_id FROM placed_variants);
        """
    )
    while True:
        con.execute(
            """
            CREATE OR REPLACE TEMP TABLE next_labels AS
            SELECT l.id, least(l.label, min(n.label)) AS label
            FROM labels l LEFT JOIN fresh_edges e ON e.x = l.id LEFT JOIN labels n ON n.id = e.y
            GROUP BY l.id, l.label
            """
        )
        changed = con.execute("SELECT count(*) FROM next_labels JOIN labels USING (id) "
                              "WHERE next_labels.label <> labels.label").fetchone()[0]
        con.execute("DROP TABLE labels; ALTER TABLE next_labels RENAME TO labels")
        if not changed:
            break
    con.execute(
        """
        INSERT INTO lesson_variants
        SELECT variant_id, lesson_id, round(similarity, 4), now()::TIMESTAMP FROM placed_variants
        UNION ALL
        SELECT l.id, l.label.id,
               CASE WHEN l.label.id = l.id THEN 1.0 ELSE round(max(e.j), 4) END, now()::TIMESTAMP
        FROM labels l LEFT JOIN fresh_edges e ON e.x = l.id
        GROUP BY l.id, l.label;

        UPDATE detections SET lesson_id = v.lesson_id FROM lesson_variants v
        WHERE detections.variant_id = v.variant_id AND detections.lesson_id IS DISTINCT FROM v.lesson_id;

        DROP TABLE variant_texts; DROP TABLE fresh; DROP TABLE variant_candidates; DROP TABLE sim_pairs;
        DROP TABLE similar_edges; DROP TABLE placed_variants; DROP TABLE fresh_edges; DROP TABLE labels;
        """
    )
    return placed


def record_sightings(con: duckdb.DuckDBPyConnection, night: dt.date) -> None:
    """Record, per run, which lessons its detections fell into. Detections of a run that died before its
    weave are recorded by the next run, under the night of that earlier run when it is known."""
    con.execute(
        """
        INSERT INTO sightings
        SELECT d.run_id, coalesce(any_value(r.night), any_value(r.started_at)::DATE, ?::DATE),
               d.detector, d.lesson_id, count(*), count(DISTINCT d.trace_id)
        FROM detections d LEFT JOIN runs r USING (run_id)
        WHERE d.run_id NOT IN (SELECT run_id FROM sightings)
        GROUP BY d.run_id, d.detector, d.lesson_id
        """,
        [night],
    )


def weave(con: duckdb.DuckDBPyConnection, run_id: str, night: dt.date, resolve_after: int = 7,
          merge_threshold: float = 0.6) -> tuple[int, int]:
    """Merge new variants, record this run's sightings and rebuild `lessons`, in one transaction.
    Returns (lessons new in this run and not rejected, lessons in all)."""
    rank = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(SEVERITIES))
    weight = " ".join(f"WHEN '{s}' THEN {w}" for s, w in SEVERITY_WEIGHT.items())
    category = " ".join(f"WHEN '{c}' THEN {w}" for c, w in CATEGORY_WEIGHT.items())
    confidence = " ".join(f"WHEN '{c}' THEN {w}" for c, w in CONFIDENCE_WEIGHT.items())
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE previous_lessons AS SELECT lesson_id FROM lessons")
        merge_variants(con, merge_threshold)
        record_sightings(con, night)
        con.execute("DELETE FROM lessons")
        con.execute(
            f"""
            INSERT INTO lessons BY NAME
            WITH d AS (
                SELECT d.*, t.source, t.task, t.tenant, CASE d.severity {rank} ELSE 2 END AS sev_rank
                FROM detections d JOIN traces t USING (trace_id)
                WHERE d.lesson_id IS NOT NULL
            ),
            grouped AS (
                SELECT d.lesson_id,
                       any_value(d.detector) AS detector,
                       arg_max(d.severity, d.sev_rank) AS severity,
                       any_value(d.source) AS source,
                       arg_min(d.task, (d.detected_at, d.trace_id, d.seq)) AS task,
                       any_value(d.tenant) AS tenant,
                       coalesce(any_value(k.title), any_value(d.detector)) || ': '
                           || coalesce(any_value(d.lesson_key), arg_min(d.task, (d.detected_at, d.trace_id, d.seq)),
                                       '(no task)') AS title,
                       mode(coalesce(d.category, k.category, 'agent')) AS category,
                       CASE WHEN bool_or(coalesce(d.confidence, 'certain') = 'certain') THEN 'certain'
                            ELSE 'likely' END AS confidence,
                       arg_min(coalesce(d.problem, d.evidence), (d.detected_at, d.trace_id, d.seq)) AS problem,
                       arg_min(d.lesson, (d.detected_at, d.trace_id, d.seq)) AS proposed_lesson,
                       arg_min(d.evidence, (d.detected_at, d.trace_id, d.seq)) AS evidence,
                       list_sort(list_distinct(list(d.trace_id)))[1:{EXAMPLES}] AS example_trace_ids,
                       count(*) AS occurrences,
                       count(DISTINCT d.trace_id) AS trace_count,
                       count(DISTINCT d.variant_id) AS variants,
                       min(d.detected_at) AS first_seen,
                       max(d.detected_at) AS last_seen
                FROM d LEFT JOIN detectors k ON k.detector = d.detector
                GROUP BY d.lesson_id
            ),
            nights AS (
                SELECT lesson_id, min(night) AS first_night, max(night) AS last_night,
                       count(DISTINCT night) AS nights_seen,
                       max(night) FILTER (WHERE night < $night) AS previous_night
                FROM sightings WHERE lesson_id IS NOT NULL AND night <= $night
                GROUP BY lesson_id
            ),
            lifecycle AS (
                SELECT g.*, n.first_night, n.last_night, n.nights_seen,
                       CASE
                         WHEN n.last_night = $night AND n.first_night = $night THEN 'new'
                         WHEN n.last_night = $night AND $night - n.previous_night - 1 >= $resolve_after THEN 'regressed'
                         WHEN n.last_night < $night AND $night - n.last_night >= $resolve_after THEN 'resolved'
                         ELSE 'recurring'
                       END AS status,
                       coalesce(r.decision, 'pending') AS review,
                       coalesce(r.text, g.proposed_lesson) AS lesson,
                       $night - coalesce(n.last_night, $night) AS nights_since
                FROM grouped g LEFT JOIN nights n USING (lesson_id) LEFT JOIN reviews r USING (lesson_id)
            )
            SELECT * EXCLUDE (nights_since),
                   round((CASE severity {weight} ELSE 1 END)
                         * (CASE category {category} ELSE 1 END) * (CASE confidence {confidence} ELSE 1 END)
                         * (ln(1 + occurrences) + ln(1 + trace_count))
                         * pow(0.5, nights_since / {RECENCY_HALF_LIFE}), 3) AS priority
            FROM lifecycle
            """,
            {"night": night, "resolve_after": resolve_after},
        )
        new, total = con.execute(
            """
            SELECT count(*) FILTER (WHERE status = 'new' AND review <> 'rejected'
                                     AND lesson_id NOT IN (SELECT lesson_id FROM previous_lessons)),
                   count(*)
            FROM lessons
            """
        ).fetchone()
        con.execute("DROP TABLE previous_lessons")
        reached("weave")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return new, total
