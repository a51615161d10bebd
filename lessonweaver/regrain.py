"""Detect the stored traces again and put the new findings in place of the old ones: what `lessonweaver
redetect` does for the detectors it is given, and what a run does once for every detector when a database
moves to a new grain of lessons (lessons.GRAIN), review decisions following their findings.

The detectors run over the stored traces and events into a temporary table; their findings pass the same
scan a batch's do before anything is stored (a detector may decode what was stored encoded): a finding
that looks sensitive is held back. Then, in one transaction, they replace the stored detections of those
detectors (sql/redetect/replace.sql), and their fingerprints are brought up to date
(lessonweaver.versions).
"""

from dataclasses import dataclass, field

import duckdb

from lessonweaver import detectors, lessons, privacy, store, versions
from lessonweaver.queries import execute
from lessonweaver.summary import RunSummary
from lessonweaver.words import plural


@dataclass
class Redetected:
    """What a redetect did."""
    detectors: list[str] = field(default_factory=list)  # run again, successfully
    failed: dict[str, str] = field(default_factory=dict)  # detector id -> why it kept its detections
    traces: int = 0  # traces the detectors ran over
    before: dict[str, int] = field(default_factory=dict)  # stored detections per detector run, before
    after: dict[str, int] = field(default_factory=dict)  # and after
    total: tuple[int, int] = (0, 0)  # stored detections of every detector, before and after
    kept: int = 0  # detections kept: their traces' events are no longer stored
    held: int = 0  # new detections held back: their text looks sensitive
    lessons_before: set[str] = field(default_factory=set)
    lessons_after: set[str] = field(default_factory=set)
    run: RunSummary | None = None  # the run whose reports were rendered again
    regrained: bool = False  # the lessons moved to the new grain (lessons.GRAIN)
    moved: list[tuple[str, str, str | None]] = field(default_factory=list)  # (old lesson, new lesson or None, why not)


def replace(con: duckdb.DuckDBPyConnection, found: list[detectors.Detector],
             picked: list[detectors.Detector]) -> Redetected:
    """Run `picked` over the stored traces and replace their detections; record their fingerprints."""
    lessons.register_detectors(con, found)
    done = Redetected(traces=con.execute("SELECT count(*) FROM traces").fetchall()[0][0],
                      lessons_before=lesson_ids(con))
    versions.stale(con, found, done.traces > 0)  # a database from before fingerprints adopts them first
    done.before = _counts(con, [d.id for d in picked])
    stored_before = _total(con)
    done.failed = detectors.detect(con, picked, into="redetected", temporary=True)
    done.detectors = [d.id for d in picked if d.id not in done.failed]
    done.held = _hold_back(con)
    # the turns read again, under a name that does not hide the stored table
    con.execute("ALTER TABLE temp.main.turns RENAME TO redetected_turns")
    con.execute("BEGIN TRANSACTION")
    try:
        done.kept = execute(con, "redetect/replace.sql", detectors=done.detectors).fetchall()[0][0]
        versions.record(con, [d for d in picked if d.id in done.detectors])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("DROP TABLE redetected; DROP TABLE seen_traces; DROP TABLE redetect_kept; DROP TABLE redetected_turns")
    done.after = _counts(con, [d.id for d in picked])
    done.total = (stored_before, _total(con))
    return done


def carry_reviews(con: duckdb.DuckDBPyConnection, merge_threshold: float) -> list[tuple[str, str | None, str | None]]:
    """After a move to the new grain (their findings detected again and woven): each review decision
    follows its lesson's findings into the lesson that absorbed them; the lessons are woven again when
    one did. Returns (old lesson, new lesson or None, why not) for every reviewed lesson that changed id."""
    moved = execute(con, "regrain/carry.sql").fetchall()
    con.execute("DROP TABLE reviewed_findings; DROP TABLE review_moves")
    if any(new for _, new, _ in moved):
        lessons.reweave(con, store.resolve_after(con), merge_threshold)
    return moved


def regrain_lines(moved: list[tuple[str, str | None, str | None]]) -> list[str]:
    """What a move to the new grain did to review decisions, a line each one could not follow."""
    carried = sum(1 for _, new, _ in moved if new)
    lines = [f"reviews:  {plural(carried, 'decision')} carried over to the lessons that absorbed theirs"
             + (f", {len(moved) - carried} could not be:" if len(moved) > carried else "")]
    lines += [f"  {old}: {why}" for old, new, why in moved if not new]
    return lines


def _hold_back(con: duckdb.DuckDBPyConnection) -> int:
    """Drop the new detections whose text holds a secret or personal data, as a batch's audit would
    (privacy.audit_staged); returns how many."""
    privacy.find(con, f"SELECT rowid AS k, {privacy.DETECTION_TEXT} AS text FROM redetected", ("k",))
    held = con.execute("DELETE FROM redetected WHERE rowid IN (SELECT k FROM scan_hits)").fetchall()[0][0]
    con.execute("DROP TABLE scan_texts; DROP TABLE scan_hits")
    return held


def _counts(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, int]:
    stored = dict(con.execute("SELECT detector, count(*) FROM detections WHERE list_contains(?, detector) "
                              "GROUP BY detector", [ids]).fetchall())
    return {i: stored.get(i, 0) for i in ids}


def _total(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT count(*) FROM detections").fetchall()[0][0]


def lesson_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT lesson_id FROM lessons").fetchall()}
