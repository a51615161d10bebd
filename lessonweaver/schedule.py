"""`lessonweaver schedule`: register the nightly flow as a scheduled deployment on a Prefect server.

The deployment runs `flows/nightly.py:nightly` from this installation's own source folder on a process
work pool, so a worker on this machine (`prefect worker start --pool lessonweaver`) runs it with the same
Python and packages. It is the deployment `flows/prefect.yaml` describes; registering it again updates it.
A temporary Prefect server cannot schedule anything, so a configured PREFECT_API_URL is required.
"""

from pathlib import Path
from typing import Any

from lessonweaver import options

FLOW_NAME = "lessonweaver-nightly"
ENTRYPOINT = "flows/nightly.py:nightly"
DEFAULT_CRON = "0 2 * * *"
DEFAULT_TIMEZONE = "UTC"
DEFAULT_POOL = "lessonweaver"
DEFAULT_NAME = "nightly"


class ScheduleError(ValueError):
    """The deployment cannot be registered: no server configured or reachable, a bad cron or timezone."""


def project_dir() -> Path:
    """The folder that holds `flows/` (beside this package, in a checkout and in a wheel alike): the
    deployment's source, which the worker runs from."""
    here = Path(__file__).resolve().parents[1]
    if not (here / ENTRYPOINT.split(":")[0]).is_file():
        raise ScheduleError(f"this installation has no {ENTRYPOINT.split(':')[0]} beside the lessonweaver package")
    return here


PATH_OPTIONS = ("db", "out", "templates", "work_dir")
ALWAYS = ("paths", "db", "out", "resolve_after")


def parameters(given: dict[str, Any]) -> dict[str, Any]:
    """The deployment's parameters: the run options, with every path absolute (the worker's working
    folder is the project, not here); an option left at its default is left out, so the flow's own
    default applies."""
    defaults = {o.name: o.default for o in options.options_for(options.SCHEDULE)}
    found = {k: v for k, v in given.items() if k in ALWAYS or v != defaults[k]}
    for name in PATH_OPTIONS:
        if found.get(name):
            found[name] = str(Path(found[name]).resolve())
    for name in ("paths", "detector_dirs"):
        if name in found:
            found[name] = [str(Path(p).resolve()) for p in found[name]]
    return found


def api_url() -> str:
    """The configured Prefect server; without one there is nothing that could keep a schedule."""
    from prefect.settings import PREFECT_API_URL

    url = PREFECT_API_URL.value()
    if not url:
        raise ScheduleError("no Prefect server configured: start one (`prefect server start`) and set "
                            "PREFECT_API_URL (e.g. http://127.0.0.1:4200/api); a temporary server cannot schedule runs")
    return url


def cron_schedule(cron: str, timezone: str) -> Any:
    """A Prefect cron schedule, checked here so a typo is one line, not a validation report."""
    from pydantic import ValidationError

    from prefect.client.schemas.schedules import CronSchedule

    try:
        return CronSchedule(cron=cron, timezone=timezone)
    except ValidationError as exc:
        message = str(exc.errors()[0].get("msg", "invalid schedule")).removeprefix("Value error, ")
        raise ScheduleError(message) from None


def ensure_process_pool(pool: str) -> bool:
    """Create the process work pool unless it exists; returns whether it was created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            found = client.read_work_pool(pool)
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=pool, type="process",
                                                   base_job_template=ProcessWorker.get_default_base_job_template()))
            return True
    if found.type != "process":
        raise ScheduleError(f"work pool '{pool}' is of type {found.type}, not process: choose another with --pool")
    return False


def register(given: dict[str, Any], cron: str = DEFAULT_CRON, timezone: str = DEFAULT_TIMEZONE,
             pool: str = DEFAULT_POOL, name: str = DEFAULT_NAME) -> dict[str, Any]:
    """Create or update the scheduled deployment; returns what was registered."""
    import httpx

    from prefect import flow
    from prefect.schedules import Cron

    url = api_url()
    checked = cron_schedule(cron, timezone)
    params = parameters(given)
    try:
        created = ensure_process_pool(pool)
        source = flow.from_source(source=str(project_dir()), entrypoint=ENTRYPOINT)
        deployment_id = source.deploy(name=name, work_pool_name=pool, parameters=params,
                                      schedules=[Cron(checked.cron, timezone=checked.timezone)],
                                      print_next_steps=False, ignore_warnings=True)
    except httpx.HTTPError as exc:
        raise ScheduleError(f"cannot reach the Prefect server at {url} ({exc.__class__.__name__}): "
                            "is `prefect server start` running?") from None
    return {"deployment": f"{FLOW_NAME}/{name}", "id": str(deployment_id), "api": url, "cron": checked.cron,
            "timezone": checked.timezone, "pool": pool, "pool_created": created, "parameters": params}
