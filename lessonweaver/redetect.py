"""Redetect: run the current detectors over the traces already stored, so a new or fixed detector sees
history (a run reads only new files), and let lessons and reports follow.

The detectors run (all, or those named) replace their stored detections, in one transaction, on a copy
of the database published when done (store.writing); a detector that fails keeps what it had. Their
findings pass the same scan a batch's do before anything is stored (a detector may decode what was
stored encoded): a finding that looks sensitive is held back. Then the lessons are woven again as the
latest run left them (lessons.reweave), each new detection counting for the night its trace came in,
and the reports rendered from the database and audited (pipeline.render_stored). A lesson none of whose
detections remain leaves the lessons table, as when `forget` removes its traces; its review decision
stays in `reviews` and applies again if it comes back. The detectors' fingerprints are brought up to
date (lessonweaver.versions), so the next run no longer warns about them.
"""

from dataclasses import dataclass, field

import duckdb

from lessonweaver import detectors, lessons, pipeline, privacy, store, versions
from lessonweaver.config import Settings
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


def chosen(found: list[detectors.Detector], only: list[str]) -> list[detectors.Detector]:
    """The detectors named (all when none is), or ValueError naming one that does not exist."""
    known = {d.id for d in found}
    unknown = [i for i in only if i not in known]
    if unknown:
        raise ValueError(f"no detector '{unknown[0]}' (list them with: lessonweaver detectors; "
                         "your own need --detectors DIR)")
    return [d for d in found if not only or d.id in only]


def redetect(settings: Settings, only: list[str]) -> Redetected:
    """Run the detectors again over the stored traces of database `settings.db`, weave and render (see
    the module's docstring). Returns what changed."""
    found = detectors.load_detectors(settings.detector_dirs)
    picked = chosen(found, only)
    with store.writing(settings.db) as work:
        con = store.connect(work, threads=settings.threads, memory_limit=settings.memory_limit)
        try:
            done = _replace(con, found, picked)
            lessons.reweave(con, store.resolve_after(con), settings.merge_threshold, done.detectors)
            done.lessons_after = _lesson_ids(con)
            tenant = pipeline.tenant_key(con, settings.tenant, settings.tenant_salt)
            done.run = pipeline.render_stored(con, settings.out, settings.templates, tenant)
        finally:
            con.close()
    return done


def _replace(con: duckdb.DuckDBPyConnection, found: list[detectors.Detector],
             picked: list[detectors.Detector]) -> Redetected:
    """Run `picked` over the stored traces and replace their detections; record their fingerprints."""
    lessons.register_detectors(con, found)
    done = Redetected(traces=con.execute("SELECT count(*) FROM traces").fetchall()[0][0],
                      lessons_before=_lesson_ids(con))
    versions.stale(con, found, done.traces > 0)  # a database from before fingerprints adopts them first
    done.before = _counts(con, [d.id for d in picked])
    stored_before = _total(con)
    done.failed = detectors.detect(con, picked, into="redetected", temporary=True)
    done.detectors = [d.id for d in picked if d.id not in done.failed]
    done.held = _hold_back(con)
    con.execute("BEGIN TRANSACTION")
    try:
        done.kept = execute(con, "redetect/replace.sql", detectors=done.detectors).fetchall()[0][0]
        versions.record(con, [d for d in picked if d.id in done.detectors])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("DROP TABLE redetected; DROP TABLE seen_traces; DROP TABLE redetect_kept")
    done.after = _counts(con, [d.id for d in picked])
    done.total = (stored_before, _total(con))
    return done


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


def _lesson_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT lesson_id FROM lessons").fetchall()}


def summary(done: Redetected) -> list[str]:
    """What `lessonweaver redetect` prints: detections before and after, per detector that changed."""
    changed = [f"{i} {done.before[i]} -> {done.after[i]}" for i in done.detectors if done.before[i] != done.after[i]]
    lines = [f"redetect: {plural(len(done.detectors), 'detector')} over {plural(done.traces, 'stored trace')}; "
             f"detections {done.total[0]} -> {done.total[1]}"
             + (f" ({', '.join(changed)})" if changed else " (no detector's changed)")]
    lines += [f"  {i:<22} FAILED, its detections kept: {why}" for i, why in sorted(done.failed.items())]
    if done.kept:
        lines.append(f"  {plural(done.kept, 'detection')} kept: their traces' events are no longer stored (--retain-days)")
    if done.held:
        lines.append(f"  {plural(done.held, 'new detection')} held back: the text looks like it holds sensitive data")
    added, gone = done.lessons_after - done.lessons_before, done.lessons_before - done.lessons_after
    lines.append(f"lessons:  {len(done.lessons_before)} -> {len(done.lessons_after)} "
                 f"({len(added)} added, {len(gone)} gone)")
    lines += [f"report:   {path}" for path in (done.run.written if done.run else [])]
    return lines
