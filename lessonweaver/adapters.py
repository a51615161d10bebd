"""Adapt: give each file a format and map its records onto canonical traces and events.

An adapter is a SQL script, `sql/adapters/<format>.sql`, whose header names the format and a `match`
expression over a record's JSON (`doc`). A file's format is the one most of its records match (or the
one forced with --format). The script reads the view `records_in` (that format's records) and inserts
into the staging tables `traces`, `events` and `rejects`; see docs/formats.md for the contract.
"""

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.resources import sql_path
from lessonweaver.sqlfile import SqlFile, SqlFileError, read_sql_file

STAGING_TABLES = """
CREATE OR REPLACE TABLE traces (
    trace_id VARCHAR, format VARCHAR, source VARCHAR, task VARCHAR, outcome VARCHAR, tenant VARCHAR,
    file VARCHAR, line BIGINT, started_at TIMESTAMP, ended_at TIMESTAMP, metadata JSON, extra JSON,
    file_id BIGINT, record BIGINT
);
CREATE OR REPLACE TABLE events (
    trace_id VARCHAR, seq INTEGER, event_id VARCHAR, type VARCHAR, raw_type VARCHAR, content VARCHAR,
    status VARCHAR, success BOOLEAN, tool_name VARCHAR, ts TIMESTAMP, parent_id VARCHAR, metadata JSON,
    extra JSON, file_id BIGINT, record BIGINT
);
CREATE OR REPLACE TABLE file_formats (file_id BIGINT, format VARCHAR);
-- A record that only repeats an event already delivered (a replay, the same run in another file) is
-- linked to its trace here instead of being rejected: it counts as loaded, with its trace.
CREATE OR REPLACE TABLE record_links (file_id BIGINT, record BIGINT, trace_id VARCHAR);
"""


_NAME = re.compile(r"^[a-z0-9_-]+$")
# A record's top-level keys as a short signature (sorted, at most 8, names only) over the JSON `r.doc`.
KEY_SIGNATURE = """coalesce(nullif(array_to_string(list_transform(list_sort(list_distinct(json_keys(r.doc)))[1:8],
        lambda k: CASE WHEN regexp_matches(k, '^[A-Za-z_][A-Za-z0-9_.-]{0,40}$') THEN k ELSE '…' END), ', ')
        || CASE WHEN len(json_keys(r.doc)) > 8 THEN ', …' ELSE '' END, ''), 'none')"""
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
        if not _NAME.match(f.header["format"]):
            raise SqlFileError(f"{path}: format must be lowercase letters, digits, '-' or '_'")
        try:
            priority = int(f.header.get("priority", "0"))
        except ValueError as exc:
            raise SqlFileError(f"{path}: priority must be a whole number") from exc
        gathers = f.header.get("gathers", "no").strip().lower() in ("yes", "true")
        adapters.append(Adapter(f.header["format"], f.header["title"], f.header["match"], priority, f, gathers,
                                f.header.get("whole", "")))
    return sorted(adapters, key=lambda a: (-a.priority, a.format))


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
        con.execute(sql_path("macros.sql").read_text(encoding="utf-8"))
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
    """Assign formats to the staged files and run each format's adapter over its records."""
    con.execute(STAGING_TABLES)
    names = [a.format for a in adapters]
    if forced is not None and forced not in names:
        raise ValueError(f"unknown format '{forced}' (known: {', '.join(names)})")
    if forced:
        con.execute("INSERT INTO file_formats SELECT file_id, ? FROM files WHERE NOT skipped", [forced])
    else:
        # Each adapter's match in a query of its own over the sample: a match parses the record, and many
        # parses of a very large record at once can exhaust the memory limit.
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE sample AS
            SELECT file_id, record, doc FROM records
            QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY record) <= {SNIFF_RECORDS};
            CREATE OR REPLACE TEMP TABLE sniffed (file_id BIGINT, record BIGINT, fmt VARCHAR, rank INTEGER);
            """
        )
        for rank, a in enumerate(adapters):
            con.execute(f"INSERT INTO sniffed SELECT file_id, record, '{a.format}', {rank} FROM sample WHERE ({a.match})")
        # A record counts for the first adapter (by priority) that matches it; a file goes to the format
        # most of its sampled records are in.
        con.execute(
            """
            INSERT INTO file_formats
            SELECT file_id, arg_max(fmt, (n, -rank)) FROM (
                SELECT file_id, fmt, rank, count(*) AS n FROM (
                    SELECT file_id, arg_min(fmt, rank) AS fmt, min(rank) AS rank FROM sniffed GROUP BY file_id, record
                ) GROUP BY ALL
            ) GROUP BY file_id;
            DROP TABLE sniffed;
            DROP TABLE sample;
            """
        )
    known = ", ".join(names)
    # A record no adapter reads is named by its top-level keys, so a user sees at once what it is. Keys
    # that are not plain names (an address used as a key, say) are shown as `…`, never quoted.
    con.execute(
        f"""
        INSERT INTO rejects
        SELECT r.file_id, r.line, r.record,
               'not a trace in any known format (keys: ' || {KEY_SIGNATURE} || '; known: ' || ? || ')'
        FROM records r ANTI JOIN file_formats f USING (file_id)
        """,
        [known],
    )
    present = {row[0] for row in con.execute("SELECT DISTINCT format FROM file_formats").fetchall()}
    for adapter in adapters:
        if adapter.format not in present:
            continue
        con.execute(
            """
            CREATE OR REPLACE TEMP VIEW records_in AS
            SELECT r.file_id, fl.path AS file, r.line, r.record, r.doc
            FROM records r JOIN file_formats ff USING (file_id) JOIN files fl USING (file_id)
            WHERE ff.format = '{fmt}'
            """.format(fmt=adapter.format)
        )
        con.execute(adapter.sql.body)
    con.execute("DROP VIEW IF EXISTS records_in")
    _settle_duplicates(con)


def _settle_duplicates(con: duckdb.DuckDBPyConnection) -> None:
    """Map every record to its trace, then keep one copy of a trace delivered more than once.

    A later identical copy is dropped (its record still counts as loaded, with the trace); a later copy
    with different content is rejected as a conflicting duplicate and the first one wins.
    """
    con.execute(
        """
        CREATE OR REPLACE TABLE record_traces AS
        SELECT DISTINCT file_id, record, trace_id FROM (
            SELECT file_id, record, trace_id FROM traces
            UNION ALL SELECT file_id, record, trace_id FROM events
            UNION ALL SELECT file_id, record, trace_id FROM record_links
        )
        """
    )
    if con.execute("SELECT count(*) = count(DISTINCT trace_id) FROM traces").fetchone()[0]:
        return
    con.execute(
        """

        CREATE OR REPLACE TEMP TABLE later_copies AS
        SELECT t.file_id, t.record, t.trace_id, fl.path AS first_file,
               json(r.doc) = json(r0.doc) AS identical  -- the same JSON, however it was spaced
        FROM (
            SELECT file_id, record, trace_id,
                   first_value(file_id) OVER w AS first_file_id, first_value(record) OVER w AS first_record,
                   row_number() OVER w AS nth
            FROM traces WINDOW w AS (PARTITION BY trace_id ORDER BY file_id, record)
        ) t
        JOIN records r USING (file_id, record)
        JOIN records r0 ON r0.file_id = t.first_file_id AND r0.record = t.first_record
        JOIN files fl ON fl.file_id = t.first_file_id
        WHERE t.nth > 1;

        INSERT INTO rejects
        SELECT c.file_id, r.line, c.record,
               'conflicting duplicate of trace_id ' || c.trace_id || ' from ' || c.first_file
        FROM later_copies c JOIN records r USING (file_id, record) WHERE NOT c.identical;

        DELETE FROM record_traces
        WHERE EXISTS (SELECT 1 FROM later_copies c WHERE c.file_id = record_traces.file_id
                      AND c.record = record_traces.record AND NOT c.identical);
        DELETE FROM events WHERE EXISTS (SELECT 1 FROM later_copies c
                                         WHERE c.file_id = events.file_id AND c.record = events.record);
        DELETE FROM traces WHERE EXISTS (SELECT 1 FROM later_copies c
                                         WHERE c.file_id = traces.file_id AND c.record = traces.record);
        DROP TABLE later_copies;
        """
    )
