"""`lessonweaver schedule`: register the nightly flow as a scheduled deployment on a Prefect server.

The deployment runs `flows/nightly.py:nightly` from this installation's own source folder on a process
work pool, so a worker on this machine (`prefect worker start --pool lessonweaver`) runs it with the same
Python and packages. It is the deployment `flows/prefect.yaml` describes; registering it again updates it.
A temporary Prefect server cannot schedule anything, so a configured PREFECT_API_URL is required.
"""

import argparse
from pathlib import Path
from typing import Any

from lessonweaver.config import DEFAULT_DB, DEFAULT_INPUT, DEFAULT_OUT

FLOW_NAME = "lessonweaver-nightly"
ENTRYPOINT = "flows/nightly.py:nightly"
DEFAULT_CRON = "0 2 * * *"
DEFAULT_TIMEZONE = "UTC"
DEFAULT_POOL = "lessonweaver"
DEFAULT_NAME = "nightly"


class ScheduleError(ValueError):
    """The deployment cannot be registered: no server configured or reachable, a bad cron or timezone."""


def project_dir() -> Path:
    """The folder that holds `flows/`: the deployment's source, which the worker runs from."""
    import flows.nightly

    return Path(flows.nightly.__file__).resolve().parents[1]


def parameters(paths: list[str], db: str, out: str, resolve_after: int) -> dict[str, Any]:
    """The run's parameters with every path absolute: the worker's working folder is the project, not here."""
    return {"paths": [str(Path(p).resolve()) for p in paths], "db": str(Path(db).resolve()),
            "out": str(Path(out).resolve()), "resolve_after": resolve_after}


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


def register(paths: list[str], db: str, out: str, cron: str = DEFAULT_CRON, timezone: str = DEFAULT_TIMEZONE,
             pool: str = DEFAULT_POOL, name: str = DEFAULT_NAME, resolve_after: int = 7) -> dict[str, Any]:
    """Create or update the scheduled deployment; returns what was registered."""
    import httpx

    from prefect import flow
    from prefect.schedules import Cron

    url = api_url()
    checked = cron_schedule(cron, timezone)
    params = parameters(paths, db, out, resolve_after)
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


def add_parser(sub: "argparse._SubParsersAction") -> None:
    """The `schedule` subcommand."""
    p = sub.add_parser("schedule",
                       help="register the nightly run as a scheduled Prefect deployment (needs PREFECT_API_URL)")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help=f"files or folders each run reads; default: {DEFAULT_INPUT}/")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default: {DEFAULT_OUT}/)")
    p.add_argument("--cron", default=DEFAULT_CRON, help=f"when to run (default: '{DEFAULT_CRON}')")
    p.add_argument("--timezone", default=DEFAULT_TIMEZONE,
                   help=f"the cron's time zone, IANA name (default: {DEFAULT_TIMEZONE})")
    p.add_argument("--pool", default=DEFAULT_POOL,
                   help=f"process work pool, created if missing (default: {DEFAULT_POOL})")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"deployment name (default: {DEFAULT_NAME})")
    p.add_argument("--resolve-after", type=int, default=7, metavar="N",
                   help="nights without a sighting before a lesson is resolved (default: 7)")
    p.set_defaults(func=cmd_schedule)


def cmd_schedule(args: argparse.Namespace) -> int:
    from lessonweaver.cli import _prefect_defaults

    paths = args.paths or [DEFAULT_INPUT]
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise ScheduleError(f"path does not exist: {missing[0]}")
    if args.resolve_after < 1:
        raise ScheduleError("--resolve-after must be at least 1")
    _prefect_defaults(quiet=True)
    done = register(paths, args.db, args.out, args.cron, args.timezone, args.pool, args.name, args.resolve_after)
    p = done["parameters"]
    print(f"deployment {done['deployment']} ({done['id']}) registered on {done['api']}")
    print(f"schedule:   {done['cron']} ({done['timezone']})")
    print(f"work pool:  {done['pool']} (process{', created' if done['pool_created'] else ''})")
    print(f"inputs:     {' '.join(p['paths'])}")
    print(f"database:   {p['db']}")
    print(f"reports:    {p['out']}")
    print(f"start a worker:  prefect worker start --pool {done['pool']}")
    print(f"run it now:      prefect deployment run {done['deployment']}")
    return 0
