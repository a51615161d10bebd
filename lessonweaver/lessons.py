"""Weave: group detections into lessons, merge near-duplicate wordings, and track each lesson over nights.

A lesson is a cause (docs/lessons.md). A variant is one exact cause: a detector family and a signature
(what went wrong with what varies masked: the tool and its error, the words of a correction), whatever
the task, source or tenant; its id is a hash of the two. Variants worded alike (token-set Jaccard
similarity of their normalised signatures at or above the merge threshold, within one family) are one
lesson. Which lesson a variant belongs to is kept in `lesson_variants`, so a lesson keeps its id from
night to night. A cause seen once, in one trace, with no person involved and little cost is below the
noise floor: its findings stay in `detections`, and it is no lesson.

Every run records what it saw in `sightings`; the lifecycle comes from there, as of the newest night
recorded (a run for an earlier night adds to the history without turning today's lessons back):
- new: first seen tonight;
- recurring: seen tonight, and on an earlier night, and not resolved in between;
- regressed: seen tonight after having been resolved;
- open: not seen tonight, but seen within the last `resolve_after` nights;
- resolved: not seen for `resolve_after` nights.

Lessons are rebuilt from all detections on every run; that is cheap next to staging (detections are
few next to events), and it keeps them exact. Reviews (`reviews`) survive every rebuild. A lesson's
priority is what it cost: its severity, category and confidence, the traces, occurrences, wasted calls,
projects and nights it was seen in, more when people had to correct it, less as it ages (sql/weave/lessons.sql).
"""

import datetime as dt

import duckdb

from lessonweaver.crashpoints import reached
from lessonweaver.detectors import SEVERITIES, Detector
from lessonweaver.queries import execute

STATUSES = ("new", "regressed", "recurring", "open", "resolved")  # the lifecycle, in the order reports show it
# The grain of lessons: 2, one lesson per cause (a detector family and a signature, across tasks, sessions
# and tenants). A database woven at an earlier grain (1: per detector, source, task and tenant) moves to it
# by detecting its stored traces again (redetect, or the next run: pipeline.load_and_weave).
GRAIN = 2
MINHASHES, BAND_ROWS = 32, 2  # MinHash signature length and rows per LSH band: candidate pairs only
SMALL_BLOCK = 16  # blocks of at most this many variants compare every pair; larger ones go through MinHash
TITLE_CHARS, TITLE_WORDS = 80, 3  # titles are short, and lessons alike are told apart by a few words
BUCKET_HEADS = 3  # in a MinHash bucket, each new variant is compared with this many known and new ones


def register_detectors(con: duckdb.DuckDBPyConnection, detectors: list[Detector]) -> None:
    con.execute("DELETE FROM detectors")
    con.executemany(
        "INSERT INTO detectors (detector, title, severity, description, path, category, confidence, family, floor) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(d.id, d.title, d.severity, d.description, str(d.sql.path), d.category, d.confidence, d.family or d.id,
          d.floor) for d in detectors],
    )


def find_similar(con: duckdb.DuckDBPyConnection, threshold: float) -> None:
    """Leave the temp table `sim_pairs (a, b, j)`: pairs of ids from the relation `sim_texts` (id, block,
    text, known) whose word sets have a Jaccard similarity `j` of at least `threshold`, within one block,
    each pair once (a < b). Known texts (already placed) are only compared with unknown ones.

    In a block of a few texts every pair with an unknown text is a candidate. In larger blocks candidates
    come from MinHash locality-sensitive hashing (32 hashes in bands of 2): texts that share a band's
    signature form a bucket, and each unknown text in it is paired with the bucket's first few known and
    unknown texts, not with every member, so near-identical texts by the thousand in one block cost a
    few pairs each, not a pair for every two of them. Every candidate is checked exactly. All of it is
    set-at-a-time, so memory stays within DuckDB's limit (spilling past it), whatever the number of texts."""
    execute(con, "weave/similar.sql", threshold=threshold, small_block=SMALL_BLOCK, minhashes=MINHASHES,
            band_rows=BAND_ROWS, bands=MINHASHES // BAND_ROWS, heads=BUCKET_HEADS)


def similar_pairs(con: duckdb.DuckDBPyConnection, texts: str, threshold: float) -> list[tuple[str, str, float]]:
    """The pairs find_similar finds among the table `texts` (id, block, text), none of them known, sorted."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW sim_texts AS SELECT id, block, text, false AS known FROM {texts}")
    find_similar(con, threshold)
    pairs = con.execute("SELECT a, b, j FROM sim_pairs ORDER BY a, b").fetchall()
    con.execute("DROP TABLE sim_pairs; DROP VIEW sim_texts")
    return pairs


def merge_variants(con: duckdb.DuckDBPyConnection, threshold: float) -> int:
    """Give every variant without a lesson one: the lesson of the most similar known variant, else a new
    lesson shared by the new variants alike (the earliest seen names it). Returns variants placed.

    Set-at-a-time throughout: blocks with a single variant (most, when tasks, tenants and sources are
    many) are placed without comparing anything, and the new variants alike are grouped by propagating
    the earliest label along similar pairs, a few rounds of one query each."""
    placed = execute(con, "weave/variants.sql").fetchone()[0]
    if not placed:
        con.execute("DROP TABLE variant_texts; DROP TABLE fresh")
        return 0
    execute(con, "weave/candidates.sql")
    find_similar(con, threshold)
    execute(con, "weave/place.sql")
    _spread_labels(con)
    execute(con, "weave/save_variants.sql")
    return placed


def _spread_labels(con: duckdb.DuckDBPyConnection) -> None:
    """Rounds of weave/spread_labels.sql until no label changes: each group of new variants alike then
    carries the label of its earliest."""
    while execute(con, "weave/spread_labels.sql").fetchone()[0]:
        pass
    con.execute("DROP TABLE changed")


def record_sightings(con: duckdb.DuckDBPyConnection, night: dt.date) -> None:
    """Record, per run, which lessons its detections fell into (sql/weave/sightings.sql)."""
    execute(con, "weave/sightings.sql", night=night)


def grain(con: duckdb.DuckDBPyConnection) -> int:
    """The grain the database's lessons were woven at: GRAIN for one woven now or holding no finding yet."""
    value = con.execute("SELECT max(value) FROM settings WHERE key = 'lesson_grain'").fetchall()[0][0]
    if value is not None:
        return int(value)
    return 1 if con.execute("SELECT count(*) FROM detections").fetchall()[0][0] else GRAIN


def newest_night(con: duckdb.DuckDBPyConnection) -> dt.date | None:
    """The newest night any run counted for: lesson statuses are as of that night."""
    return con.execute("SELECT greatest((SELECT max(night) FROM runs), (SELECT max(night) FROM sightings))").fetchall()[0][0]


def as_of(con: duckdb.DuckDBPyConnection, night: dt.date | None) -> dt.date:
    """The night lesson statuses are as of for a run of `night`: it, or a newer night an earlier run
    counted for (a run for a past night turns nothing back to new); today when there is neither."""
    known = [n for n in (night, newest_night(con)) if n is not None]
    return max(known) if known else dt.datetime.now(dt.timezone.utc).date()


def weave(con: duckdb.DuckDBPyConnection, run_id: str, night: dt.date, resolve_after: int = 7,
          merge_threshold: float = 0.6, resight: tuple[str, ...] | list[str] = ()) -> tuple[int, int, int]:
    """Merge new variants, record this run's sightings and rebuild `lessons` as of the newest night seen,
    in one transaction. `resight`: detectors whose detections were replaced (redetect), whose sightings
    are counted again.
    Returns (lessons new in this run and not rejected, lessons in all, findings below the noise floor)."""
    con.execute("BEGIN TRANSACTION")
    try:
        merge_variants(con, merge_threshold)
        if resight:
            execute(con, "weave/resight.sql", detectors=list(resight))
        record_sightings(con, night)
        new, total, below = execute(con, "weave/lessons.sql", night=as_of(con, night), resolve_after=resolve_after,
                                    severities=list(SEVERITIES), title_chars=TITLE_CHARS).fetchone()
        execute(con, "weave/titles.sql", title_chars=TITLE_CHARS, words=TITLE_WORDS)
        con.execute("DROP TABLE previous_lessons; DROP TABLE woven; DROP TABLE causes")
        con.execute("DELETE FROM settings WHERE key = 'lesson_grain'")
        con.execute("INSERT INTO settings VALUES ('lesson_grain', ?)", [str(GRAIN)])
        reached("weave")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return new, total, below


def reweave(con: duckdb.DuckDBPyConnection, resolve_after: int = 7, merge_threshold: float = 0.6,
            resight: tuple[str, ...] | list[str] = ()) -> tuple[int, int, int]:
    """Weave outside a run (forget, redetect): as of the latest run's night, and with its `resolve_after`
    (store.resolve_after), so each lesson keeps the status that run gave it unless what it is made of changed."""
    rows = con.execute("SELECT run_id, coalesce(night, started_at::DATE) FROM runs "
                       "ORDER BY started_at DESC LIMIT 1").fetchall()
    run_id, night = rows[0] if rows else ("", dt.datetime.now(dt.timezone.utc).date())
    return weave(con, run_id, night, resolve_after, merge_threshold, resight)
