"""The backfill flow: replay past nights from date folders, one nightly run per folder, oldest first.

Each night runs the nightly flow as a subflow with `paths=[ROOT/YYYY-MM-DD]` and `night=YYYY-MM-DD`,
in date order and one at a time (each run holds the database), so lessons come out with the lifecycle
they would have had if lessonweaver had run every night. The parameters beyond root, start and end are
the run options (lessonweaver/options.py).
"""

from prefect import flow, get_run_logger

from flows.nightly import nightly
from lessonweaver import backfill as nights
from lessonweaver import options
from lessonweaver.config import DEFAULT_DB, DEFAULT_OUT
from lessonweaver.summary import RunSummary
from lessonweaver.words import plural


@flow(name="lessonweaver-backfill")
def backfill(
    root: str,
    start: str | None = None,
    end: str | None = None,
    db: str = DEFAULT_DB,
    out: str = DEFAULT_OUT,
    detector_dirs: list[str] = [],  # noqa: B006 - Prefect flow parameters must be plain JSON values
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
    resolve_after: int = 7,
    retain_days: int = 0,
    report_lessons: int = 25,
) -> list[RunSummary]:
    """Run the nightly flow for every date folder under `root` from `start` to `end` (YYYY-MM-DD,
    inclusive, both optional), oldest first; returns each night's run summary."""
    given = options.values(locals(), options.BACKFILL)
    log = get_run_logger()
    found, ignored = nights.night_folders(root, start, end)
    for name in ignored:
        log.info("ignored %s: not a date folder (YYYY-MM-DD)", name)
    log.info("backfilling %s: %s to %s", plural(len(found), "night"), found[0][0], found[-1][0])
    return [nightly(paths=[folder], night=night.isoformat(), **given) for night, folder in found]
