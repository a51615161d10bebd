"""`lessonweaver backfill`: replay past nights from date folders (ROOT/YYYY-MM-DD/), oldest first.

Each folder is one nightly run with `night` set to the folder's date, so the lessons' lifecycle (new,
recurring, resolved, regressed) comes out as if lessonweaver had run every night. The flow is
`flows/backfill.py`; this module finds the folders and checks the options before Prefect starts.
"""

import argparse
import datetime as dt
import re
from pathlib import Path

from lessonweaver.config import DEFAULT_DB, DEFAULT_OUT

_DATE_NAME = re.compile(r"\d{4}-\d{2}-\d{2}")


def parse_date(text: str | None, option: str) -> dt.date | None:
    """A date given as exactly YYYY-MM-DD (fromisoformat alone also takes 20261101 and week dates)."""
    if text is None:
        return None
    try:
        if _DATE_NAME.fullmatch(text):
            return dt.date.fromisoformat(text)
    except ValueError:
        pass
    raise ValueError(f"{option} must be a date as YYYY-MM-DD, not '{text}'")


def night_folders(root: str, start: str | None = None, end: str | None = None) -> tuple[list[tuple[dt.date, str]], list[str]]:
    """The date folders under `root` within [start, end], oldest first, and the names of entries that
    are not date folders (left alone). Raises ValueError, in one line, when there is nothing to run."""
    first, last = parse_date(start, "--from"), parse_date(end, "--to")
    if first and last and first > last:
        raise ValueError(f"--from {first} is after --to {last}")
    folder = Path(root)
    if not folder.is_dir():
        raise ValueError(f"backfill root is not a folder: {root}")
    dated, ignored = [], []
    for entry in sorted(folder.iterdir()):
        night = None
        if entry.is_dir() and _DATE_NAME.fullmatch(entry.name):
            try:
                night = dt.date.fromisoformat(entry.name)
            except ValueError:
                pass
        if night is None:
            ignored.append(entry.name)
        else:
            dated.append((night, str(entry.resolve())))
    if not dated:
        raise ValueError(f"no date folders (YYYY-MM-DD) in {root}")
    kept = [(n, p) for n, p in dated if (first is None or n >= first) and (last is None or n <= last)]
    if not kept:
        raise ValueError(f"no date folders in {root} between {first or 'the first'} and {last or 'the last'} "
                         f"(it has {dated[0][0]} to {dated[-1][0]})")
    return kept, ignored


def add_parser(sub: "argparse._SubParsersAction") -> None:
    """The `backfill` subcommand."""
    p = sub.add_parser("backfill", help="run past nights from date folders ROOT/YYYY-MM-DD/, oldest first")
    p.add_argument("root", metavar="ROOT", help="a folder of date folders, one per night (YYYY-MM-DD)")
    p.add_argument("--from", dest="start", metavar="YYYY-MM-DD", help="first night to run (default: the oldest folder)")
    p.add_argument("--to", dest="end", metavar="YYYY-MM-DD", help="last night to run (default: the newest folder)")
    p.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default: {DEFAULT_OUT}/)")
    p.add_argument("--resolve-after", type=int, default=7, metavar="N",
                   help="nights without a sighting before a lesson is resolved (default: 7)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the summary and errors")
    p.set_defaults(func=cmd_backfill)


def cmd_backfill(args: argparse.Namespace) -> int:
    from lessonweaver import store
    from lessonweaver.cli import _prefect_defaults

    nights, _ = night_folders(args.root, args.start, args.end)
    if args.resolve_after < 1:
        raise ValueError("--resolve-after must be at least 1")
    store.connect(args.db).close()
    with store.run_lock(args.db):
        pass
    _prefect_defaults(args.quiet)
    from flows.backfill import backfill  # Prefect is slow to import

    runs = backfill(root=args.root, start=args.start, end=args.end, db=args.db, out=args.out,
                    resolve_after=args.resolve_after)
    for run in runs:
        statuses = run.get("lesson_statuses", {})
        print(f"night {run['night']}: run {run['run_id']}, {run['records_loaded']} records loaded "
              f"({run['records_quarantined']} quarantined, {run['records_rejected']} rejected), "
              f"{run['detections']} detections; lessons "
              + ", ".join(f"{statuses.get(s, 0)} {s}" for s in ("new", "regressed", "recurring", "resolved")))
    print(f"backfill:   {len(runs)} night(s), {nights[0][0]} to {nights[-1][0]}")
    print(f"database:   {args.db}")
    for path in runs[-1]["written"] if runs else []:
        print(f"report:     {path}")
    return 0
