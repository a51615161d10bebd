"""Explore: read-only SQL over the lessonweaver database, for `lessonweaver sql` and for notebooks.

Readers and the nightly run never wait for each other: a run writes a copy of the database and renames
it into place when it ends (store.writing), so a reader sees the database as the last run (or review)
left it, never one half-written, and may keep it open as long as it likes. Each query here still opens
a fresh read-only connection and closes it once its rows are fetched, so that a handle kept in a
notebook sees each new run's rows at its next query.
"""

import os
import sys
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

import duckdb

from lessonweaver import examples, store
from lessonweaver.config import DEFAULT_DB
from lessonweaver.lessons import STATUSES
from lessonweaver.store import StoreError

if TYPE_CHECKING:
    import polars as pl

FORMATS = ("table", "csv", "json")
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
            "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL")
_RESULT = "lw_result"  # the name a fetched result goes by while it is formatted


class QueryError(RuntimeError):
    """A query failed (bad SQL, a write refused): one line, safe to print. `results` holds those of the
    statements before it, so they are shown too."""

    def __init__(self, message: str, results: "list[Result] | None" = None) -> None:
        super().__init__(message)
        self.results = results or []


@contextmanager
def read_only(db: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for one query, closed on leaving: a reader never holds the file for long."""
    if not os.path.exists(db):
        raise StoreError(f"no database at {db} (run `lessonweaver run` first)")
    con = store.connect(db, read_only=True)
    try:
        yield con
    finally:
        con.close()


def _failure(exc: duckdb.Error, statement: str = "") -> QueryError:
    from lessonweaver.errors import safe_error

    if "read-only mode" in str(exc):
        kind = statement or "this"
        return QueryError(f"the database is open read-only: {kind} statements are refused")
    return QueryError(safe_error(exc))


@dataclass
class Result:
    """One statement's rows, fetched: names, DuckDB types, and the rows as text (table) or a document."""

    columns: list[str]
    types: list[str]
    text: str  # the formatted output


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cell(value: str | None, limit: int) -> str:
    if value is None:
        return "NULL"
    text = value.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    if limit and _width(text) > limit:
        text = text[:limit]
        while _width(text) > limit - 1:
            text = text[:-1]
        text = text.rstrip() + "…"
    return text


def format_table(columns: list[str], types: list[str], rows: list[tuple], max_width: int = 80) -> str:
    """Aligned columns under a header and a rule, numbers right-aligned, a `(N rows)` footer; cells on one
    line (newlines shown as \\n) and cut to `max_width` characters (0: never cut)."""
    cells = [[_cell(v, max_width) for v in row] for row in rows]
    heads = [_cell(c, max_width) for c in columns]
    widths = [max([_width(h)] + [_width(r[i]) for r in cells]) for i, h in enumerate(heads)]
    right = [t.upper().startswith(_NUMERIC) for t in types]

    def line(values: list[str]) -> str:
        parts = []
        for value, width, r in zip(values, widths, right):
            pad = " " * (width - _width(value))
            parts.append(pad + value if r else value + pad)
        return "  ".join(parts).rstrip()

    out = [line(heads), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'' if len(rows) == 1 else 's'})")
    return "\n".join(out)


def _fetch(rel: duckdb.DuckDBPyRelation, fmt: str, max_width: int) -> Result:
    """Format one statement's result: every value cast to text by DuckDB for table and csv (lists as
    `[a, b]`), and DuckDB's own to_json for json, so JSON columns stay JSON and numbers stay numbers."""
    columns, types = list(rel.columns), [str(t) for t in rel.types]
    if fmt == "json":
        (doc,) = rel.query(_RESULT, f"SELECT to_json(list({_RESULT})) FROM {_RESULT}").fetchall()[0]
        return Result(columns, types, doc or "[]")
    as_text = rel.query(_RESULT, f"SELECT CAST(COLUMNS(*) AS VARCHAR) FROM {_RESULT}")
    if fmt == "csv":
        return Result(columns, types, as_text.pl().write_csv().rstrip("\n"))
    return Result(columns, types, format_table(columns, types, as_text.fetchall(), max_width))


def split(sql: str) -> list[duckdb.Statement]:
    """The statements of a query text; a syntax error is a QueryError."""
    try:
        return duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise _failure(exc) from None


def run(db: str, sql: str, fmt: str = "table", max_width: int = 80,
        params: dict[str, str | None] | None = None) -> list[Result]:
    """Run every statement of `sql` on one fresh read-only connection, each with the `params` (`$name`)
    it uses; the results of those that return rows, formatted. The connection is closed before anything
    is printed."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    statements = split(sql)
    if not statements:
        return []
    results = []
    with read_only(db) as con:
        for statement in statements:
            try:
                named = {p: (params or {}).get(p) for p in statement.named_parameters}
                rel = con.sql(statement.query, params=named or None)  # runs at once unless it is a query
                kinds = statement.expected_result_type
                if (rel is not None and duckdb.ExpectedResultType.QUERY_RESULT in kinds
                        and duckdb.ExpectedResultType.CHANGED_ROWS not in kinds):  # not a row count
                    results.append(_fetch(rel, fmt, max_width))
            except duckdb.Error as exc:
                failure = _failure(exc, statement.type.name)
                failure.results = results
                raise failure from None
    return results


def _emit(results: list[Result], fmt: str, out: IO[str]) -> None:
    """Results one after another: a blank line between tables or CSV blocks, one JSON array a line."""
    for i, result in enumerate(results):
        if i and fmt != "json":
            out.write("\n")
        out.write(result.text + "\n")
    out.flush()


def main(db: str, query: str | None, file: str | None, fmt: str = "table", max_width: int = 80,
         stdin: IO[str] | None = None, out: IO[str] | None = None, err: IO[str] | None = None,
         params: list[str] | None = None) -> int:
    """`lessonweaver sql`: a query or a file (with `params`, NAME=VALUE each, for its `$name`s), or
    (with neither) a prompt. Returns the exit status: 0 done, 1 a query failed; database and usage
    problems raise StoreError / ValueError (status 2)."""
    out, err = out or sys.stdout, err or sys.stderr
    if query is not None and file is not None:
        raise ValueError("give a QUERY or --file, not both")
    if max_width < 0:
        raise ValueError("--max-width must be 0 (no limit) or more")
    declared: tuple[examples.Parameter, ...] = ()
    if file is not None:
        query, declared = examples.read(file)
    if query is None:
        if params:
            raise ValueError("--param goes with a QUERY or --file")
        return prompt(db, fmt, max_width, stdin or sys.stdin, out, err)
    try:
        values = examples.bind(split(query), declared, params or [])
        _emit(run(db, query, fmt, max_width, values), fmt, out)
    except QueryError as exc:
        _emit(exc.results, fmt, out)
        print(f"lessonweaver: error: {exc}", file=err)
        return 1
    return 0


def prompt(db: str, fmt: str = "table", max_width: int = 80, stdin: IO[str] | None = None,
           out: IO[str] | None = None, err: IO[str] | None = None) -> int:
    """Read `;`-terminated statements from stdin and run each on its own connection, until `.quit` or
    end of input. On a terminal it prompts; piped, it prints results only. Returns 1 if any failed."""
    stdin, out, err = stdin or sys.stdin, out or sys.stdout, err or sys.stderr
    if not os.path.exists(db):
        raise StoreError(f"no database at {db} (run `lessonweaver run` first)")
    if fmt not in FORMATS:
        raise ValueError(f"unknown format '{fmt}' (known: {', '.join(FORMATS)})")
    tty = stdin is sys.stdin and stdin.isatty()
    if tty:
        import readline  # noqa: F401 - line editing and history for input()

        print(f"lessonweaver sql on {db} (read-only). End statements with ';'; .tables lists tables, "
              ".quit leaves. Each statement runs on its own connection: SET and TEMP objects do not carry over.",
              file=err)
    session = _Session(db, fmt, max_width, out, err)
    buffer: list[str] = []
    for line in _typed_lines(stdin, tty, err, buffer):
        stripped = line.strip()
        if not buffer and stripped in (".quit", ".exit", "\\q"):
            break
        if not buffer and stripped == ".tables":
            session.execute("SELECT name FROM (SHOW TABLES) ORDER BY name")
            continue
        if not buffer and not stripped:
            continue
        buffer.append(line.rstrip("\n"))
        if stripped.endswith(";"):
            session.execute("\n".join(buffer))
            buffer.clear()
    if "".join(buffer).strip():
        session.execute("\n".join(buffer))
    return 1 if session.failed else 0


def _typed_lines(stdin: IO[str], tty: bool, err: IO[str], buffer: list[str]) -> Iterator[str]:
    """The lines of the prompt's input until its end: typed after `lw> ` (`..> ` while `buffer` holds
    part of a statement, which Ctrl-C drops), or piped in."""
    while True:
        if not tty:
            line = stdin.readline()
            if not line:  # end of input
                return
            yield line
            continue
        try:
            yield input("lw> " if not buffer else "..> ") + "\n"
        except EOFError:
            print(file=err)
            return
        except KeyboardInterrupt:  # drop what was typed, stay at the prompt
            print(file=err)
            buffer.clear()


class _Session:
    """The prompt's statements, each run on its own connection and shown; remembers whether any failed."""

    def __init__(self, db: str, fmt: str, max_width: int, out: IO[str], err: IO[str]) -> None:
        self.db, self.fmt, self.max_width, self.out, self.err = db, fmt, max_width, out, err
        self.failed = self.shown = False

    def execute(self, text: str) -> None:
        results: list[Result] = []
        error = None
        try:
            results = run(self.db, text, self.fmt, self.max_width)
        except (QueryError, StoreError) as exc:
            results, error = getattr(exc, "results", []), exc
        if results and self.shown and self.fmt != "json":
            self.out.write("\n")  # a blank line between one statement's output and the next
        _emit(results, self.fmt, self.out)
        self.shown = self.shown or bool(results)
        if error is not None:
            self.failed = True
            print(f"lessonweaver: error: {error}", file=self.err)


class Lessonweaver:
    """A read-only handle on a lessonweaver database for notebooks: queries come back as polars
    DataFrames. It holds no connection between calls, so a nightly run can write while it exists."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = str(path)
        if not os.path.exists(self.path):
            raise StoreError(f"no database at {self.path} (run `lessonweaver run` first)")

    def __repr__(self) -> str:
        return f"lessonweaver.open({self.path!r})"

    @contextmanager
    def connection(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A raw read-only DuckDB connection, closed on leaving the block; keep the block short, since a
        run cannot open the database while it is open."""
        with read_only(self.path) as con:
            yield con

    def sql(self, query: str, params: list | dict | None = None) -> "pl.DataFrame":
        """Run one query (with `?` or `$name` parameters) and return its rows."""
        import polars as pl

        with self.connection() as con:
            rel = con.sql(query, params=params)
            return rel.pl() if rel is not None else pl.DataFrame()

    def lessons(self, status: str | None = None) -> "pl.DataFrame":
        """Lessons, highest priority first; only those with `status` (new, regressed, recurring, open, resolved)."""
        if status is not None and status not in STATUSES:
            raise ValueError(f"unknown status '{status}' (known: {', '.join(STATUSES)})")
        return self.sql("SELECT * FROM lessons WHERE $status IS NULL OR status = $status "
                        "ORDER BY priority DESC NULLS LAST, lesson_id", {"status": status})

    def trend(self, lesson_id: str | None = None) -> "pl.DataFrame":
        """Occurrences per night, of one lesson or of every lesson (the lesson_trend view)."""
        return self.sql("SELECT * FROM lesson_trend WHERE $id IS NULL OR lesson_id = $id "
                        "ORDER BY night, lesson_id", {"id": lesson_id})

    def detections(self, detector: str | None = None) -> "pl.DataFrame":
        """Detections with the source and task of their trace; only `detector`'s when given."""
        return self.sql("SELECT d.*, t.source, t.task FROM detections d JOIN traces t USING (trace_id) "
                        "WHERE $detector IS NULL OR d.detector = $detector "
                        "ORDER BY d.detected_at, d.trace_id, d.seq NULLS FIRST, d.detector",
                        {"detector": detector})

    def timeline(self, trace_id: str) -> "pl.DataFrame":
        """One trace event by event, with the detectors that flagged it (the trace_timeline view)."""
        return self.sql("SELECT * FROM trace_timeline WHERE trace_id = ? ORDER BY seq", [trace_id])


def open(path: str | os.PathLike = DEFAULT_DB) -> Lessonweaver:  # noqa: A001 - lessonweaver.open
    """Open a lessonweaver database read-only for exploration (see Lessonweaver)."""
    return Lessonweaver(path)
