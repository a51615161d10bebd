"""Adapt: give each file a format and map its records onto canonical traces and events.

An adapter is a SQL script, `sql/adapters/<format>.sql`, whose header names the format, a `match`
expression over a record's JSON (`doc`) and the `roles` of its producer: what is written in each role and
who wrote it (the person, a counterpart, the harness, a parent agent, the agent, a tool), read from the
producer's source and real files. Who acted in an event (events.actor) follows from them. A file's format is the one most of its records match (or the
one forced with --format). The script reads the view `records_in` (that format's records) and inserts
into the staging tables of sql/staging.sql (the contract; docs/formats.md explains it).
"""

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.queries import execute, query
from lessonweaver.resources import sql_path
from lessonweaver.sqlfile import SqlFile, SqlFileError, read_sql_file

_NAME = re.compile(r"^[a-z0-9_-]+$")
SNIFF_RECORDS = 50  # a file's format is decided by its first records; the adapter judges every record


@dataclass(frozen=True)
class Adapter:
    format: str
    title: str
    match: str
    priority: int
    sql: SqlFile
    gathers: bool = False  # a trace is gathered from many records (and files), so its parts may be split
    # SQL over a record's `doc`: does this record hold a whole trace? (a file whose first record does can be
    # cut at line ends). Default: every record of a format that does not gather.
    whole: str = ""
    roles: str = ""  # what its producer writes in each role, and who wrote it (the header's `roles`)

    @property
    def whole_sql(self) -> str:
        return self.whole or ("false" if self.gathers else "true")


def load_adapters(folder: Path | None = None) -> list[Adapter]:
    """The adapters in `folder` (default: the shipped sql/adapters), highest priority first."""
    folder = folder or sql_path("adapters")
    adapters = []
    for path in sorted(Path(folder).glob("*.sql")):
        f = read_sql_file(path)
        f.require("format", "title", "match")
        if not f.header.get("roles"):
            raise SqlFileError(f"{path}: header is missing roles: say what the producer writes in each role and who "
                               "wrote it (e.g. `-- roles: user = human (typed prompts), harness (tool output); "
                               "assistant = agent`), from the producer's source")
        if not _NAME.match(f.header["format"]):
            raise SqlFileError(f"{path}: format must be lowercase letters, digits, '-' or '_'")
        try:
            priority = int(f.header.get("priority", "0"))
        except ValueError as exc:
            raise SqlFileError(f"{path}: priority must be a whole number") from exc
        gathers = f.header.get("gathers", "no").strip().lower() in ("yes", "true")
        adapters.append(Adapter(f.header["format"], f.header["title"], f.header["match"], priority, f, gathers,
                                f.header.get("whole", ""), f.header["roles"]))
    ranked = sorted(adapters, key=lambda a: (-a.priority, a.format))
    for a, b in zip(ranked, ranked[1:]):
        if a.priority == b.priority:  # then the order of matching would hang on the names
            raise SqlFileError(f"adapters {a.format} and {b.format} both have priority {a.priority}: "
                               f"give each its own ({a.sql.path}, {b.sql.path})")
    return ranked


def one_trace_per_line(path: str, adapters: list[Adapter], forced: str | None = None) -> bool:
    """Is this a file whose every line is a whole trace (a format that does not gather, or a record its
    adapter's `whole` expression accepts)? Judged by its first line; such a file can be cut at any line end
    and staged in parts."""
    if forced:
        adapters = [a for a in adapters if a.format == forced]
        if not adapters[0].whole:
            return not adapters[0].gathers
    first = b""
    try:
        with open(path, "rb") as fh:
            while not first.strip():
                first = fh.readline(16 * 1024 * 1024)
                if not first:
                    return False
    except OSError:  # reading it later says why
        return False
    con = duckdb.connect(config={"threads": 1})
    try:
        con.execute(query("macros.sql"))
        cases = " ".join(f"WHEN ({'true' if forced else a.match}) THEN ({a.whole_sql})" for a in adapters)
        row = con.execute(
            f"""
            SELECT CASE WHEN json_type(doc) = 'OBJECT' THEN (CASE {cases} ELSE false END) ELSE false END
            FROM (SELECT CASE WHEN json_valid(t) THEN t::JSON END AS doc FROM (SELECT ?::VARCHAR AS t))
            """, [first.decode("utf-8", "replace").lstrip("\ufeff")]).fetchall()
        return bool(row[0][0])
    finally:
        con.close()


def adapt(con: duckdb.DuckDBPyConnection, adapters: list[Adapter], forced: str | None = None) -> None:
    """Assign formats to the staged files and run each format's adapter over its records, into the
    staging tables of sql/staging.sql."""
    con.execute(query("staging.sql"))
    names = [a.format for a in adapters]
    if forced is not None and forced not in names:
        raise ValueError(f"unknown format '{forced}' (known: {', '.join(names)})")
    if forced:
        con.execute("INSERT INTO file_formats SELECT file_id, ? FROM files WHERE NOT skipped", [forced])
    else:
        _sniff(con, adapters)
    execute(con, "stage/unknown_records.sql", known=", ".join(names))
    present = {row[0] for row in con.execute("SELECT DISTINCT format FROM file_formats").fetchall()}
    for adapter in adapters:
        if adapter.format in present:
            con.execute("SET VARIABLE lw_format = ?", [adapter.format])
            execute(con, "stage/records_in.sql")
            con.execute(adapter.sql.body)
    con.execute("DROP VIEW IF EXISTS records_in")
    if execute(con, "stage/record_traces.sql").fetchone()[0]:
        execute(con, "stage/duplicates.sql")


def _sniff(con: duckdb.DuckDBPyConnection, adapters: list[Adapter]) -> None:
    """Give each file the format most of its first records match. Each adapter's match runs in a query of
    its own over the sample: a match parses the record, and many parses of a very large record at once
    can exhaust the memory limit."""
    execute(con, "stage/sniff_sample.sql", records=SNIFF_RECORDS)
    for rank, a in enumerate(adapters):
        # `match` is SQL from the adapter's header: an expression, so it is part of the query's text.
        con.execute(f"INSERT INTO sniffed SELECT file_id, record, ?, ? FROM sample WHERE ({a.match})", [a.format, rank])
    execute(con, "stage/sniff_formats.sql")
