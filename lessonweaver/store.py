"""Store: the lessonweaver database file, its schema, and loading screened batches into it.

Only this module (and the weave stage, through a connection from here) writes the database. Each load
is one transaction, so a crash leaves the previous consistent state.
"""

import fcntl
import os
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from lessonweaver.crashpoints import reached
from lessonweaver.errors import safe_error
from lessonweaver.resources import sql_path
from lessonweaver.summary import RUN_COLUMNS, RunSummary, runs_schema


LOCK_WAIT_SECONDS = 10.0  # how long an open waits for another process's connection to close


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
    # Readers (`lessonweaver sql`, lessonweaver.open) hold the file for one query at a time: a writer
    # that meets one waits a moment instead of failing a night's run.
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            con = duckdb.connect(db, read_only=read_only, config=config)
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise StoreError(f"cannot open {db}: {safe_error(exc)}") from None
            if time.monotonic() >= deadline:
                raise StoreError(f"{db} is in use by another lessonweaver run (or another program); "
                                 "try again when it has finished") from None
            time.sleep(0.2)
        except duckdb.Error as exc:
            raise StoreError(f"cannot open {db}: {safe_error(exc)}") from None
    if not read_only:
        con.execute(sql_path("schema.sql").read_text(encoding="utf-8"))
        existing = {r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'runs' AND schema_name = 'main'").fetchall()}
        if upgrade := runs_schema(existing):
            con.execute(upgrade)
        con.execute(sql_path("macros.sql").read_text(encoding="utf-8"))
        con.execute(sql_path("views.sql").read_text(encoding="utf-8"))
    return con


@contextmanager
def run_lock(db: str) -> Iterator[None]:
    """Hold the database for one run from start to finish; a second run fails at once, clearly.

    DuckDB allows one writing process at a time, but a run opens the database several times; this lock
    (an flock on `<db>.lock`, released by the system if the process dies) keeps two runs from interleaving.
    """
    Path(db).parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"{db} is in use by another lessonweaver run; try again when it has finished") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    traces_conflicting: int = 0
    file_notes: list[tuple[str, str]] = field(default_factory=list)
    traces_quarantined: int = 0
    events_loaded: int = 0
    unknown_event_types: int = 0
    detections: int = 0


def _quote(path: Path | str) -> str:
    return Path(path).as_posix().replace("'", "''")


def _parquet(folders: list[str], name: str) -> str:
    paths = ", ".join("'" + (Path(f) / f"{name}.parquet").as_posix().replace("'", "''") + "'" for f in folders)
    return f"(SELECT * EXCLUDE (filename), parse_dirpath(filename) AS batch FROM read_parquet([{paths}], filename = true))"


def load(con: duckdb.DuckDBPyConnection, folders: list[str], run_id: str, merged: str | None = None) -> LoadCounts:
    """Load batch outputs in one transaction.

    A file read again with new content replaces what came from it before. Each staged trace is new
    (stored), a re-delivery of a stored trace with the same content (not stored again, its records count
    as loaded), a conflicting duplicate (same trace_id, other content: its records are rejected), or held
    back because its trace_id is quarantined (its records count as quarantined). Per-file accounts are
    corrected accordingly, so records = loaded + quarantined + rejected still holds for every file.
    `merged` is the folder of a merge batch (see batch.run_batch): its traces replace the parts that
    the other batches staged of them.
    """
    counts = LoadCounts()
    if not folders:
        return counts
    # Stored rows have no order of their own (every query orders what it shows); not keeping the
    # Parquet's row order lets DuckDB write row groups in parallel: at 3M traces the events insert
    # went from 46 to 35 s and its peak from 1.6 to 1.2 GB.
    con.execute("SET preserve_insertion_order = false")
    con.execute("BEGIN TRANSACTION")
    try:
        _load(con, folders, run_id, counts, merged)
        reached("load")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.execute("RESET preserve_insertion_order")
    return counts


def _load(con: duckdb.DuckDBPyConnection, folders: list[str], run_id: str, counts: LoadCounts,
          merged: str | None = None) -> None:
    q = {name: _parquet(folders + ([merged] if merged else []), name) for name in
         ("traces", "trace_records", "events", "detections", "quarantine", "rejects", "files")}
    if merged:
        # Parts of a trace that a merge batch gathered whole are not staged traces of their own.
        whole = f"(SELECT trace_id FROM read_parquet('{_quote(Path(merged) / 'traces.parquet')}'))"
        merge_batch = _quote(Path(merged).as_posix().rstrip("/"))
        for name in ("traces", "trace_records", "events", "detections"):
            q[name] = f"(SELECT * FROM {q[name]} WHERE batch = '{merge_batch}' OR trace_id NOT IN {whole})"
    # A large file may have been staged in parts (discover.split_lines): one account per file.
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE batch_files AS
        SELECT path, any_value(sha256) AS sha256, any_value(size) AS size, any_value(mtime) AS mtime,
               min(format) AS format, bool_and(skipped) AS skipped,
               string_agg(DISTINCT note, '; ' ORDER BY note) AS note,
               sum(records) AS records, sum(loaded) AS loaded, sum(quarantined) AS quarantined,
               sum(rejected) AS rejected, sum(unaccounted) AS unaccounted
        FROM {q['files']} GROUP BY path
        """
    )
    # A file whose content changed since it was ingested: what came from it before goes.
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE changed_files AS
        SELECT DISTINCT i.path FROM ingested_files i JOIN batch_files b ON b.path = i.path
        WHERE i.sha256 <> b.sha256 AND NOT b.skipped;

        CREATE OR REPLACE TEMP TABLE replaced AS
        SELECT trace_id FROM traces WHERE file IN (SELECT path FROM changed_files);
        DELETE FROM detections WHERE trace_id IN (SELECT trace_id FROM replaced);
        DELETE FROM events WHERE trace_id IN (SELECT trace_id FROM replaced);
        DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM replaced);
        DELETE FROM quarantine WHERE file IN (SELECT path FROM changed_files);
        DELETE FROM rejects WHERE file IN (SELECT path FROM changed_files);
        DELETE FROM ingested_files WHERE path IN (SELECT path FROM changed_files);
        """
    )
    con.execute(f"CREATE OR REPLACE TEMP TABLE batch_quarantine AS SELECT * FROM {q['quarantine']}")
    # A fate for each staged trace that is not simply new: delivered twice (in this run or before), or
    # held back by a quarantine. Usually none; only those traces are ranked, so the load's memory does not
    # grow with the number of traces (a window over all of them outgrew the memory limit at 6M).
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE held AS
        SELECT trace_id, any_value(reason) AS reason FROM (
            SELECT trace_id, reason FROM quarantine UNION ALL SELECT trace_id, reason FROM batch_quarantine)
        GROUP BY trace_id;

        CREATE OR REPLACE TEMP TABLE fates AS
        WITH s AS (SELECT trace_id, batch, file, line, content_hash FROM {q['traces']}),
        involved AS (
            SELECT trace_id FROM s GROUP BY trace_id HAVING count(*) > 1
            UNION SELECT trace_id FROM traces SEMI JOIN s USING (trace_id)
            UNION SELECT trace_id FROM held SEMI JOIN s USING (trace_id)
        ),
        ranked AS (
            SELECT s.*, row_number() OVER w AS nth, first_value(content_hash) OVER w AS first_hash,
                   first_value(file) OVER w AS first_file
            FROM s SEMI JOIN involved USING (trace_id)
            WINDOW w AS (PARTITION BY trace_id ORDER BY batch, file, line)
        )
        SELECT s.trace_id, s.batch,
               CASE
                 WHEN hq.trace_id IS NOT NULL THEN 'held_back'
                 WHEN x.trace_id IS NOT NULL AND x.content_hash IS NOT DISTINCT FROM s.content_hash THEN 'duplicate'
                 WHEN x.trace_id IS NOT NULL THEN 'conflict'
                 WHEN s.nth > 1 AND s.content_hash = s.first_hash THEN 'duplicate'
                 WHEN s.nth > 1 THEN 'conflict'
                 ELSE 'new'
               END AS fate,
               coalesce(x.file, s.first_file) AS other_file,
               hq.reason AS held_reason
        FROM ranked s
        LEFT JOIN traces x USING (trace_id)
        LEFT JOIN held hq USING (trace_id);

        CREATE OR REPLACE TEMP TABLE fate_records AS
        SELECT r.*, f.fate, f.other_file, f.held_reason
        FROM {q['trace_records']} r JOIN fates f USING (trace_id, batch)
        WHERE f.fate IN ('conflict', 'held_back');

        -- A batch keeps one copy of a trace (adapters settle duplicates within it), so (trace_id, batch)
        -- names one staged trace.
        CREATE OR REPLACE TEMP TABLE not_new AS SELECT trace_id, batch FROM fates WHERE fate <> 'new';
        """
    )
    con.execute(
        """
        INSERT INTO rejects
        SELECT file, line, record, 'conflicting duplicate of trace_id ' || trace_id || ' from ' || other_file,
               ?, now()::TIMESTAMP
        FROM fate_records WHERE fate = 'conflict'
        """,
        [run_id],
    )
    con.execute(
        """
        INSERT INTO quarantine
        SELECT trace_id, file, min(line), any_value(held_reason), ?, now()::TIMESTAMP
        FROM fate_records WHERE fate = 'held_back'
          AND NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.trace_id = fate_records.trace_id AND x.file = fate_records.file)
        GROUP BY trace_id, file
        """,
        [run_id],
    )
    con.execute(
        f"""
        INSERT INTO traces
        SELECT trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
               metadata, extra, content_hash, ?, now()::TIMESTAMP
        FROM {q['traces']} ANTI JOIN not_new USING (trace_id, batch)
        """,
        [run_id],
    )
    # Every staged event and detection belongs to a staged trace (adapters insert events by joining
    # traces), so leaving out the few traces that are not new keeps exactly the new ones, without
    # joining every row with a fate.
    con.execute(
        f"""
        INSERT INTO events
        SELECT e.trace_id, e.seq, e.event_id, e.type, e.raw_type, e.content, e.status, e.success,
               e.tool_name, e.ts, e.parent_id, e.metadata, e.extra
        FROM {q['events']} e ANTI JOIN not_new USING (trace_id, batch)
        """
    )
    con.execute(
        f"""
        INSERT INTO detections BY NAME
        SELECT d.detector, d.trace_id, d.event_id, d.seq, d.severity, d.evidence, d.problem, d.lesson,
               d.lesson_id AS variant_id, coalesce(v.lesson_id, d.lesson_id) AS lesson_id,
               d.category, d.confidence, d.lesson_key,
               ? AS run_id, now()::TIMESTAMP AS detected_at
        FROM {q['detections']} d ANTI JOIN not_new USING (trace_id, batch)
        LEFT JOIN lesson_variants v ON v.variant_id = d.lesson_id
        """,
        [run_id],
    )
    con.execute(
        """
        INSERT INTO quarantine
        SELECT q.trace_id, q.file, q.line, q.reason, ?, now()::TIMESTAMP
        FROM batch_quarantine q
        WHERE NOT EXISTS (SELECT 1 FROM quarantine x WHERE x.trace_id = q.trace_id AND x.file = q.file)
        """,
        [run_id],
    )
    con.execute(
        f"INSERT INTO rejects SELECT file, line, record, reason, ?, now()::TIMESTAMP FROM {q['rejects']}",
        [run_id],
    )
    # Records of conflicting or held-back traces were counted as loaded by their batch.
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE file_accounts AS
        SELECT b.* REPLACE (
                   b.loaded - coalesce(m.conflicts, 0) - coalesce(m.held, 0) AS loaded,
                   b.quarantined + coalesce(m.held, 0) AS quarantined,
                   b.rejected + coalesce(m.conflicts, 0) AS rejected)
        FROM batch_files b
        LEFT JOIN (SELECT file, count(*) FILTER (WHERE fate = 'conflict') AS conflicts,
                          count(*) FILTER (WHERE fate = 'held_back') AS held
                   FROM fate_records GROUP BY file) m ON m.file = b.path
        """
    )
    con.execute(
        """
        INSERT INTO ingested_files BY NAME
        SELECT path, sha256, size, mtime, format, records, loaded, quarantined, rejected, note,
               ?::VARCHAR AS run_id, now()::TIMESTAMP AS ingested_at
        FROM file_accounts
        WHERE NOT starts_with(coalesce(note, ''), 'could not read file')  -- unread: the next run tries again
        """,
        [run_id],
    )
    row = con.execute(
        """
        SELECT count(*) FILTER (WHERE NOT skipped), count(*) FILTER (WHERE skipped),
               coalesce(sum(records), 0), coalesce(sum(loaded), 0), coalesce(sum(quarantined), 0),
               coalesce(sum(rejected), 0), coalesce(sum(unaccounted), 0)
        FROM file_accounts
        """
    ).fetchone()
    (counts.files_read, counts.files_skipped, counts.records, counts.records_loaded,
     counts.records_quarantined, counts.records_rejected, counts.records_unaccounted) = row
    (counts.traces_loaded, counts.traces_duplicate, counts.traces_conflicting) = con.execute(
        "SELECT (SELECT count(*) FROM traces WHERE run_id = ?), count(*) FILTER (WHERE fate = 'duplicate'), "
        "count(*) FILTER (WHERE fate = 'conflict') FROM fates", [run_id]).fetchone()
    counts.traces_quarantined = con.execute(
        "SELECT count(DISTINCT trace_id) FROM quarantine WHERE run_id = ?", [run_id]).fetchone()[0]
    counts.events_loaded, counts.unknown_event_types = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE type = 'unknown') FROM events WHERE trace_id IN "
        "(SELECT trace_id FROM traces WHERE run_id = ?)", [run_id]).fetchone()
    counts.detections = con.execute("SELECT count(*) FROM detections WHERE run_id = ?", [run_id]).fetchone()[0]
    counts.file_notes = con.execute(
        "SELECT path, note FROM file_accounts WHERE note IS NOT NULL ORDER BY path").fetchall()
    con.execute("DROP TABLE held; DROP TABLE fates; DROP TABLE fate_records; DROP TABLE file_accounts; "
                "DROP TABLE batch_files; DROP TABLE batch_quarantine; DROP TABLE changed_files; DROP TABLE replaced; "
                "DROP TABLE not_new")


def record_run(con: duckdb.DuckDBPyConnection, run: RunSummary) -> None:
    """Write the run's row in `runs` (replacing it): recorded as soon as the load commits, then updated
    as the run goes on, so a run that fails later is still there, with what it did."""
    columns = ", ".join(f"?::{kind} AS {name}" for name, kind in RUN_COLUMNS.items())
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("DELETE FROM runs WHERE run_id = ?", [run.run_id])
        con.execute(f"INSERT INTO runs BY NAME SELECT {columns}", run.row())
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def run_tallies(con: duckdb.DuckDBPyConnection, run_id: str) -> dict:
    """What a run's summary shows beyond its counts: quarantine reasons, rejects by file, lessons by
    status, detections by detector."""
    return {
        "quarantine_reasons": dict(con.execute(
            "SELECT reason, count(*) FROM quarantine WHERE run_id = ? GROUP BY reason ORDER BY reason",
            [run_id]).fetchall()),
        "rejects_by_file": con.execute(
            """
            SELECT file, count(*), list(coalesce('line ' || line, 'record ' || record) || ': ' || reason ORDER BY record)[1:3]
            FROM rejects WHERE run_id = ? GROUP BY file ORDER BY count(*) DESC, file
            """, [run_id]).fetchall(),
        "lesson_statuses": dict(con.execute(
            "SELECT status, count(*) FROM lessons WHERE review <> 'rejected' GROUP BY status ORDER BY status").fetchall()),
        "detections_by_detector": dict(con.execute(
            "SELECT detector, count(*) FROM detections WHERE run_id = ? GROUP BY detector ORDER BY detector",
            [run_id]).fetchall()),
        # what was read but not understood: event types no adapter maps, records no adapter reads
        "unknown_types": con.execute(
            """
            SELECT raw_type, count(*) FROM events SEMI JOIN (SELECT trace_id FROM traces WHERE run_id = ?) USING (trace_id)
            WHERE type = 'unknown' GROUP BY raw_type ORDER BY count(*) DESC, raw_type
            """, [run_id]).fetchall(),
        "unrecognised": con.execute(
            """
            SELECT regexp_extract(reason, '[(]keys: (.*); known: ', 1) AS keys, count(*), min(file), count(DISTINCT file)
            FROM rejects WHERE run_id = ? AND starts_with(reason, 'not a trace in any known format (keys: ')
            GROUP BY keys ORDER BY count(*) DESC, keys
            """, [run_id]).fetchall(),
    }


def quarantine_loaded(con: duckdb.DuckDBPyConnection, run_id: str, held: dict[str, str],
                      folders: list[str]) -> LoadCounts:
    """Quarantine traces that run `run_id` loaded, after the fact (a finding of the run's audit), in one
    transaction: their rows go, each gets a quarantine row with its reason, and the records that made
    them count as quarantined in their files' accounts and in the run's. The run's sightings are dropped
    so that the weave records them again without these traces. `folders` are the run's batches, whose
    trace_records say which records made each trace. Returns what moved, as counts."""
    moved = LoadCounts()
    if not held:
        return moved
    records = _parquet(folders, "trace_records")
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE late AS SELECT unnest(?::VARCHAR[]) AS trace_id, "
                    "unnest(?::VARCHAR[]) AS reason", [list(held), list(held.values())])
        # A record counted as loaded becomes quarantined, unless a trace quarantined in its batch had
        # already made it so.
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE late_records AS
            SELECT file, count(*) AS n FROM (
                SELECT DISTINCT file, record FROM {records} SEMI JOIN late USING (trace_id)
                EXCEPT SELECT DISTINCT file, record FROM {records} WHERE quarantined
            ) GROUP BY file
            """)
        moved.traces_quarantined, moved.records_quarantined, moved.events_loaded, moved.detections = con.execute(
            """
            SELECT (SELECT count(*) FROM late), (SELECT coalesce(sum(n), 0) FROM late_records),
                   (SELECT count(*) FROM events SEMI JOIN late USING (trace_id)),
                   (SELECT count(*) FROM detections SEMI JOIN late USING (trace_id))
            """).fetchone()
        con.execute("INSERT INTO quarantine SELECT t.trace_id, t.file, t.line, l.reason, ?, now()::TIMESTAMP "
                    "FROM traces t JOIN late l USING (trace_id)", [run_id])
        for table in ("detections", "events", "traces"):
            con.execute(f"DELETE FROM {table} WHERE trace_id IN (SELECT trace_id FROM late)")
        con.execute("DELETE FROM sightings WHERE run_id = ?", [run_id])
        con.execute("UPDATE ingested_files SET loaded = loaded - m.n, quarantined = quarantined + m.n "
                    "FROM late_records m WHERE ingested_files.path = m.file AND ingested_files.run_id = ?", [run_id])
        con.execute("DROP TABLE late; DROP TABLE late_records")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return moved
