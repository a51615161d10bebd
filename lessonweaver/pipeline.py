"""The nightly run as plain functions: plan, stage each batch, load and weave, render and audit.

`execute` runs them in order for one set of Settings. How each stage is called is the caller's choice
(`Steps`): `run_local` calls them in this process, batches on a thread pool or a Dask cluster; the
Prefect flow (flows/nightly.py) wraps the same functions in tasks, for retries, the UI and artifacts.
Only `store` and the weave write the database, through a connection opened here.
"""

import datetime as dt
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import duckdb

from lessonweaver import (adapters, audit, detectors, discover, eventstore, fingerprint, forget, lessons, privacy,
                          progress, queries, regrain, render, store, versions)
from lessonweaver.batch import BatchResult, run_batch, split_traces
from lessonweaver.config import (Settings, batch_memory_limit, batch_threads, database_memory_limit, document_batch_bytes,
                                 memory_bytes, parse_night)
from lessonweaver.crashpoints import reached
from lessonweaver.errors import os_reason
from lessonweaver.summary import RUN_COLUMNS, RunSummary
from lessonweaver.words import plural

LOG = logging.getLogger("lessonweaver")
Log = logging.Logger | logging.LoggerAdapter

UNREAD_SHOWN = 5  # files not read (not trace file names) the summary names
AUDIT_ROUNDS = 3  # renders at most, each after quarantining what the previous audit found


@dataclass(frozen=True)
class Plan:
    """What a run will read: the batches of new or changed files, and what it knows from earlier runs."""
    batches: list[list[discover.InputFile]]
    files_seen: int
    files_skipped: int
    known_hashes: frozenset[str]
    tenant_salt: str
    unread: tuple[str, ...] = ()  # files in the input folders whose names are not trace files
    empty: tuple[str, ...] = ()  # input paths with no trace file under them


class Result(Protocol):
    """A started batch: a concurrent, Prefect or Dask future."""
    def result(self) -> Any: ...

    def add_done_callback(self, fn: Callable[[Any], None]) -> None: ...


@dataclass(frozen=True)
class Steps:
    """How `execute` calls each stage: directly, or through Prefect tasks. `stage` starts a batch and
    returns something with `.result()`; `publish`, when given, shows the finished run somewhere."""
    plan: Callable[[Settings], Plan]
    stage: Callable[..., Result]
    load: Callable[[Settings, list[str], RunSummary, str | None], RunSummary]
    render: Callable[[Settings, RunSummary, list[str]], RunSummary]
    publish: Callable[[Settings, RunSummary], None] | None = None


def check(settings: Settings) -> None:
    """Refuse, in one line each, options that would fail the run later: before anything is read."""
    check_out(settings.out)
    discover.discover(list(settings.paths))
    names = [a.format for a in adapters.load_adapters()]
    if settings.format and settings.format not in names:
        raise ValueError(f"unknown format '{settings.format}' (known: {', '.join(names)})")
    detectors.load_detectors(settings.detector_dirs)
    if settings.dask_address and settings.runner != "dask":
        raise ValueError("--dask-address needs --runner dask")
    if settings.night:
        parse_night(settings.night)
    if settings.resolve_after < 1:
        raise ValueError("--resolve-after must be at least 1")
    memory_bytes(settings.memory_limit)
    if settings.work_dir and not Path(settings.work_dir).is_dir():
        raise ValueError(f"work folder does not exist: {settings.work_dir}")
    if settings.templates and not Path(settings.templates).is_dir():
        raise ValueError(f"template folder does not exist: {settings.templates}")


def check_out(out: str) -> None:
    """Refuse a report folder where no file can be made, before any work: a folder is made and removed in it
    (or in the nearest folder above it that exists), as the run will make its files there."""
    folder = Path(store.nearest_folder(str(Path(out) / "report")))
    if not folder.is_dir():
        raise ValueError(f"cannot write the reports in {out}: {folder} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".lessonweaver-", dir=folder))
    except OSError as exc:
        raise ValueError(f"cannot write the reports in {out}: files cannot be created in {folder} "
                         f"({os_reason(exc)})") from None


def start(settings: Settings) -> RunSummary:
    """A new run's summary: its id, start time and night, and the detectors it will use (which fails
    fast, before anything is read, on a broken detector or adapter file)."""
    adapters.load_adapters()
    found = detectors.load_detectors(settings.detector_dirs)
    started = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    return RunSummary(run_id=started.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3), started_at=started,
                      inputs=list(settings.paths), night=parse_night(settings.night) if settings.night else started.date(),
                      detectors=[d.id for d in found], db=settings.db)


def plan(settings: Settings) -> Plan:
    """List the input files, drop those ingested before unchanged, and batch the rest."""
    files, unread = discover.scan(list(settings.paths))
    con = store.connect(settings.db)
    try:
        seen, hashes = store.ingested(con)
        salt = store.tenant_salt(con, settings.tenant_salt)
    finally:
        con.close()
    fresh = [f for f in files if (f.path, f.size, f.mtime) not in seen]
    # Files larger than a batch, one trace per line, are staged in parts: memory follows the batch size.
    known = adapters.load_adapters()
    parts = discover.split_large(fresh, settings.batch_bytes,
                                 lambda f: adapters.one_trace_per_line(f.path, known, settings.format))
    return Plan(discover.batches(parts, settings.batch_bytes, document_batch_bytes(settings)), len(files),
                len(files) - len(fresh), hashes, salt, tuple(unread), tuple(discover.without_traces(settings.paths)))


def stage(files: list[discover.InputFile], settings: Settings, folder: str, known_hashes: frozenset[str],
          label: str, only_traces: frozenset[str] | None = None, log: Log = LOG) -> BatchResult:
    """Read, adapt, screen and detect one batch of files in memory; write Parquet into `folder`."""
    result = run_batch(files, settings, folder, known_hashes, only_traces)
    if result.pieces > 1:
        log.warning("batch %s ran out of memory even with the whole limit (%s) and was staged in %d pieces; "
                    "a larger LESSONWEAVER_MEMORY_LIMIT stages such input in fewer", label, settings.memory_limit,
                    result.pieces)
    elif result.alone:
        log.warning("batch %s ran out of its share of the memory limit (%s) and was staged again with all of it "
                    "(%s); for very large traces, run with fewer --workers", label, batch_memory_limit(settings),
                    settings.memory_limit)
    size = _bytes(files)
    log.info("batch %s staged: %s, %.1f MB", label, plural(len(files), "file"), size / 1e6,
             extra=progress.note(staged_bytes=size))
    return result


def _bytes(files: list[discover.InputFile]) -> int:
    return sum(f.length for f in files)


def load_and_weave(settings: Settings, folders: list[str], run: RunSummary, merged: str | None = None) -> RunSummary:
    """Load the batches in one transaction, record the run, and rebuild lessons. A weave that fails
    leaves the run recorded as failed, with what it loaded."""
    run = replace(run)
    con = store.connect(settings.db, threads=settings.threads, memory_limit=database_memory_limit(settings))
    try:
        found = detectors.load_detectors(settings.detector_dirs)
        lessons.register_detectors(con, found)
        had_traces = con.execute("SELECT count(*) FROM traces").fetchall()[0][0] > 0
        regrain = had_traces and lessons.grain(con) < lessons.GRAIN
        if regrain:  # before the load: which findings each reviewed lesson is made of
            queries.execute(con, "regrain/reviewed.sql")
        counts = store.load(con, folders, run.run_id, merged)
        reached("loaded")
        skipped_unread = run.files_skipped
        run = replace(run, **asdict(counts), status="loaded")
        run.files_skipped = skipped_unread + counts.files_skipped
        if regrain:
            run.regrain_note = _regrain(con, settings, found)
        _note_versions(con, settings, run, found, had_traces)
        if settings.retain_days:
            run.events_dropped = forget.retain(con, settings.retain_days)
        store.record_run(con, run)
        try:
            run.lessons_new, run.lessons_total, run.findings_below_floor = _weave(con, settings, run)
            if regrain:
                run.regrain_note += _carry_reviews(con, settings)
        except BaseException:
            run.status = "failed"
            store.record_run(con, run)
            raise
        return replace(run, **store.run_tallies(con, run.run_id))
    finally:
        con.close()


def _note_versions(con: Any, settings: Settings, run: RunSummary, found: list[detectors.Detector],
                   had_traces: bool) -> None:
    """Note in the run's summary which detectors changed since the stored traces were detected (the CLI
    prints it, the Prefect summary artifact shows it)."""
    run.stale_detectors = versions.stale(con, found, had_traces)
    run.detector_advice = versions.advice(run.stale_detectors, run.db, settings.detector_dirs)


def _regrain(con: Any, settings: Settings, found: list[detectors.Detector]) -> str:
    """A database woven at an earlier grain (lessons.GRAIN) moves to the new one before this run weaves:
    every detector runs again over the stored traces, so their findings carry what the new grain groups by.
    Returns the note the summary prints."""
    done = regrain.replace(con, found, found)
    queries.execute(con, "weave/resight.sql", detectors=done.detectors)
    return (f"the lessons moved to the new grain (one lesson per cause, across tasks, sessions and tenants): "
            f"{plural(len(done.detectors), 'detector')} ran again over {plural(done.traces, 'stored trace')}, "
            f"detections {done.total[0]} -> {done.total[1]}")


def _carry_reviews(con: Any, settings: Settings) -> str:
    """After a move to the new grain, review decisions follow their findings (regrain.carry_reviews)."""
    moved = regrain.carry_reviews(con, settings.merge_threshold)
    return "".join(f"\n  {line}" for line in regrain.regrain_lines(moved)) if moved else ""


def _weave(con: Any, settings: Settings, run: RunSummary) -> tuple[int, int, int]:
    woven = lessons.weave(con, run.run_id, run.night, settings.resolve_after, settings.merge_threshold)
    store.put_setting(con, store.RESOLVE_AFTER, str(settings.resolve_after))
    store.put_setting(con, store.REPORTS, str(Path(settings.out).resolve()))
    store.put_setting(con, store.REPORT_LESSONS, str(settings.report_lessons))
    return woven


def _fingerprint(con: Any, settings: Settings, night: dt.date, found: list[detectors.Detector]) -> str:
    """What the weave and the render of this run read (lessonweaver/fingerprint.py)."""
    return fingerprint.compute(con, found, night=lessons.as_of(con, night),
                               options=(settings.resolve_after, settings.merge_threshold, _tenant_key(settings)),
                               templates=settings.templates, out=settings.out)


def nothing_new(settings: Settings, run: RunSummary) -> RunSummary | None:
    """A run with no file to read, over what the published lessons and reports were made from: record it
    and keep them as they are (the weave and the render would make them again, unchanged). None when
    anything differs (the night, a detector, a template, a review, the reports): then the run goes on."""
    con = store.connect(settings.db, threads=settings.threads, memory_limit=database_memory_limit(settings))
    try:
        found = detectors.load_detectors(settings.detector_dirs)
        if store.setting(con, fingerprint.KEY) != _fingerprint(con, settings, run.night, found):
            return None
        run = replace(run, status="completed", nothing_new=True)
        _note_versions(con, settings, run, found, had_traces=True)
        if settings.retain_days:
            run.events_dropped = forget.retain(con, settings.retain_days)
        run.lessons_total = con.execute("SELECT count(*) FROM lessons").fetchall()[0][0]
        run = replace(run, **store.run_tallies(con, run.run_id))
        run.finished_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        store.record_run(con, run)
        return run
    finally:
        con.close()


def nothing_to_read(settings: Settings) -> bool:
    """Whether a run would find no new or changed file over lessons and reports made from what is stored
    (what `nothing_new` tells inside a run), checked without writing anything. The CLI then runs in this
    process: a run that only records itself need not pay for starting Prefect. False on any doubt."""
    if not os.path.exists(settings.db):
        return False
    files, _unread = discover.scan(list(settings.paths))
    try:
        con = store.connect(settings.db, read_only=True)
    except store.StoreError:
        return False
    try:
        seen, _hashes = store.ingested(con)
        if not files or any((f.path, f.size, f.mtime) not in seen for f in files):
            return False
        settings = replace(settings, tenant_salt=store.tenant_salt(con, settings.tenant_salt, create=False))
        night = parse_night(settings.night) if settings.night else dt.datetime.now(dt.timezone.utc).date()
        found = detectors.load_detectors(settings.detector_dirs)
        return store.setting(con, fingerprint.KEY) == _fingerprint(con, settings, night, found)
    except duckdb.Error:  # a database of an older schema, say: the run itself will bring it up to date
        return False
    finally:
        con.close()


def _late_quarantine(con: Any, settings: Settings, run: RunSummary, findings: list[audit.Finding],
                     folders: list[str], log: Log) -> RunSummary | None:
    """Quarantine the traces of this run that the audit's findings came from, and weave again without
    them. None when a finding comes from no trace of the run (the reports are then withheld)."""
    held = audit.attribute(con, findings, run.run_id)
    if not held:
        return None
    moved = store.quarantine_loaded(con, run.run_id, held, folders)
    log.warning("the audit found %s in what %s became; they are quarantined and the reports rendered again "
                "without them", plural(len(findings), "problem"), plural(len(held), "trace"))
    run = replace(run, traces_loaded=run.traces_loaded - moved.traces_quarantined,
                  traces_quarantined=run.traces_quarantined + moved.traces_quarantined,
                  records_loaded=run.records_loaded - moved.records_quarantined,
                  records_quarantined=run.records_quarantined + moved.records_quarantined,
                  events_loaded=run.events_loaded - moved.events_loaded, detections=run.detections - moved.detections)
    run.lessons_new, run.lessons_total, run.findings_below_floor = _weave(con, settings, run)
    run = replace(run, **store.run_tallies(con, run.run_id))
    store.record_run(con, run)
    return run


def render_and_audit(settings: Settings, run: RunSummary, folders: list[str], log: Log = LOG) -> RunSummary:
    """Render the reports aside, audit them and this run's rows, and publish them when clean.

    Fail closed per trace: a finding that came from traces of this run quarantines those traces, and
    the reports are rendered again without them. Only a finding that no trace explains withholds the
    reports (and fails the run)."""
    run = replace(run)
    con = store.connect(settings.db, threads=settings.threads, memory_limit=database_memory_limit(settings))
    pending = Path(settings.out) / f".pending-{run.run_id}"
    try:
        tenant_key = _tenant_key(settings)
        render.clear_pending(settings.out)
        for round_ in range(AUDIT_ROUNDS):
            written, findings = _render_aside(con, run, pending, settings.templates, tenant_key,
                                              settings.db.removesuffix(eventstore.WORKING_SUFFIX))  # as published
            if not findings:
                break
            again = None if round_ == AUDIT_ROUNDS - 1 else _late_quarantine(con, settings, run, findings, folders, log)
            if again is None:
                run.status = "audit_failed"
                store.record_run(con, run)
                raise audit.AuditFailed(findings)
            run = again
        reached("render")
        run.written = render.publish(written, settings.out)
        run.status = "completed"
        run.finished_at = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        store.record_run(con, run)
        store.put_setting(con, fingerprint.KEY,
                          _fingerprint(con, settings, run.night, detectors.load_detectors(settings.detector_dirs)))
        return run
    except Exception:
        if run.status != "audit_failed":
            run.status = "failed"
            store.record_run(con, run)
        raise
    finally:
        con.close()
        shutil.rmtree(pending, ignore_errors=True)


def _render_aside(con: Any, run: RunSummary, pending: Path, templates: str | None,
                  tenant_key: str | None, db: str) -> tuple[list[str], list[audit.Finding]]:
    """Render every report into `pending` (emptied first), and audit them and the run's rows."""
    shutil.rmtree(pending, ignore_errors=True)
    written = render.render(con, run.as_dict(), str(pending), templates, tenant_key, db)
    return written, audit.audit_files(con, written) + audit.audit_database(con, run.run_id)


def stored_run(con: Any) -> RunSummary:
    """The latest completed run (else the latest run) as the reports show it, with what the database holds
    now: its detections and lessons counted again, since a redetect, a review or a forget may have changed
    them. ValueError when the database has no run."""
    columns = ", ".join(RUN_COLUMNS)
    rows = con.execute(f"SELECT {columns} FROM runs ORDER BY status = 'completed' DESC, started_at DESC "
                       "LIMIT 1").fetchall()
    if not rows:
        raise ValueError("the database has no run yet: lessonweaver run first")
    run = RunSummary(**dict(zip(RUN_COLUMNS, rows[0])))
    run = replace(run, **store.run_tallies(con, run.run_id))
    run.detections = sum(run.detections_by_detector.values())
    run.lessons_total = con.execute("SELECT count(*) FROM lessons").fetchall()[0][0]
    return run


def _tenant_key(settings: Settings) -> str | None:
    """The hash of the tenant a run renders for (--tenant), with the run's salt."""
    return privacy.tenant_hash(settings.tenant_salt, settings.tenant) if settings.tenant else None


def tenant_key(con: Any, tenant: str | None, configured_salt: str = "") -> str | None:
    """The hash the store keeps for `tenant` (None without one), read without writing the database."""
    return privacy.tenant_hash(store.tenant_salt(con, configured_salt, create=False), tenant) if tenant else None


def render_stored(con: Any, out: str, db: str, templates: str | None = None, tenant: str | None = None) -> RunSummary:
    """The reports rendered from the database alone, for its latest run as the database now stands (review
    decisions, a redetect), audited as a run's are and published when clean: AuditFailed, and nothing
    published, otherwise. Reads no input; writes nothing to the database. `tenant` is a tenant hash; `db` is
    the database as the reports name it in their commands."""
    if templates and not Path(templates).is_dir():
        raise ValueError(f"template folder does not exist: {templates}")
    run = stored_run(con)
    pending = Path(out) / f".rendering-{secrets.token_hex(3)}"  # not `.pending-`: a run starting clears those
    try:
        written, findings = _render_aside(con, run, pending, templates, tenant, db)
        if findings:
            raise audit.AuditFailed(findings)
        run.written = render.publish(written, out)
        return run
    finally:
        shutil.rmtree(pending, ignore_errors=True)


class _Clock:
    """Seconds per stage, for the summary."""

    def __init__(self, timings: dict[str, float]):
        self.timings, self.last = timings, time.perf_counter()

    def lap(self, stage_name: str) -> None:
        now = time.perf_counter()
        self.timings[stage_name] = round(now - self.last, 3)
        self.last = now


def _stage_all(settings: Settings, steps: Steps, the_plan: Plan, workdir: str) -> list[BatchResult]:
    """Stage every batch, at most `workers` at once on this machine: each holds its share of the memory
    limit. Batches on remote workers are all submitted at once."""
    batches = the_plan.batches
    # A slot frees when any batch finishes: a small batch done early lets the next one start beside a large
    # one still staging (waiting for the oldest left a worker idle whenever sizes differed).
    slots = threading.Semaphore(settings.workers if settings.shared_machine else max(1, len(batches)))
    started: list[Result] = []
    for i, files in enumerate(batches):
        slots.acquire()
        started.append(steps.stage(files=files, settings=settings, folder=f"{workdir}/batch-{i:05d}",
                                   known_hashes=the_plan.known_hashes, label=f"{i + 1}/{len(batches)}"))
        started[-1].add_done_callback(lambda _: slots.release())
    return [s.result() for s in started]


def _merge_split_traces(settings: Settings, steps: Steps, the_plan: Plan, folders: list[str], workdir: str,
                        log: Log) -> str | None:
    """Stage again, together, the files of traces whose records were split between batches (event-per-line
    formats gather a trace across files); returns the merge batch's folder, or None when nothing was split."""
    gathering = [a.format for a in adapters.load_adapters() if a.gathers]
    ids, paths = split_traces(folders, gathering, settings.memory_limit)
    if not ids:
        return None
    log.info("%s split between batches: staging their %s again together",
             plural(len(ids), "trace was", "traces were"), plural(len(paths), "file"))
    wanted = set(paths)
    files = [f for batch in the_plan.batches for f in batch if f.path in wanted]
    return steps.stage(files=files, settings=settings, folder=f"{workdir}/merge", known_hashes=the_plan.known_hashes,
                       label="merge", only_traces=frozenset(ids)).result().folders[0]


def execute(settings: Settings, steps: Steps, log: Log = LOG) -> RunSummary:
    """One run: plan, stage, load and weave, render and audit (and publish, when the steps say so), on a
    copy of the database that is put in place when the run ends (store.writing)."""
    run = start(settings)
    with store.writing(settings.db) as work:
        settings = replace(settings, db=work)
        clock = _Clock(run.timings)
        the_plan = steps.plan(settings)
        clock.lap("discover")
        settings = replace(settings, tenant_salt=the_plan.tenant_salt)
        run.files_seen, run.files_skipped = the_plan.files_seen, the_plan.files_skipped
        run.files_unread, run.unread_examples = len(the_plan.unread), list(the_plan.unread[:UNREAD_SHOWN])
        run.empty_inputs = list(the_plan.empty)
        log.info("%s found, %d unchanged since an earlier run, %s to stage", plural(the_plan.files_seen, "file"),
                 the_plan.files_skipped, plural(len(the_plan.batches), "batch", "batches"),
                 extra=progress.note(len(the_plan.batches), sum(_bytes(b) for b in the_plan.batches)))
        quiet = None if the_plan.batches else nothing_new(settings, run)
        if quiet:
            log.info("nothing new tonight: the lessons and reports in place stay as they are")
            clock.lap("check")
            if steps.publish:
                steps.publish(settings, quiet)
            return quiet
        workdir = tempfile.mkdtemp(prefix="lessonweaver-", dir=settings.work_dir)
        try:
            if settings.shared_machine:  # a night of fewer batches than workers gives them all the cores and memory
                settings = replace(settings, workers=max(1, min(settings.workers, len(the_plan.batches))))
            log.info("staging %s, each with %s and %s of memory",
                     f"{settings.workers} at a time" if settings.shared_machine
                     else f"on the Dask cluster at {settings.dask_address}",
                     plural(batch_threads(settings), "thread"), batch_memory_limit(settings))
            results = _stage_all(settings, steps, the_plan, workdir)
            clock.lap("stage")
            reached("staged")
            run.detector_errors = {k: v for r in results for k, v in r.detector_errors.items()}
            for detector_id, message in sorted(run.detector_errors.items()):
                log.error("detector %s failed and was skipped: %s", detector_id, message)
            folders = [f for r in results for f in r.folders]
            merged = _merge_split_traces(settings, steps, the_plan, folders, workdir, log)
            if merged:
                clock.lap("merge")
            log.info("loading %s and weaving lessons, within %s of memory", plural(len(folders), "batch", "batches"),
                     database_memory_limit(settings), extra=progress.note(phase="loading"))
            run = steps.load(settings, folders, run, merged)
            clock.lap("load")
            log.info("rendering and auditing the reports", extra=progress.note(phase="rendering"))
            run = steps.render(settings, run, folders + ([merged] if merged else []))
            clock.lap("render")
            if steps.publish:
                steps.publish(settings, run)
                clock.lap("artifacts")
            return run
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def stage_pool(settings: Settings) -> Iterator[Callable[..., Result]]:
    """Where `run_local` stages batches: a thread pool of `workers`, or a Dask cluster (the one at
    --dask-address, else a local one with `workers` processes). Yields a function that starts a batch."""
    if settings.runner == "threads":
        with ThreadPoolExecutor(max_workers=settings.workers) as pool:
            yield lambda **kw: pool.submit(stage, **kw)
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ValueError("--runner dask needs dask.distributed: pip install 'lessonweaver[dask]'") from None
    cluster = None if settings.dask_address else LocalCluster(n_workers=settings.workers, threads_per_worker=1,
                                                               processes=True)
    try:
        with Client(settings.dask_address or cluster) as client:
            yield lambda **kw: client.submit(stage, pure=False, **kw)
    finally:
        if cluster is not None:
            cluster.close()


def run_local(settings: Settings, log: Log = LOG) -> RunSummary:
    """The whole run in this process, without Prefect: the same stages and results as the flow."""
    with stage_pool(settings) as submit:
        return execute(settings, Steps(plan=plan, stage=submit, load=load_and_weave, render=render_and_audit), log)
