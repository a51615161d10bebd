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
import polars as pl

from lessonweaver.crashpoints import reached
from lessonweaver.detectors import SEVERITIES, Detector

EXAMPLES = 5  # example trace ids kept per lesson
STATUSES = ("new", "regressed", "recurring", "resolved")  # the lifecycle, in the order reports show it
MINHASHES, BAND_ROWS = 32, 2  # MinHash signature length and rows per LSH band: candidate pairs only
# Severity weight in the priority score: a critical problem outranks many low ones.
SEVERITY_WEIGHT = {"info": 0.5, "low": 1, "medium": 2, "high": 3, "critical": 5}
RECENCY_HALF_LIFE = 7.0  # nights after which a lesson's priority halves if it is not seen again


def register_detectors(con: duckdb.DuckDBPyConnection, detectors: list[Detector]) -> None:
    con.execute("DELETE FROM detectors")
    con.executemany(
        "INSERT INTO detectors VALUES (?, ?, ?, ?, ?)",
        [(d.id, d.title, d.severity, d.description, str(d.sql.path)) for d in detectors],
    )


def similar_pairs(con: duckdb.DuckDBPyConnection, texts: str, threshold: float) -> list[tuple[str, str, float]]:
    """Pairs of ids from the relation `texts` (id, block, text) whose word sets have a Jaccard similarity
    of at least `threshold`, within one block, each pair once (a < b).

    Candidates come from MinHash locality-sensitive hashing (32 hashes in bands of 2), so the work
    grows with the number of texts, not its square; each candidate is then checked exactly."""
    return con.execute(
        f"""
        WITH words AS (
            SELECT id, any_value(block) AS block,
                   list_distinct(list_filter(string_split(any_value(text), ' '), lambda w: w <> '')) AS words
            FROM {texts} GROUP BY id
        ),
        tokens AS (SELECT id, block, unnest(words) AS word FROM words WHERE len(words) > 0),
        minhash AS (
            SELECT id, any_value(block) AS block, k, min(hash(word, k)) AS h
            FROM tokens, range({MINHASHES}) r(k) GROUP BY id, k
        ),
        band AS (
            SELECT id, any_value(block) AS block, k // {BAND_ROWS} AS band,
                   hash(string_agg(h::VARCHAR, ',' ORDER BY k)) AS signature
            FROM minhash GROUP BY id, k // {BAND_ROWS}
        ),
        candidates AS (
            SELECT DISTINCT a.id AS a, b.id AS b
            FROM band a JOIN band b ON a.block = b.block AND a.band = b.band AND a.signature = b.signature
            WHERE a.id < b.id
        )
        SELECT c.a, c.b,
               len(list_intersect(x.words, y.words)) / len(list_distinct(list_concat(x.words, y.words))) AS j
        FROM candidates c JOIN words x ON x.id = c.a JOIN words y ON y.id = c.b
        WHERE j >= ?
        ORDER BY c.a, c.b
        """,
        [threshold],
    ).fetchall()


def merge_variants(con: duckdb.DuckDBPyConnection, threshold: float) -> int:
    """Give every variant without a lesson one: the lesson of the most similar known variant, else a new
    lesson shared by the new variants alike (the earliest seen names it). Returns variants placed."""
    # Databases from before variants existed: each detection's lesson id was its variant id.
    con.execute("UPDATE detections SET variant_id = lesson_id WHERE variant_id IS NULL AND lesson_id IS NOT NULL")
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE variant_texts AS
        SELECT d.variant_id AS id,
               concat_ws('|', d.detector, coalesce(t.source, ''), coalesce(t.tenant, ''), lw_normalise(t.task)) AS block,
               lw_normalise(arg_min(d.evidence, (d.detected_at, d.trace_id))) AS text,
               min(d.detected_at) AS first_seen,
               v.lesson_id
        FROM detections d JOIN traces t USING (trace_id)
        LEFT JOIN lesson_variants v ON v.variant_id = d.variant_id
        WHERE d.variant_id IS NOT NULL
        GROUP BY d.variant_id, d.detector, t.source, t.tenant, t.task, v.lesson_id
        """
    )
    # Only blocks with a new variant need comparing.
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE variant_candidates AS
        SELECT * FROM variant_texts
        WHERE block IN (SELECT block FROM variant_texts WHERE lesson_id IS NULL)
        """
    )
    fresh = {row[0]: row[1] for row in con.execute(
        "SELECT id, first_seen FROM variant_candidates WHERE lesson_id IS NULL ORDER BY first_seen, id").fetchall()}
    if not fresh:
        return 0
    known = dict(con.execute("SELECT id, lesson_id FROM variant_candidates WHERE lesson_id IS NOT NULL").fetchall())
    pairs = similar_pairs(con, "variant_candidates", threshold)

    # A new variant joins the known lesson it is most similar to.
    placed: dict[str, tuple[str, float]] = {}
    for a, b, j in sorted(pairs, key=lambda p: -p[2]):
        for new, old in ((a, b), (b, a)):
            if new in fresh and old in known and new not in placed:
                placed[new] = (known[old], j)
    # The rest group among themselves (union-find over the similar pairs); the earliest names the lesson.
    parent = {v: v for v in fresh if v not in placed}

    def root(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    best: dict[str, float] = {}
    for a, b, j in pairs:
        if a in parent and b in parent:
            ra, rb = root(a), root(b)
            if ra != rb:
                first, second = sorted((ra, rb), key=lambda v: (fresh[v], v))
                parent[second] = first
            best[a], best[b] = max(best.get(a, 0), j), max(best.get(b, 0), j)
    for v in parent:
        placed[v] = (root(v), 1.0 if root(v) == v else best[v])
    frame = pl.DataFrame([(v, lesson, round(j, 4)) for v, (lesson, j) in sorted(placed.items())],
                         schema={"variant_id": pl.Utf8, "lesson_id": pl.Utf8, "similarity": pl.Float64}, orient="row")
    con.register("placed_variants", frame)
    con.execute("INSERT INTO lesson_variants SELECT *, now()::TIMESTAMP FROM placed_variants")
    con.unregister("placed_variants")
    con.execute(
        """
        UPDATE detections SET lesson_id = v.lesson_id FROM lesson_variants v
        WHERE detections.variant_id = v.variant_id AND detections.lesson_id IS DISTINCT FROM v.lesson_id
        """
    )
    con.execute("DROP TABLE variant_texts; DROP TABLE variant_candidates")
    return len(placed)


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
                           || coalesce(arg_min(d.task, (d.detected_at, d.trace_id, d.seq)), '(no task)') AS title,
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
