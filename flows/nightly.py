"""The nightly lessonweaver flow: discover, stage batches, load, weave, render.

`lessonweaver run` calls this flow, and so does a scheduled deployment, so both take the same path.
With no PREFECT_API_URL set, Prefect runs it against a temporary local server; with one set, the run
reports to that server. Tasks pass paths and plain values only: each opens what it needs.
"""

import datetime as dt
import secrets
import shutil
import tempfile
from dataclasses import asdict, replace

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NONE

from lessonweaver import adapters, detectors, discover, lessons, render, store
from lessonweaver.batch import BatchResult, run_batch
from lessonweaver.config import DEFAULT_DB, DEFAULT_INPUT, DEFAULT_OUT, Settings


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
    return discover.batches(fresh, settings.batch_bytes), len(files), len(files) - len(fresh), hashes, salt


@task(name="stage-batch", cache_policy=NONE)
def stage_batch_task(files: list[discover.InputFile], settings: Settings, folder: str,
                     known_hashes: frozenset[str], label: str) -> BatchResult:
    """Read, adapt, screen and detect one batch of files in memory; write Parquet into `folder`."""
    result = run_batch(files, settings, folder, known_hashes)
    megabytes = sum(f.size for f in files) / 1e6
    get_run_logger().info("batch %s staged: %d file(s), %.1f MB", label, len(files), megabytes)
    return result


@task(name="load-weave-render", cache_policy=NONE)
def finish_task(settings: Settings, folders: list[str], run: dict) -> dict:
    """Load the batches in one transaction, rebuild lessons, record the run, render the reports."""
    con = store.connect(settings.db, threads=settings.threads, memory_limit=settings.memory_limit)
    try:
        lessons.register_detectors(con, detectors.load_detectors(settings.detector_dirs))
        counts = store.load(con, folders, run["run_id"])
        skipped_unread = run["files_skipped"]
        run.update(asdict(counts))
        run["files_skipped"] = skipped_unread + counts.files_skipped
        run["lessons_new"], run["lessons_total"] = lessons.weave(con)
        run["finished_at"] = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        run["status"] = "completed"
        con.execute(
            """
            INSERT INTO runs BY NAME
            SELECT ?::VARCHAR AS run_id, ?::TIMESTAMP AS started_at, ?::TIMESTAMP AS finished_at,
                   ?::VARCHAR AS status, ?::VARCHAR[] AS inputs, ? AS files_seen, ? AS files_read,
                   ? AS files_skipped, ? AS records, ? AS records_loaded, ? AS records_quarantined,
                   ? AS records_rejected, ? AS traces_loaded, ? AS traces_duplicate, ? AS traces_quarantined,
                   ? AS events_loaded, ? AS unknown_event_types, ? AS detections, ? AS lessons_new,
                   ? AS lessons_total
            """,
            [run[k] for k in ("run_id", "started_at", "finished_at", "status", "inputs", "files_seen",
                              "files_read", "files_skipped", "records", "records_loaded",
                              "records_quarantined", "records_rejected", "traces_loaded", "traces_duplicate",
                              "traces_quarantined", "events_loaded", "unknown_event_types", "detections",
                              "lessons_new", "lessons_total")],
        )
        run["quarantine_reasons"] = dict(con.execute(
            "SELECT reason, count(*) FROM quarantine WHERE run_id = ? GROUP BY reason ORDER BY reason",
            [run["run_id"]]).fetchall())
        run["detections_by_detector"] = dict(con.execute(
            "SELECT detector, count(*) FROM detections WHERE run_id = ? GROUP BY detector ORDER BY detector",
            [run["run_id"]]).fetchall())
        run["written"] = render.render(con, run, settings.out, settings.templates)
    finally:
        con.close()
    return run


def new_run_id(now: dt.datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@flow(name="lessonweaver-nightly")
def nightly(
    paths: list[str] = [DEFAULT_INPUT],  # noqa: B006 - Prefect flow parameters must be plain JSON values
    db: str = DEFAULT_DB,
    out: str = DEFAULT_OUT,
    detector_dirs: list[str] = [],  # noqa: B006
    templates: str | None = None,
    format: str | None = None,
    pii: str = "redact",
) -> dict:
    """Run lessonweaver over `paths` into the database `db`, writing reports to `out`."""
    log = get_run_logger()
    settings = replace(Settings(), paths=tuple(paths), db=db, out=out, detector_dirs=tuple(detector_dirs),
                       templates=templates, format=format, pii=pii)
    # Fail fast, before reading anything, on a broken detector or adapter file.
    adapters.load_adapters()
    detector_list = detectors.load_detectors(settings.detector_dirs)
    started = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    run = {"run_id": new_run_id(started), "started_at": started, "inputs": list(paths),
           "detectors": [d.id for d in detector_list]}

    file_batches, seen, skipped, hashes, salt = discover_task(settings)
    settings = replace(settings, tenant_salt=salt)
    run.update(files_seen=seen, files_skipped=skipped)
    log.info("%d file(s) found, %d unchanged since an earlier run, %d batch(es) to stage",
             seen, skipped, len(file_batches))
    workdir = tempfile.mkdtemp(prefix="lessonweaver-")
    try:
        futures = [stage_batch_task.submit(batch, settings, f"{workdir}/batch-{i:05d}", hashes,
                                           f"{i + 1}/{len(file_batches)}")
                   for i, batch in enumerate(file_batches)]
        results = [f.result() for f in futures]
        run["detector_errors"] = {k: v for r in results for k, v in r.detector_errors.items()}
        for detector_id, message in sorted(run["detector_errors"].items()):
            log.error("detector %s failed and was skipped: %s", detector_id, message)
        return finish_task(settings, [r.folder for r in results], run)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
