"""The shipped example queries (sql/examples/) and the named parameters `lessonweaver sql` binds.

An example's header says what it answers and what it takes:

    -- title: Top lessons by priority
    -- description: The lesson candidates to read first ...
    -- columns: lesson_id, status, ...
    -- parameters: $limit = 20: how many lessons; $status: only lessons with this status (default: every status)

A query names a parameter as a DuckDB prepared statement does (`$limit`), and `--param limit=5` gives it
a value instead of an edit of the file. Values are bound as text; a query casts them where it needs a
number or a date (`$limit::INTEGER`). A declared parameter with no default and no value is NULL.
"""

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.resources import sql_path
from lessonweaver.sqlfile import parse_sql, read_sql_file
from lessonweaver.words import plural

_PARAMETER = re.compile(r"^\$(\w+)\s*(?:=\s*([^:]*?)\s*)?:\s*(.+)$")


@dataclass(frozen=True)
class Parameter:
    name: str
    default: str | None  # None: NULL
    what: str


@dataclass(frozen=True)
class Example:
    name: str
    title: str
    description: str
    parameters: tuple[Parameter, ...]


def declared(header: dict[str, str], where: str) -> tuple[Parameter, ...]:
    """The parameters a header's `parameters:` line declares (`$name [= default]: what`, `;` between)."""
    found = []
    for entry in filter(None, (e.strip() for e in header.get("parameters", "").split(";"))):
        match = _PARAMETER.match(entry)
        if not match:
            raise ValueError(f"{where}: a parameter is declared as '$name = default: what', not '{entry}'")
        found.append(Parameter(match[1], match[2] or None, match[3]))
    return tuple(found)


def find(name: str) -> Path:
    """A .sql file by path, or a shipped example by name (`top_lessons` or `top_lessons.sql`)."""
    folder = sql_path("examples")
    for candidate in (Path(name), folder / name, folder / f"{name}.sql"):
        if candidate.is_file():
            return candidate
    raise ValueError(f"no SQL file at {name} (the shipped examples: lessonweaver sql --examples)")


def read(name: str) -> tuple[str, tuple[Parameter, ...]]:
    """The text of a .sql file or shipped example, and the parameters its header declares."""
    path = find(name)
    text = path.read_text(encoding="utf-8")
    header = parse_sql(text, path).header if text.lstrip().startswith("--") else {}
    return text, declared(header, str(path))


def shipped() -> list[Example]:
    """The examples in sql/examples/, by name."""
    found = []
    for path in sorted(sql_path("examples").glob("*.sql")):
        header = read_sql_file(path).header
        found.append(Example(path.stem, header.get("title", ""), header.get("description", ""),
                             declared(header, str(path))))
    return found


def bind(statements: list[duckdb.Statement], parameters: tuple[Parameter, ...], given: list[str]) -> dict[str, str | None]:
    """The value of each `$name` the statements use: `given` as NAME=VALUE, else the declared default.
    A value for a parameter the query does not use, or a parameter with neither, is one clear line."""
    used = sorted({p for s in statements for p in s.named_parameters})
    values: dict[str, str | None] = {p.name: p.default for p in parameters}
    for item in given:
        name, sep, value = item.partition("=")
        name = name.strip().removeprefix("$")
        if not sep or not name:
            raise ValueError(f"--param takes NAME=VALUE, not '{item}'")
        if name not in used:
            takes = ", ".join(f"${p}" for p in used) or "none"
            raise ValueError(f"the query has no parameter ${name} (its parameters: {takes})")
        values[name] = value
    missing = [p for p in used if p not in values]
    if missing:
        raise ValueError(f"the query needs a value for ${missing[0]}: --param {missing[0]}=VALUE")
    return {p: values[p] for p in used}


def listing(found: list[Example]) -> str:
    """`lessonweaver sql --examples`: each example, what it answers, and its parameters."""
    width = max((len(e.name) for e in found), default=0) + 2
    lines = []
    for e in found:
        lines.append(f"{e.name:<{width}}{e.title}: {e.description}")
        lines += [f"{'':<{width}}  --param {p.name}=" + (p.default or "VALUE") + f"  {p.what}" for p in e.parameters]
    lines.append(f"({plural(len(found), 'example')} in sql/examples/; "
                 "run one with: lessonweaver sql --file NAME [--param NAME=VALUE ...])")
    return "\n".join(lines)
