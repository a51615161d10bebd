"""The run options, declared once.

`run`, `backfill` and `schedule` take their options from this table, and it makes the run's Settings
from their values, whether they come from the command line, a flow's parameters or a deployment's.
The flows' signatures must list the same names with the same defaults (Prefect reads a deployment's
parameters from the flow's source, so they are written out there; tests/test_options.py holds them
to this table).
"""

import argparse
import os
from dataclasses import dataclass, replace
from typing import Any

from lessonweaver.config import DEFAULT_DB, DEFAULT_INPUT, DEFAULT_OUT, Settings

RUN, BACKFILL, SCHEDULE = "run", "backfill", "schedule"
DB_HELP = (f"database file (default: $LESSONWEAVER_DB, else db in the nearest lessonweaver.toml or pyproject.toml "
           f"[tool.lessonweaver], else {DEFAULT_DB})")
EVERYWHERE = (RUN, BACKFILL, SCHEDULE)


@dataclass(frozen=True)
class Option:
    name: str  # the flow parameter, and the Settings field it sets unless to_settings says otherwise
    flag: str  # empty: the positional PATH arguments
    help: str
    default: Any = None
    type: type = str
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    repeatable: bool = False
    commands: tuple[str, ...] = EVERYWHERE


OPTIONS: tuple[Option, ...] = (
    Option("paths", "", f"files or folders (recursive); default: {DEFAULT_INPUT}/", [DEFAULT_INPUT],
           metavar="PATH", repeatable=True, commands=(RUN, SCHEDULE)),
    Option("db", "--db", DB_HELP, DEFAULT_DB, metavar="FILE"),
    Option("out", "--out", f"report folder (default: {DEFAULT_OUT}/)", DEFAULT_OUT, metavar="DIR"),
    Option("detector_dirs", "--detectors", "a folder of your own detector .sql files (repeatable)", [],
           metavar="DIR", repeatable=True),
    Option("templates", "--templates", "a folder of templates used before the shipped ones", metavar="DIR"),
    Option("format", "--format", "read every file with this adapter instead of detecting each file's format "
           "(the names: `lessonweaver run --help`)", metavar="NAME"),
    Option("pii", "--pii", "personal data in untagged traces: redact it in place (default) or quarantine the trace",
           "redact", choices=("redact", "quarantine")),
    Option("secrets", "--secrets", "credentials in untagged traces: replace each value in place by a marker of its kind "
           "(default) or quarantine the trace", "redact", choices=("redact", "quarantine")),
    Option("tenant", "--tenant", "render the reports from this tenant's traces only", metavar="T"),
    Option("runner", "--runner", "where batches are staged: local threads (default) or a Dask cluster",
           "threads", choices=("threads", "dask")),
    Option("dask_address", "--dask-address", "the Dask scheduler to use (default with --runner dask: a local cluster)",
           metavar="tcp://HOST:PORT"),
    Option("workers", "--workers", "batches staged at once, sharing the cores and the memory limit "
           "(default: one per core)", 0, type=int, metavar="N"),
    Option("batch_mb", "--batch-mb", "input per batch (default: 64)", 64.0, type=float, metavar="MB"),
    Option("work_dir", "--work-dir", "where batches leave their results; must be shared with remote Dask workers",
           metavar="DIR"),
    Option("night", "--night", "the night this run counts for in the lessons' lifecycle, YYYY-MM-DD "
           "(default: today, UTC)", metavar="DATE", commands=(RUN,)),
    Option("resolve_after", "--resolve-after", "nights without a sighting before a lesson is resolved (default: 7)",
           7, type=int, metavar="N"),
    Option("retain_days", "--retain-days", "after each load, drop the events of traces older than N days; traces, "
           "detections and lessons stay (default: 0, keep every event)", 0, type=int, metavar="N"),
    Option("report_lessons", "--report-lessons", "lessons the Markdown and HTML reports list, highest priority first "
           "(default: 25; lessons.jsonl and `lessonweaver review` have all)", 25, type=int, metavar="N"),
)


def options_for(command: str) -> tuple[Option, ...]:
    return tuple(o for o in OPTIONS if command in o.commands)


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the options `command` takes to its parser."""
    for o in options_for(command):
        if not o.flag:
            parser.add_argument(o.name, nargs="*", metavar=o.metavar, help=o.help)
            continue
        kwargs: dict[str, Any] = {"dest": o.name, "help": o.help, "metavar": o.metavar}
        if o.repeatable:
            kwargs.update(action="append", default=[])
        else:
            # the database is chosen after parsing, from --db, the variable or the project (project.database)
            kwargs.update(default=None if o.name == "db" else o.default, type=o.type, choices=o.choices)
        parser.add_argument(o.flag, **kwargs)


def values(args: argparse.Namespace | dict[str, Any], command: str) -> dict[str, Any]:
    """The options' values for `command`, from parsed arguments or a flow's parameters; an empty PATH
    list, or no database (the CLI chooses one first: project.database), means the default."""
    given = vars(args) if isinstance(args, argparse.Namespace) else args
    found = {o.name: given.get(o.name, o.default) for o in options_for(command)}
    if "paths" in found and not found["paths"]:
        found["paths"] = [DEFAULT_INPUT]
    if found.get("db") is None:
        found["db"] = DEFAULT_DB
    return found


def to_settings(found: dict[str, Any], base: Settings | None = None) -> Settings:
    """Settings from option values (a missing one keeps its default)."""
    v = {o.name: o.default for o in OPTIONS} | found
    if v["workers"] is None or v["workers"] < 0:
        raise ValueError("--workers must be at least 1 (or 0: one per core)")
    if v["batch_mb"] is None or v["batch_mb"] <= 0:
        raise ValueError("--batch-mb must be more than 0")
    if v["retain_days"] is None or v["retain_days"] < 0:
        raise ValueError("--retain-days must be 0 (keep every event) or more")
    if v["report_lessons"] is None or v["report_lessons"] < 1:
        raise ValueError("--report-lessons must be at least 1")
    return replace(
        base or Settings(),
        paths=tuple(v["paths"]), db=v["db"], out=v["out"], detector_dirs=tuple(v["detector_dirs"]),
        templates=v["templates"], format=v["format"], pii=v["pii"], secrets=v["secrets"], tenant=v["tenant"], runner=v["runner"],
        dask_address=v["dask_address"], workers=v["workers"] or os.cpu_count() or 1,
        shared_machine=not v["dask_address"], batch_bytes=int(v["batch_mb"] * 1024 * 1024),
        work_dir=v["work_dir"], night=v["night"], resolve_after=v["resolve_after"], retain_days=v["retain_days"],
        report_lessons=v["report_lessons"])
