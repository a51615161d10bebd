"""`lessonweaver backfill`: replay past nights from date folders (ROOT/YYYY-MM-DD/), oldest first.

Each folder is one nightly run with `night` set to the folder's date, so the lessons' lifecycle (new,
recurring, resolved, regressed) comes out as if lessonweaver had run every night. The flow is
`flows/backfill.py` (`--no-prefect`: commands.cmd_backfill); this module finds the folders.
"""

import datetime as dt
import re
from pathlib import Path

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
