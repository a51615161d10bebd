"""Which database a command uses when no `--db` names one.

A team keeps its database in one place and runs lessonweaver from anywhere in its project, so the
choice is made once: `--db` on the command line, else the LESSONWEAVER_DB variable, else the project's
setting, else lessonweaver.duckdb in the current folder. The project's setting is the `db` key of a
`lessonweaver.toml`, or of the `[tool.lessonweaver]` table of a `pyproject.toml`, in the current folder
or the nearest folder above it that has one (as ruff and pytest find theirs); in one folder
lessonweaver.toml comes first, and a pyproject.toml without the table is passed over. A relative path
in the file is relative to the file's folder, so every folder of the project finds the same database.
"""

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lessonweaver.config import DEFAULT_DB

ENV_DB = "LESSONWEAVER_DB"
SETTINGS_FILE = "lessonweaver.toml"
KEYS = frozenset({"db"})


class SettingsFileError(ValueError):
    """The project's settings file cannot be read: names the file and the reason (a usage error)."""


@dataclass(frozen=True)
class Database:
    path: str
    source: str  # where the choice came from: '--db', the variable, a settings file, or 'default'


def settings_file(start: Path) -> tuple[Path, dict] | None:
    """The nearest settings file at or above `start`, with its lessonweaver settings; None without one."""
    for folder in (start, *start.parents):
        own = folder / SETTINGS_FILE
        if own.is_file():
            return own, _table(own, _read(own))
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            table = _read(pyproject).get("tool", {}).get("lessonweaver")
            if table is not None:
                return pyproject, _table(pyproject, table, "[tool.lessonweaver]")
    return None


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(f"{path} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsFileError(f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else exc}") from None


def _table(path: Path, table: object, where: str = "") -> dict:
    """The settings, checked: a known key with a text value, so a typo is told rather than ignored."""
    place = f"{path} {where}".strip()
    if not isinstance(table, dict):
        raise SettingsFileError(f"{place}: lessonweaver's settings must be a table of keys")
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise SettingsFileError(f"{place}: unknown setting {', '.join(unknown)} (known: {', '.join(sorted(KEYS))})")
    if "db" in table and not (isinstance(table["db"], str) and table["db"].strip()):
        raise SettingsFileError(f"{place}: db must be a path in quotes, such as db = \"lessonweaver.duckdb\"")
    return table


def _shown(path: Path, cwd: Path) -> str:
    """A path as a person reads it: relative when it is under the current folder, else absolute."""
    return str(path.relative_to(cwd)) if path.is_relative_to(cwd) else str(path)


def database(given: str | None, cwd: Path | None = None) -> Database:
    """The database a command uses: `given` (--db), else the variable, else the project's setting, else
    the default. The settings file is read only when it decides."""
    if given is not None:
        return Database(given, "--db")
    if os.environ.get(ENV_DB, "").strip():
        return Database(os.environ[ENV_DB].strip(), ENV_DB)
    cwd = (cwd or Path.cwd()).resolve()
    found = settings_file(cwd)
    if found is not None and "db" in found[1]:
        path, table = found
        return Database(_shown(Path(os.path.normpath(path.parent / os.path.expanduser(table["db"]))), cwd), str(path))
    return Database(DEFAULT_DB, "default")


def db_option(db: str) -> str:
    """` --db DB` for a command a report or a message tells a person to type, when DB is not the default."""
    import shlex

    return "" if db == DEFAULT_DB else f" --db {shlex.quote(db)}"
