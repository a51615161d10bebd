"""The backfill flow: replay past nights from date folders, one nightly run per folder, oldest first.

Each night runs the nightly flow as a subflow with `paths=[ROOT/YYYY-MM-DD]` and `night=YYYY-MM-DD`,
in date order and one at a time (each run holds the database), so lessons come out with the lifecycle
they would have had if lessonweaver had run every night. Folders whose name is not a date are left
alone, with a log line.
"""

from prefect import flow, get_run_logger

from flows.nightly import nightly
from lessonweaver.backfill import night_folders
from lessonweaver.config import DEFAULT_DB, DEFAULT_OUT


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
    batch_mb: float = 64,
    work_dir: str | None = None,
    resolve_after: int = 7,
) -> list[dict]:
    """Run the nightly flow for every date folder under `root` from `start` to `end` (YYYY-MM-DD,
    inclusive, both optional), oldest first; returns each night's run summary."""
    log = get_run_logger()
    nights, ignored = night_folders(root, start, end)
    for name in ignored:
        log.info("ignored %s: not a date folder (YYYY-MM-DD)", name)
    log.info("backfilling %d night(s): %s to %s", len(nights), nights[0][0], nights[-1][0])
    runs = []
    for night, folder in nights:
        runs.append(nightly(paths=[folder], db=db, out=out, detector_dirs=detector_dirs, templates=templates,
                            format=format, pii=pii, batch_mb=batch_mb, work_dir=work_dir,
                            night=night.isoformat(), resolve_after=resolve_after))
    return runs
