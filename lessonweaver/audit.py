"""Audit: show that nothing sensitive came out.

Scans every text column of the database and every rendered output with the same secret and PII
patterns and validators as the screen, and looks for any quarantined trace's id where content lives.
Findings are reported masked (kind, place, the first characters and a length), never in full.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import ahocorasick
import duckdb
import polars as pl

from lessonweaver import patterns, privacy
from lessonweaver.queries import execute
from lessonweaver.words import plural

AUDIT_CHUNK = 32 << 20  # bytes of report lines searched at once
MIN_ID_LENGTH = 6  # shorter quarantined ids are not searched for in output files: they match by chance


class AuditFailed(RuntimeError):
    """Sensitive content was found where none may be; carries the (masked) findings."""

    def __init__(self, findings: list["Finding"]):
        self.findings = findings
        super().__init__(f"audit found {plural(len(findings), 'problem')}: " + "; ".join(map(str, findings[:5])))


@dataclass(frozen=True)
class Finding:
    place: str
    kind: str
    sample: str
    # what was found, to find the traces it came from; never printed, logged or compared
    hit: str = field(default="", repr=False, compare=False)

    def __str__(self) -> str:
        return f"{self.place}: {self.kind} {self.sample}"


def mask(value: str) -> str:
    """Enough to find it again, not enough to use it."""
    return f"'{value[:3]}…' ({len(value)} chars)"


# Tables whose rows of a run passed the staged audit (privacy.audit_staged) before they were written.
STAGED_TABLES = ("traces", "events", "detections")
# How a row is named for the second look: its rowid, but `events` is a view over Parquet, which has none.
ROW_KEY = {"events": "hash(trace_id, seq)"}


def _hits(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str, str]]:
    rows = con.execute("SELECT place, category || ':' || kind, hit FROM scan_hits GROUP BY ALL ORDER BY 1, 2, 3").fetchall()
    con.execute("DROP TABLE scan_texts; DROP TABLE scan_hits")
    return rows


def audit_database(con: duckdb.DuckDBPyConnection, run_id: str | None = None) -> list[Finding]:
    """Scan every text column of the database; with `run_id`, only the rows that run wrote and the small
    tables it rebuilt, leaving out the rows of traces, events and detections, which the staged audit
    checked in their batch before anything was written (so a night's audit does not grow with its events).

    A row's text columns are searched together, one text per row: the rows of a run are then picked
    once per table, not once per column. Only rows with a match are searched again column by column,
    to say where."""
    tables: dict[str, list[str]] = {}
    for table, column in execute(con, "audit/text_columns.sql").fetchall():
        if not (run_id and table in STAGED_TABLES):
            tables.setdefault(table, []).append(column)
    _find_rows(con, tables, run_id)
    flagged = [r[0] for r in con.execute("SELECT DISTINCT tbl FROM audit_rows ORDER BY 1").fetchall()]
    findings: list[Finding] = []
    if flagged:
        # Table and column names come from the database's own catalog: identifiers, not values.
        privacy.find(con, " UNION ALL ".join(
            f'SELECT ? AS place, CAST("{c}" AS VARCHAR) AS text FROM "{table}" '
            f"WHERE {ROW_KEY.get(table, 'rowid')} IN (SELECT rid FROM audit_rows WHERE tbl = ?)"
            for table in flagged for c in tables[table]), ("place",),
            [v for table in flagged for c in tables[table] for v in (f"{table}.{c}", table)])
        findings = [Finding(p, k, mask(h), h) for p, k, h in _hits(con)]
    con.execute("DROP TABLE audit_rows")
    return findings + [Finding(place, "quarantined trace id with content", mask(trace_id))
                       for place, trace_id in execute(con, "audit/quarantined_content.sql").fetchall()]


def _find_rows(con: duckdb.DuckDBPyConnection, tables: dict[str, list[str]], run_id: str | None) -> None:
    """Leave the temp table `audit_rows (tbl, rid)`: the rows of `tables` whose text columns, searched
    together, hold a finding; with `run_id`, only the rows of that run where a table says whose they are."""
    keys = set(con.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = current_database() AND column_name IN ('run_id', 'trace_id')").fetchall())
    selects, params = [], []
    for table, names in tables.items():
        params.append(table)
        where = ""
        if run_id and (table, "run_id") in keys:
            where = "WHERE run_id = ?"
            params.append(run_id)
        elif run_id and (table, "trace_id") in keys:
            where = "WHERE trace_id IN (SELECT trace_id FROM traces WHERE run_id = ?)"
            params.append(run_id)
        text = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in names)
        key = ROW_KEY.get(table, "rowid")
        selects.append(f'SELECT ? AS tbl, {key} AS rid, concat_ws(chr(10), {text}) AS text FROM "{table}" {where}')
    privacy.find(con, " UNION ALL ".join(selects), ("tbl", "rid"), params)
    con.execute("CREATE OR REPLACE TEMP TABLE audit_rows AS SELECT DISTINCT tbl, rid FROM scan_hits")
    con.execute("DROP TABLE scan_texts; DROP TABLE scan_hits")


def _report_chunks(files: list[str]) -> Iterator[tuple[str, list[str]]]:
    """Each report's lines, AUDIT_CHUNK bytes at a time, so memory stays flat however large the reports.
    Python splits them: DuckDB's string_split of a 100 MB text in one row takes seconds, this a fraction."""
    for path in sorted(files):
        with open(path, encoding="utf-8", errors="replace") as handle:
            while lines := handle.readlines(AUDIT_CHUNK):
                yield path, lines


def _quarantined_ids(con: duckdb.DuckDBPyConnection) -> "ahocorasick.Automaton | None":
    """Every quarantined id at once (Aho-Corasick): the time follows the reports' size, not their size times
    the number of quarantined traces, which grows night after night. A session file is named after its
    session (Claude Code, Codex), and reports name the files whose records were kept out: such an id shows
    as part of its file's name, which is no content. The database audit still finds it wherever content
    lives (lessons' example traces included)."""
    ids = [r[0] for r in con.execute(
        "SELECT DISTINCT trace_id FROM quarantine WHERE length(trace_id) >= ? "
        "EXCEPT SELECT trace_id FROM quarantine WHERE contains(file, trace_id)", [MIN_ID_LENGTH]).fetchall()]
    if not ids:
        return None
    automaton = ahocorasick.Automaton()
    for trace_id in ids:
        automaton.add_word(trace_id, trace_id)
    automaton.make_automaton()
    return automaton


def audit_files(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[Finding]:
    """Scan rendered outputs (text files) for secrets, PII and quarantined trace ids.

    Line by line: the prefilter then picks the few lines worth a closer look, not whole files, and each
    pattern searches only those (whole reports as one text each took 46 s for 400 MB of reports)."""
    automaton = _quarantined_ids(con)
    found: dict[tuple[str, str, str], Finding] = {}  # a hit in two chunks of a file is one finding
    for path, lines in _report_chunks(files):
        found.update(_lines_found(con, path, lines, automaton))
    return [found[key] for key in sorted(found)]


def audit_text(con: duckdb.DuckDBPyConnection, place: str, text: str) -> list[Finding]:
    """Scan one text about to leave (an answer of the MCP server) as a report file is scanned."""
    found = _lines_found(con, place, text.splitlines(keepends=True), _quarantined_ids(con))
    return [found[key] for key in sorted(found)]


def _lines_found(con: duckdb.DuckDBPyConnection, place: str, lines: list[str],
                 automaton: "ahocorasick.Automaton | None") -> dict[tuple[str, str, str], Finding]:
    con.register("report_lines", pl.DataFrame({"text": lines}, schema={"text": pl.Utf8}).select(
        pl.lit(place).alias("place"), pl.col("text").str.strip_chars_end("\n")))
    privacy.find(con, "SELECT place, text FROM report_lines", ("place",))
    con.unregister("report_lines")
    found = {(p, k, h): Finding(p, k, mask(h), h) for p, k, h in _hits(con)}
    if automaton is not None:
        found.update(((place, "quarantined trace id", t), Finding(place, "quarantined trace id", mask(t), t))
                     for _, t in automaton.iter("".join(lines)))
    return found


def outputs(folder: str) -> list[str]:
    """The rendered files in a report folder (not hidden or temporary ones)."""
    path = Path(folder)
    if not path.is_dir():
        return []
    return sorted(str(p) for p in path.iterdir() if p.is_file() and not p.name.startswith("."))


def attribute(con: duckdb.DuckDBPyConnection, findings: list[Finding], run_id: str) -> dict[str, str]:
    """The traces of run `run_id` that findings came from: {trace_id: reason}.

    A finding holds what it found, and a trace is where it came from when the trace's stored text holds
    it too (ignoring case: a template may change it). Findings no trace of the run holds are not
    attributed; the caller then withholds the reports."""
    held = {f.hit: "audit:quarantined_id" for f in findings if f.kind.startswith("quarantined trace id")}
    wanted = [("audit:" + f.kind, patterns.core(f.kind.split(":", 1)[1], f.hit).lower())
              for f in findings if f.hit and ":" in f.kind]
    if wanted:
        held |= dict(con.execute(
            f"""
            WITH wanted AS (SELECT unnest($reasons) AS reason, unnest($needles) AS needle)
            SELECT t.trace_id, min(w.reason)
            FROM ({privacy.trace_texts(of_run=True)}) t JOIN wanted w ON contains(lower(t.text), w.needle)
            GROUP BY t.trace_id
            """, {"reasons": [r for r, _ in wanted], "needles": [n for _, n in wanted], "run": run_id}).fetchall())
    loaded = {r[0] for r in con.execute("SELECT trace_id FROM traces WHERE run_id = ? AND list_contains(?, trace_id)",
                                        [run_id, sorted(held)]).fetchall()}
    return {t: r for t, r in sorted(held.items()) if t in loaded}
