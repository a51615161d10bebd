"""Store: the lessonweaver database file, its schema, and loading screened batches into it.

Every connection to the database is opened here (`connect`). Three modules write through one: this
one (the schema, loads, the runs table, quarantine after the audit), `lessons` (the weave) and `review`
(a person's decisions). Each load is one transaction. Events are kept as Parquet files beside the
database (lessonweaver/eventstore.py). The load's SQL is in sql/load/.

Writers never open the database that readers see: `writing` copies it, hands out the copy, and puts
it in place whole when the writer is done (a rename, which readers that have the old file open do not
notice). So any number of readers (the DuckDB CLI, a notebook, `lessonweaver sql`) may hold it while a
run loads and publishes, and a crash leaves the last published database as it was.
"""

import fcntl
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from lessonweaver import eventstore, lessons
from lessonweaver.config import Settings
from lessonweaver.crashpoints import reached
from lessonweaver.errors import disk_full, os_reason
from lessonweaver.queries import execute, query
from lessonweaver.summary import RUN_COLUMNS, RunSummary, runs_schema


LOCK_WAIT_SECONDS = 10.0  # how long an open waits for another process's connection to close


class StoreError(RuntimeError):
    """The database cannot be opened or written (locked by another run, not a DuckDB file, ...)."""


DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def check_path(db: str) -> None:
    """Refuse, in one whole line, a --db that cannot be a database: no name, a folder, a file that is not
    DuckDB's, or a folder for it that cannot be made. Read from the file's header, so it takes no lock and
    leaves nothing behind (no lock file, no working copy)."""
    if not db.strip():
        raise StoreError("--db needs a file name (for example lessonweaver.duckdb)")
    path = Path(db)
    if path.is_dir():
        raise StoreError(f"{db} is a folder, not a database file (give a file in it, e.g. {path / 'lessonweaver.duckdb'})")
    if path.exists():
        try:
            with open(path, "rb") as handle:
                head = handle.read(12)
        except OSError as exc:
            raise StoreError(f"cannot open {db}: {exc.strerror or exc}") from None
        if head[8:12] != DUCKDB_MAGIC:
            raise StoreError(f"{db} is not a DuckDB database file ({'empty' if not head else 'it holds something else'}); "
                             "give another --db, or move this file away")
        return
    parent = Path(nearest_folder(db))
    if not parent.is_dir():
        raise StoreError(f"no database at {db}, and none can be made there: {parent} is a file, not a folder")


def nearest_folder(path: str) -> str:
    """The folder a file at `path` would be made in: its own, or the nearest one above it that exists."""
    folder = Path(path).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return str(folder)


def open_error(db: str, exc: BaseException) -> StoreError:
    """A failure to open the database, in one whole line. Opening quotes only the file's path, never
    stored content, so the message is not cut (safe_error cuts at the first quote)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
    return StoreError(f"cannot open {db}: {text}")


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
                raise open_error(db, exc) from None
            if time.monotonic() >= deadline:
                raise StoreError(f"{db} is in use by another lessonweaver run (or another program); "
                                 "try again when it has finished") from None
            time.sleep(0.2)
        except duckdb.Error as exc:
            raise open_error(db, exc) from None
    try:
        _prepare(con, db, read_only)
    except BaseException:  # a connection left open would keep the file from being opened again (store.writing)
        con.close()
        raise
    return con


def _prepare(con: duckdb.DuckDBPyConnection, db: str, read_only: bool) -> None:
    """Attach the event files, and bring a writer's schema up to date."""
    eventstore.attach(con, db)  # where its event files are, for readers too (a run's tallies read them)
    if not read_only:
        _rename_old_columns(con)
        con.execute(query("schema.sql"))
        eventstore.migrate(con)
        existing = {r[0] for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE table_name = 'runs' AND schema_name = 'main'").fetchall()}
        if upgrade := runs_schema(existing):
            con.execute(upgrade)
        con.execute(query("macros.sql"))
        con.execute(query("views.sql"))


def _rename_old_columns(con: duckdb.DuckDBPyConnection) -> None:
    """Columns an earlier release named otherwise. A database from before content hashes were XXH3 calls
    the column sha256: its old hashes then match no new one, so a file whose modification time changed is
    read once more, and found unchanged. Detections called their signature lesson_key."""
    for table, old, new in (("ingested_files", "sha256", "content_hash"), ("detections", "lesson_key", "signature")):
        if con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = ? AND column_name = ? "
                       "AND database_name = current_database()", [table, old]).fetchone()[0]:
            con.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")


def check(db: str) -> None:
    """Refuse, with one line, a database that is not a DuckDB file or that another run holds."""
    check_path(db)
    if os.path.exists(db):
        connect(db, read_only=True).close()
    with run_lock(db):
        pass


@contextmanager
def run_lock(db: str, holder: str = "run") -> Iterator[None]:
    """Hold the database for one writer from start to finish; a second one fails at once, clearly.

    Writers work on a copy (`writing`); this lock (an flock on `<db>.lock`, released by the system if the
    process dies) keeps two of them from each publishing a copy made before the other's changes. The
    lock file names its holder (`run`, `review`, `forget`, `redetect`), so the refusal can say who.
    """
    try:
        Path(db).parent.mkdir(parents=True, exist_ok=True)
        handle = open(f"{db}.lock", "a+")
    except OSError as exc:  # the first file a writer makes beside the database: where a folder takes none
        raise StoreError(f"cannot write the database {db}: files cannot be created in {nearest_folder(db)} "
                         f"({os_reason(exc)})") from None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            named = handle.read(40).strip()
            who = named if re.fullmatch(r"[a-z]+", named) else "run"
            raise StoreError(f"{db} is in use by another lessonweaver {who}; try again when it has finished") from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(holder)
            handle.flush()
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def writing(db: str, holder: str = "run") -> Iterator[str]:
    """Hold the database for one writer (run_lock) and hand it the path of a copy to write; when the
    writer is done, successful or not (each change it made is a committed transaction, or none), put the
    copy in place in one rename and delete the event files the database no longer lists. A writer that
    dies, or fails on a full disk (where the copy may be cut short, and putting it in place needs room),
    leaves the published database as it was; the next one starts from a fresh copy. `holder`: the
    command, as a refused second writer names it."""
    with run_lock(db, holder):
        work = db + eventstore.WORKING_SUFFIX
        _discard(work)
        try:
            for suffix in ("", ".wal"):  # a WAL beside the database holds changes not yet in the file itself
                if os.path.exists(db + suffix):
                    shutil.copyfile(db + suffix, work + suffix)
        except BaseException:
            _discard(work)  # a copy cut short is of no use, and takes room
            raise
        try:
            yield work
        except BaseException as exc:
            if disk_full(exc) is None:
                _publish_made(work, db)
            else:
                _discard(work)
            raise
        _publish_made(work, db)


def _discard(work: str) -> None:
    for path in (work, work + ".wal"):
        if os.path.exists(path):
            os.remove(path)


def _publish_made(work: str, db: str) -> None:
    """Put the copy in place, if the writer made one; on a full disk, leave the database as it was."""
    if not os.path.exists(work):
        return
    try:
        _publish(work, db)
    except BaseException as exc:
        if disk_full(exc) is not None:
            _discard(work)
        raise


def _publish(work: str, db: str) -> None:
    """Fold the copy's WAL into it, then rename it over the database: readers that have the old file open
    keep reading it; the next reader to open `db` gets this one."""
    con = duckdb.connect(work)
    try:
        con.execute("CHECKPOINT")
    finally:
        con.close()
    os.replace(work, db)
    if os.path.exists(db + ".wal"):  # it was copied into the published file: it must not be replayed again
        os.remove(db + ".wal")
    eventstore.sweep(db)


def setting(con: duckdb.DuckDBPyConnection, key: str) -> str | None:
    """A value the database keeps for itself (the table `settings`), or None."""
    rows = con.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def put_setting(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute("DELETE FROM settings WHERE key = ?", [key])
    con.execute("INSERT INTO settings VALUES (?, ?)", [key, value])


REPORTS = "reports"  # the absolute folder the latest run published its reports in
REPORT_LESSONS = "report_lessons"  # how many lessons the latest run's reports listed
RESOLVE_AFTER = "resolve_after"  # the --resolve-after of the latest run, which forget and redetect weave with


def resolve_after(con: duckdb.DuckDBPyConnection) -> int:
    """The --resolve-after the latest run wove with (the default before any run recorded one)."""
    value = setting(con, RESOLVE_AFTER)
    return int(value) if value is not None else Settings().resolve_after


def require_current_lessons(db: str) -> None:
    """Refuse, in one line, to read or decide on the lessons of a database woven by an earlier release at
    an earlier grain (lessons.GRAIN): its lessons are not the ones a review or an export should act on
    until it moves to the new grain, which its next run or `redetect` does (review decisions carry over)."""
    con = connect(db, read_only=True)
    try:
        stale = lessons.grain(con) < lessons.GRAIN
    finally:
        con.close()
    if stale:
        raise StoreError(f"{db} holds lessons of an earlier lessonweaver (one per task and source, not one per "
                         f"cause): run `lessonweaver redetect --db {db}` (or the next run) to move them to the new "
                         "grain; review decisions carry over")


def reports_folder(db: str, given: str | None) -> str:
    """Where a command that renders from the database alone (render, redetect, audit) writes or reads the
    reports: `given` (--out), else where the database's latest run published them, else the default."""
    if given:
        return given
    con = connect(db, read_only=True)
    try:
        stored = setting(con, REPORTS)
    finally:
        con.close()
    if not stored:
        return Settings().out
    here = os.path.relpath(stored)  # shown as the run showed it when it is below the working folder
    return stored if here.startswith("..") else here


def tenant_salt(con: duckdb.DuckDBPyConnection, configured: str = "", create: bool = True) -> str:
    """The salt for tenant hashes: the configured one, else one the database made for itself once (made
    now, unless `create` is False: a reader then gets "", and no stored tenant has a hash made with it)."""
    if configured:
        return configured
    salt = setting(con, "tenant_salt")
    if salt is not None or not create:
        return salt or ""
    salt = secrets.token_hex(16)
    put_setting(con, "tenant_salt", salt)
    return salt


def ingested(con: duckdb.DuckDBPyConnection) -> tuple[set[tuple[str, int, float]], frozenset[str]]:
    """What earlier runs ingested: (path, size, mtime) triples, and content hashes."""
    rows = con.execute("SELECT path, size, mtime, content_hash FROM ingested_files").fetchall()
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
    if not folders:
        return LoadCounts()
    # Stored rows have no order of their own, so DuckDB may write row groups in parallel.
    con.execute("SET preserve_insertion_order = false")
    con.execute("BEGIN TRANSACTION")
    try:
        counts = _load(con, folders, run_id, merged)
        reached("load")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        con.execute("RESET preserve_insertion_order")
    return counts


def _load(con: duckdb.DuckDBPyConnection, folders: list[str], run_id: str, merged: str | None) -> LoadCounts:
    _open_batches(con, folders, merged)
    execute(con, "load/files.sql")
    eventstore.remove(con, "replaced", runs="SELECT run_id FROM replaced")
    execute(con, "load/fates.sql")
    execute(con, "load/insert.sql", run_id=run_id)
    _store_events(con, folders, run_id, merged)
    execute(con, "load/accounts.sql", run_id=run_id)
    cursor = execute(con, "load/counts.sql", run_id=run_id)
    counts = LoadCounts(**dict(zip([d[0] for d in cursor.description], cursor.fetchone())))
    counts.events_loaded, counts.unknown_event_types = _run_events(con, run_id).aggregate(
        "count(*), count(*) FILTER (WHERE type = 'unknown')").fetchall()[0]
    counts.file_notes = con.execute(
        "SELECT path, note FROM file_accounts WHERE note IS NOT NULL ORDER BY path").fetchall()
    execute(con, "load/done.sql")
    return counts


def _store_events(con: duckdb.DuckDBPyConnection, folders: list[str], run_id: str, merged: str | None) -> None:
    """The new traces' events into the event files. A batch that kept every trace it staged (the usual
    night) has its events file moved into the store as it is, neither read nor written again; the others'
    events are copied without the traces left out (load/events.sql). With a merge batch, all are copied."""
    left_out = {row[0] for row in con.execute("SELECT DISTINCT batch FROM not_new").fetchall()}
    whole = [] if merged else [f for f in folders if Path(f).as_posix() not in left_out]
    copied = [f for f in folders if f not in whole]
    if merged:
        con.execute("CREATE OR REPLACE TEMP VIEW load_events AS FROM staged_events")
    elif copied:
        con.execute("SET VARIABLE lw_copied = ?::VARCHAR[]", [[(Path(f) / "events.parquet").as_posix() for f in copied]])
        con.execute("CREATE OR REPLACE TEMP VIEW load_events AS SELECT * EXCLUDE (filename), parse_dirpath(filename) "
                    "AS batch FROM read_parquet(getvariable('lw_copied'), filename = true)")
    if merged or copied:
        eventstore.write(con, query("load/events.sql"), run_id)
        con.execute("DROP VIEW load_events")
    eventstore.adopt(con, [Path(f) / "events.parquet" for f in whole], run_id)


def _run_events(con: duckdb.DuckDBPyConnection, run_id: str) -> duckdb.DuckDBPyRelation:
    """The events run `run_id` stored, read from its own files only (not every night's)."""
    files = [p for p, r in eventstore.files(con) if r == run_id]
    if not files:
        return con.sql("SELECT * FROM events WHERE false")
    return con.read_parquet(files)


def _open_batches(con: duckdb.DuckDBPyConnection, folders: list[str], merged: str | None) -> None:
    """The batches' outputs as views (sql/load/staged.sql), read where they lie: nothing is copied."""
    merge_batch = Path(merged).as_posix() if merged else None
    con.execute("SET VARIABLE lw_batches = ?::VARCHAR[]",
                [[Path(f).as_posix() for f in folders] + ([merge_batch] if merge_batch else [])])
    con.execute("SET VARIABLE lw_merge_batch = ?::VARCHAR", [merge_batch])
    execute(con, "load/staged.sql")
    if merged:
        execute(con, "load/merged.sql")


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
        "lessons_night": lessons.newest_night(con),
        "lesson_statuses": dict(con.execute(
            "SELECT status, count(*) FROM lessons WHERE review <> 'rejected' GROUP BY status ORDER BY status").fetchall()),
        "traces_redacted": con.execute(
            "SELECT count(*) FROM traces WHERE run_id = ? AND redacted IS NOT NULL", [run_id]).fetchone()[0],
        "redaction_kinds": dict(con.execute(
            "SELECT kind, count(*) FROM (SELECT unnest(redacted) AS kind FROM traces WHERE run_id = ?) "
            "GROUP BY kind ORDER BY kind", [run_id]).fetchall()),
        "detections_by_detector": dict(con.execute(
            "SELECT detector, count(*) FROM detections WHERE run_id = ? GROUP BY detector ORDER BY detector",
            [run_id]).fetchall()),
        # what was read but not understood: event types no adapter maps, records no adapter reads
        "unknown_types": _run_events(con, run_id).filter("type = 'unknown'").aggregate(
            "raw_type, count(*) AS n", "raw_type").order("n DESC, raw_type").fetchall(),
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
    records = [(Path(f) / "trace_records.parquet").as_posix() for f in folders]
    con.execute("BEGIN TRANSACTION")
    try:
        (moved.traces_quarantined, moved.records_quarantined,
         moved.detections) = execute(con, "load/late_records.sql", trace_ids=list(held), reasons=list(held.values()),
                                     records=records).fetchone()
        moved.events_loaded = eventstore.remove(con, "late")
        execute(con, "load/late_quarantine.sql", run_id=run_id)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return moved
