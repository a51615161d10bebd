"""The nightly lessonweaver flow: discover, stage batches, load, weave, render.

`lessonweaver run` calls this flow, and so does a scheduled deployment, so both take the same path.
With no PREFECT_API_URL set, Prefect runs it against a temporary local server; with one set, the run
reports to that server. Tasks pass paths and plain values only: each opens what it needs.
"""

import datetime as dt
import logging
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NONE
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from lessonweaver import adapters, artifacts, audit, detectors, discover, lessons, privacy, render, store
from lessonweaver.batch import BatchResult, run_batch, split_traces
from lessonweaver.config import DEFAULT_DB, DEFAULT_INPUT, DEFAULT_OUT, Settings, batch_memory_limit, parse_night
from lessonweaver.crashpoints import reached
from lessonweaver.read import TransientReadError


@task(name="discover", cache_policy=NONE)
def discover_task(settings: Settings) -> tuple[list[list[discover.InputFile]], int, int, frozenset[str], str]:
    """List the input files, drop those ingested before unchanged, and batch the rest."""
    files = discover.discover(settings.paths)
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
    return discover.batches(parts, settings.batch_bytes), len(files), len(files) - len(fresh), hashes, salt


def _transient(task, task_run, state) -> bool:
    """Retry a batch only when reading met an error that may pass; a bad input will not get better."""
    return isinstance(state.data, TransientReadError)


@task(name="stage-batch", cache_policy=NONE, retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=_transient)
def stage_batch_task(files: list[discover.InputFile], settings: Settings, folder: str,
                     known_hashes: frozenset[str], label: str, only_traces: frozenset[str] | None = None) -> BatchResult:
    """Read, adapt, screen and detect one batch of files in memory; write Parquet into `folder`."""
    result = run_batch(files, settings, folder, known_hashes, only_traces)
    megabytes = sum((f.end - f.start) if f.is_part else f.size for f in files) / 1e6
    log = get_run_logger()
    if result.alone:
        log.warning("batch %s ran out of its share of the memory limit (%s) and was staged again with all of it "
                    "(%s); for very large traces, run with fewer --workers", label, batch_memory_limit(settings),
                    settings.memory_limit)
    log.info("batch %s staged: %d file(s), %.1f MB", label, len(files), megabytes)
    return result


@task(name="load-and-weave", cache_policy=NONE)
def load_task(settings: Settings, folders: list[str], run: dict, merged: str | None = None) -> dict:
    """Load the batches in one transaction, record the run, and rebuild lessons. A weave that fails
    leaves the run recorded as failed, with what it loaded."""
    con = store.connect(settings.db, threads=settings.threads, memory_limit=settings.memory_limit)
    try:
        lessons.register_detectors(con, detectors.load_detectors(settings.detector_dirs))
        counts = store.load(con, folders, run["run_id"], merged)
        reached("loaded")
        skipped_unread = run["files_skipped"]
        run.update(asdict(counts), status="loaded")
        run["files_skipped"] = skipped_unread + counts.files_skipped
        store.record_run(con, run)
        try:
            run["lessons_new"], run["lessons_total"] = lessons.weave(
                con, run["run_id"], run["night"], settings.resolve_after, settings.merge_threshold)
        except BaseException:
            run["status"] = "failed"
            store.record_run(con, run)
            raise
        run.update(store.run_tallies(con, run["run_id"]))
    finally:
        con.close()
    return run


def _late_quarantine(con, settings: Settings, run: dict, findings: list[audit.Finding], folders: list[str],
                     log: logging.Logger | logging.LoggerAdapter) -> bool:
    """Quarantine the traces of this run that the audit's findings came from, and weave again without
    them. False when a finding comes from no trace of the run (the reports are then withheld)."""
    held = audit.attribute(con, findings, run["run_id"])
    if not held:
        return False
    moved = store.quarantine_loaded(con, run["run_id"], held, folders)
    log.warning("the audit found %d problem(s) in what %d trace(s) became; they are quarantined and the reports "
                "rendered again without them", len(findings), len(held))
    run["traces_loaded"] -= moved.traces_quarantined
    run["traces_quarantined"] += moved.traces_quarantined
    run["records_loaded"] -= moved.records_quarantined
    run["records_quarantined"] += moved.records_quarantined
    run["events_loaded"] -= moved.events_loaded
    run["detections"] -= moved.detections
    run["lessons_new"], run["lessons_total"] = lessons.weave(
        con, run["run_id"], run["night"], settings.resolve_after, settings.merge_threshold)
    run.update(store.run_tallies(con, run["run_id"]))
    store.record_run(con, run)
    return True


AUDIT_ROUNDS = 3  # renders at most, each after quarantining what the previous audit found


@task(name="render-and-audit", cache_policy=NONE)
def render_task(settings: Settings, run: dict, tenant: str | None, folders: list[str]) -> dict:
    """Render the reports aside, audit them and this run's rows, and publish them when clean.

    Fail closed per trace: a finding that came from traces of this run quarantines those traces, and
    the reports are rendered again without them. Only a finding that no trace explains withholds the
    reports (and fails the run)."""
    log = get_run_logger()
    con = store.connect(settings.db, threads=settings.threads, memory_limit=settings.memory_limit)
    pending = Path(settings.out) / f".pending-{run['run_id']}"
    try:
        tenant_key = privacy.tenant_hash(settings.tenant_salt, tenant) if tenant else None
        render.clear_pending(settings.out)
        for round_ in range(AUDIT_ROUNDS):
            shutil.rmtree(pending, ignore_errors=True)
            written = render.render(con, run, str(pending), settings.templates, tenant_key)
            findings = audit.audit_files(con, written) + audit.audit_database(con, run["run_id"])
            if not findings:
                break
            if round_ == AUDIT_ROUNDS - 1 or not _late_quarantine(con, settings, run, findings, folders, log):
                run["status"] = "audit_failed"
                store.record_run(con, run)
                raise audit.AuditFailed(findings)
        reached("render")
        run["written"] = render.publish(written, settings.out)
        run["status"] = "completed"
        run["finished_at"] = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        store.record_run(con, run)
        return run
    except Exception:
        if run["status"] != "audit_failed":
            run["status"] = "failed"
            store.record_run(con, run)
        raise
    finally:
        con.close()
        shutil.rmtree(pending, ignore_errors=True)


@task(name="publish-artifacts", cache_policy=NONE)
def artifacts_task(settings: Settings, run: dict, tenant: str | None) -> None:
    """Show the night in the Prefect UI: a Markdown summary and a table of the top lessons, under stable
    keys so each night is a new version of the same two artifacts. Built like the reports (scrubbed, no
    quarantined or rejected content, one tenant's lessons with --tenant)."""
    con = store.connect(settings.db, read_only=True)
    try:
        tenant_key = privacy.tenant_hash(settings.tenant_salt, tenant) if tenant else None
        statuses = artifacts.lesson_statuses(con, tenant_key)
        top = artifacts.top_lessons(con, tenant_key)
    finally:
        con.close()
    create_markdown_artifact(artifacts.summary_markdown(run, statuses), key=artifacts.SUMMARY_KEY,
                             description=f"lessonweaver night {run['night']}, run {run['run_id']}")
    # With no lessons, empty columns keep the table's header.
    create_table_artifact(top or {c: [] for c in artifacts.TOP_LESSON_COLUMNS}, key=artifacts.TOP_LESSONS_KEY,
                          description=f"top {artifacts.TOP_LESSONS} lessons by priority, night {run['night']}")


def task_runner(kind: str = "threads", workers: int = 1, dask_address: str | None = None) -> TaskRunner:
    """Where stage-batch tasks run: a local thread pool, or a Dask cluster (through prefect-dask).

    Each batch opens its own in-memory DuckDB; batches staged at once on this machine share its cores
    and LESSONWEAVER_MEMORY_LIMIT (config.batch_threads, config.batch_memory_limit). On Dask, batches
    write their Parquet under --work-dir, which must then be storage every worker and this machine share.
    """
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=workers)
    if kind == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError:
            raise ValueError("--runner dask needs prefect-dask: pip install 'lessonweaver[dask]'") from None

        if dask_address:
            return DaskTaskRunner(address=dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True})
    raise ValueError(f"unknown runner '{kind}' (known: threads, dask)")


def new_run_id(now: dt.datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@flow(name="lessonweaver-nightly", task_runner=ThreadPoolTaskRunner(max_workers=os.cpu_count() or 1))
def nightly(
    paths: list[str] = [DEFAULT_INPUT],  # noqa: B006 - Prefect flow parameters must be plain JSON values
    db: str = DEFAULT_DB,
    out: str = DEFAULT_OUT,
    detector_dirs: list[str] = [],  # noqa: B006
    templates: str | None = None,
    format: str | None = None,
    pii: str = "redact",
    tenant: str | None = None,
    batch_mb: float = 64,
    work_dir: str | None = None,
    night: str | None = None,
    resolve_after: int = 7,
    workers: int = 0,
    remote_workers: bool = False,
) -> dict:
    """Run lessonweaver over `paths` into the database `db`, writing reports to `out`.

    `night` (YYYY-MM-DD, default: today in UTC) is the night the run counts for in the lessons'
    lifecycle; a lesson not seen for `resolve_after` nights is resolved. With `tenant`, the reports show
    that tenant's lessons only. `workers` batches (0: one per core) are staged at once, sharing this
    machine's cores and memory limit, unless `remote_workers` says they run elsewhere (a Dask cluster).
    The run ends with an audit of its rows and reports; reports that fail it are not published, and the
    run fails.
    """
    log = get_run_logger()
    settings = replace(Settings(), paths=tuple(paths), db=db, out=out, detector_dirs=tuple(detector_dirs),
                       templates=templates, format=format, pii=pii, batch_bytes=int(batch_mb * 1024 * 1024),
                       work_dir=work_dir, resolve_after=resolve_after,
                       workers=workers or os.cpu_count() or 1, shared_machine=not remote_workers)
    # Fail fast, before reading anything, on a broken detector or adapter file.
    adapters.load_adapters()
    detector_list = detectors.load_detectors(settings.detector_dirs)
    started = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    run = {"run_id": new_run_id(started), "started_at": started, "inputs": list(paths),
           "night": parse_night(night) if night else started.date(),
           "detectors": [d.id for d in detector_list]}

    with store.run_lock(settings.db):
        return _run(settings, run, tenant, log)


def _merge_split_traces(settings: Settings, file_batches: list[list[discover.InputFile]], folders: list[str],
                        folder: str, hashes: frozenset[str], log: logging.Logger | logging.LoggerAdapter) -> str | None:
    """Stage again, together, the files of traces whose records were split between batches (event-per-line
    formats gather a trace across files); returns the merge batch's folder, or None when nothing was split."""
    gathering = [a.format for a in adapters.load_adapters() if a.gathers]
    ids, paths = split_traces(folders, gathering, settings.memory_limit)
    if not ids:
        return None
    log.info("%d trace(s) were split between batches: staging their %d file(s) again together", len(ids), len(paths))
    wanted = set(paths)
    files = [f for batch in file_batches for f in batch if f.path in wanted]
    return stage_batch_task.submit(files, settings, folder, hashes, "merge", frozenset(ids)).result().folder


def _run(settings: Settings, run: dict, tenant: str | None, log: logging.Logger | logging.LoggerAdapter) -> dict:
    clock = time.perf_counter()
    timings = run["timings"] = {}

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[stage] = round(now - clock, 3)
        clock = now

    file_batches, seen, skipped, hashes, salt = discover_task(settings)
    lap("discover")
    settings = replace(settings, tenant_salt=salt)
    run.update(files_seen=seen, files_skipped=skipped)
    log.info("%d file(s) found, %d unchanged since an earlier run, %d batch(es) to stage",
             seen, skipped, len(file_batches))
    workdir = tempfile.mkdtemp(prefix="lessonweaver-", dir=settings.work_dir)
    try:
        # At most `workers` batches in flight on this machine: each holds its share of the memory limit.
        window = settings.workers if settings.shared_machine else len(file_batches)
        futures = []
        for i, batch in enumerate(file_batches):
            if len(futures) >= window:
                futures[len(futures) - window].wait()
            futures.append(stage_batch_task.submit(batch, settings, f"{workdir}/batch-{i:05d}", hashes,
                                                   f"{i + 1}/{len(file_batches)}"))
        results = [f.result() for f in futures]
        lap("stage")
        reached("staged")
        run["detector_errors"] = {k: v for r in results for k, v in r.detector_errors.items()}
        for detector_id, message in sorted(run["detector_errors"].items()):
            log.error("detector %s failed and was skipped: %s", detector_id, message)
        merged = _merge_split_traces(settings, file_batches, [r.folder for r in results], f"{workdir}/merge",
                                     hashes, log)
        if merged:
            lap("merge")
        folders = [r.folder for r in results]
        run = load_task(settings, folders, run, merged)
        lap("load")
        run = render_task(settings, run, tenant, folders + ([merged] if merged else []))
        lap("render")
        artifacts_task(settings, run, tenant)
        lap("artifacts")
        return run
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
