"""The nightly lessonweaver flow: the pipeline's stages (lessonweaver/pipeline.py) as Prefect tasks.

`lessonweaver run` calls this flow, and so does a scheduled deployment. With no PREFECT_API_URL set,
Prefect runs it against a temporary local server; with one set, the run reports to that server. What
Prefect adds: a retry of a batch whose read met an error that may pass, the runs and logs in its UI,
and two artifacts per night. The parameters are the run options (lessonweaver/options.py), written out
because Prefect reads a deployment's parameters from this source.
"""

import os

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NONE
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from lessonweaver import artifacts, discover, options, pipeline, privacy, store
from lessonweaver.batch import BatchResult
from lessonweaver.config import DEFAULT_DB, DEFAULT_INPUT, DEFAULT_OUT, Settings
from lessonweaver.read import TransientReadError
from lessonweaver.summary import RunSummary


def _transient(task, task_run, state) -> bool:
    """Retry a batch only when reading met an error that may pass; a bad input will not get better."""
    return isinstance(state.data, TransientReadError)


discover_task = task(pipeline.plan, name="discover", cache_policy=NONE)
load_task = task(pipeline.load_and_weave, name="load-and-weave", cache_policy=NONE)


@task(name="stage-batch", cache_policy=NONE, retries=2, retry_delay_seconds=[2, 10], retry_condition_fn=_transient)
def stage_task(files: list[discover.InputFile], settings: Settings, folder: str, known_hashes: frozenset[str],
               label: str, only_traces: frozenset[str] | None = None) -> BatchResult:
    return pipeline.stage(files, settings, folder, known_hashes, label, only_traces, log=get_run_logger())


@task(name="render-and-audit", cache_policy=NONE)
def render_task(settings: Settings, run: RunSummary, folders: list[str]) -> RunSummary:
    return pipeline.render_and_audit(settings, run, folders, log=get_run_logger())


@task(name="publish-artifacts", cache_policy=NONE)
def artifacts_task(settings: Settings, run: RunSummary) -> None:
    """Show the night in the Prefect UI: a Markdown summary and a table of the top lessons, under stable
    keys so each night is a new version of the same two artifacts. Built like the reports (scrubbed, no
    quarantined or rejected content, one tenant's lessons with --tenant)."""
    con = store.connect(settings.db, read_only=True)
    try:
        tenant_key = privacy.tenant_hash(settings.tenant_salt, settings.tenant) if settings.tenant else None
        statuses = artifacts.lesson_statuses(con, tenant_key)
        top = artifacts.top_lessons(con, tenant_key)
    finally:
        con.close()
    create_markdown_artifact(artifacts.summary_markdown(run, statuses), key=artifacts.SUMMARY_KEY,
                             description=f"lessonweaver night {run.night}, run {run.run_id}")
    # With no lessons, empty columns keep the table's header.
    create_table_artifact(top or {c: [] for c in artifacts.TOP_LESSON_COLUMNS}, key=artifacts.TOP_LESSONS_KEY,
                          description=f"top {artifacts.TOP_LESSONS} lessons by priority, night {run.night}")


def task_runner(settings: Settings) -> TaskRunner:
    """Where stage-batch tasks run: a local thread pool, or a Dask cluster (through prefect-dask).

    Each batch opens its own in-memory DuckDB; batches staged at once on this machine share its cores
    and LESSONWEAVER_MEMORY_LIMIT (config.batch_threads, config.batch_memory_limit). On Dask, batches
    write their Parquet under --work-dir, which must then be storage every worker and this machine share.
    """
    if settings.runner == "threads":
        return ThreadPoolTaskRunner(max_workers=settings.workers)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ValueError("--runner dask needs prefect-dask: pip install 'lessonweaver[dask]'") from None
    if settings.dask_address:
        return DaskTaskRunner(address=settings.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": settings.workers, "threads_per_worker": 1, "processes": True})


def run_flow(settings: Settings) -> RunSummary:
    """The pipeline with each stage a task of the running flow."""
    pipeline.check(settings)
    with task_runner(settings) as runner:
        steps = pipeline.Steps(
            plan=discover_task, load=load_task, render=render_task, publish=artifacts_task,
            stage=lambda **parameters: runner.submit(stage_task, parameters=parameters))
        return pipeline.execute(settings, steps, get_run_logger())


@flow(name="lessonweaver-nightly", task_runner=ThreadPoolTaskRunner(max_workers=os.cpu_count() or 1))
def nightly(
    paths: list[str] = [DEFAULT_INPUT],  # noqa: B006 - Prefect flow parameters must be plain JSON values
    db: str = DEFAULT_DB,
    out: str = DEFAULT_OUT,
    detector_dirs: list[str] = [],  # noqa: B006
    templates: str | None = None,
    format: str | None = None,
    pii: str = "redact",
    secrets: str = "redact",
    tenant: str | None = None,
    runner: str = "threads",
    dask_address: str | None = None,
    workers: int = 0,
    batch_mb: float = 64.0,
    work_dir: str | None = None,
    night: str | None = None,
    resolve_after: int = 7,
    retain_days: int = 0,
    report_lessons: int = 25,
) -> RunSummary:
    """Run lessonweaver over `paths` into the database `db`, writing reports to `out`.

    `night` (YYYY-MM-DD, default: today in UTC) is the night the run counts for in the lessons'
    lifecycle; a lesson not seen for `resolve_after` nights is resolved. With `retain_days`, events of
    traces older than that many days are dropped after the load (lessons keep their counts). With `tenant`, the reports show
    that tenant's lessons only. `workers` batches (0: one per core) are staged at once, on threads or on
    a Dask cluster (`runner`, `dask_address`). The run ends with an audit of its rows and reports;
    reports that fail it are not published, and the run fails.
    """
    return run_flow(options.to_settings(options.values(locals(), options.RUN)))
