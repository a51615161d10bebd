"""Store: the lessonweaver database file, its schema, and loading screened batches into it.

Only this module (and the weave stage, through a connection from here) writes the database. Each load
is one transaction, so a crash leaves the previous consistent state.
"""

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.resources import sql_path


class StoreError(RuntimeError):
    """The database cannot be opened or written (locked by another run, not a DuckDB file, ...)."""


def connect(db: str, read_only: bool = False, threads: int | None = None,
            memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """Open the database, creating it and its folder if needed; apply the schema unless read-only."""
    config: dict[str, object] = {}
    if threads:
        config["threads"] = threads
    if memory_limit:
        config["memory_limit"] = memory_limit
    if read_only and not os.path.exists(db):
        raise StoreError(f"no database at {db} (run `lessonweaver run` first)")
    if not read_only:
        Path(db).parent.mkdir(parents=True, exist_ok=True)
    try:
        con = duckdb.connect(db, read_only=read_only, config=config)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise StoreError(f"{db} is in use by another lessonweaver run (or another program); "
                             "try again when it has finished") from None
        raise StoreError(f"cannot open {db}: {exc}") from None
    except duckdb.Error as exc:
        raise StoreError(f"cannot open {db}: {exc}") from None
    if not read_only:
        con.execute(sql_path("schema.sql").read_text(encoding="utf-8"))
        con.execute(sql_path("macros.sql").read_text(encoding="utf-8"))
    return con


def tenant_salt(con: duckdb.DuckDBPyConnection, configured: str = "") -> str:
    """The salt for tenant hashes: the configured one, else one the database made for itself once."""
    if configured:
        return configured
    row = con.execute("SELECT value FROM settings WHERE key = 'tenant_salt'").fetchone()
    if row:
        return row[0]
    salt = secrets.token_hex(16)
    con.execute("INSERT INTO settings VALUES ('tenant_salt', ?)", [salt])
    return salt


def ingested(con: duckdb.DuckDBPyConnection) -> tuple[set[tuple[str, int, float]], frozenset[str]]:
    """What earlier runs ingested: (path, size, mtime) triples, and content hashes."""
    rows = con.execute("SELECT path, size, mtime, sha256 FROM ingested_files").fetchall()
    return {(p, s, m) for p, s, m, _ in rows}, frozenset(h for *_, h in rows)


@dataclass
class LoadCounts:
    files_read: int = 0
    files_skipped: int = 0
    records: int = 0
    records_loaded: int = 0
    records_quarantined: int = 0
    records_rejected: int = 0
    records_unaccounted: int = 0
    traces_loaded: int = 0
    traces_duplicate: int = 0
    traces_quarantined: int = 0
    events_loaded: int = 0
    unknown_event_types: int = 0
    detections: int = 0


def _parquet(folders: list[str], name: str) -> str:
    paths = ", ".join("'" + (Path(f) / f"{name}.parquet").as_posix().replace("'", "''") + "'" for f in folders)
    return f"(SELECT * EXCLUDE (filename), parse_dirpath(filename) AS batch FROM read_parquet([{paths}], filename = true))"


def load(con: duckdb.DuckDBPyConnection, folders: list[str], run_id: str) -> LoadCounts:
    """Load batch outputs in one transaction: new traces only, their events and detections, the accounts."""
    counts = LoadCounts()
    if not folders:
        return counts
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE new_traces AS
            SELECT * FROM {_parquet(folders, 'traces')} t
            WHERE NOT EXISTS (SELECT 1 FROM traces x WHERE x.trace_id = t.trace_id)
              -- a trace id held back for privacy stays held back, whatever copy of it comes later
              AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.trace_id = t.trace_id)
              AND NOT EXISTS (SELECT 1 FROM {_parquet(folders, 'quarantine')} q WHERE q.trace_id = t.trace_id)
            QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY batch, file, line) = 1
            """
        )
        counts.traces_duplicate = con.execute(
            f"SELECT count(*) - (SELECT count(*) FROM new_traces) FROM {_parquet(folders, 'traces')}"
        ).fetchone()[0]
        con.execute(
            """
            INSERT INTO traces
            SELECT trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                   metadata, extra, ?, now()::TIMESTAMP
            FROM new_traces
            """,
            [run_id],
        )
        con.execute(
            f"""
            INSERT INTO events
            SELECT e.trace_id, e.seq, e.event_id, e.type, e.raw_type, e.content, e.status, e.success,
                   e.tool_name, e.ts, e.parent_id, e.metadata, e.extra
            FROM {_parquet(folders, 'events')} e JOIN new_traces n USING (trace_id, batch)
            """
        )
        con.execute(
            f"""
            INSERT INTO detections
            SELECT d.detector, d.trace_id, d.event_id, d.seq, d.severity, d.evidence, d.problem, d.lesson,
                   d.lesson_id, ?, now()::TIMESTAMP
            FROM {_parquet(folders, 'detections')} d JOIN new_traces n USING (trace_id, batch)
            """,
            [run_id],
        )
        con.execute(
            f"""
            INSERT INTO quarantine
            SELECT q.trace_id, q.file, q.line, q.reason, ?, now()::TIMESTAMP
            FROM {_parquet(folders, 'quarantine')} q
            WHERE NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.trace_id = q.trace_id AND x.file = q.file)
            """,
            [run_id],
        )
        con.execute(
            f"""
            INSERT INTO rejects
            SELECT file, line, record, reason, ?, now()::TIMESTAMP FROM {_parquet(folders, 'rejects')}
            """,
            [run_id],
        )
        con.execute(
            f"""
            INSERT INTO ingested_files
            SELECT path, sha256, size, mtime, format, records, loaded, quarantined, rejected, ?, now()::TIMESTAMP
            FROM {_parquet(folders, 'files')}
            """,
            [run_id],
        )
        row = con.execute(
            f"""
            SELECT count(*) FILTER (WHERE NOT skipped), count(*) FILTER (WHERE skipped),
                   coalesce(sum(records), 0), coalesce(sum(loaded), 0), coalesce(sum(quarantined), 0),
                   coalesce(sum(rejected), 0), coalesce(sum(unaccounted), 0)
            FROM {_parquet(folders, 'files')}
            """
        ).fetchone()
        (counts.files_read, counts.files_skipped, counts.records, counts.records_loaded,
         counts.records_quarantined, counts.records_rejected, counts.records_unaccounted) = row
        counts.traces_loaded = con.execute("SELECT count(*) FROM new_traces").fetchone()[0]
        counts.traces_quarantined = con.execute(
            f"SELECT count(DISTINCT trace_id) FROM {_parquet(folders, 'quarantine')}").fetchone()[0]
        counts.events_loaded, counts.unknown_event_types = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE type = 'unknown') FROM events WHERE trace_id IN "
            "(SELECT trace_id FROM new_traces)").fetchone()
        counts.detections = con.execute("SELECT count(*) FROM detections WHERE run_id = ?", [run_id]).fetchone()[0]
        con.execute("DROP TABLE new_traces")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return counts
