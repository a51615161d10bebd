"""Events: the per-event bulk of the store, kept out of the database file as immutable Parquet.

Events are written once, as Parquet, by the batch that staged them; the load moves each batch's file into
a folder beside the database (`lessonweaver.events/` beside `lessonweaver.duckdb`, one subfolder per
run), or, for a batch that left a trace out (a re-delivery, a conflict), writes the rest anew. The
table `event_files` lists the files that hold
the stored events, and the view `events` reads exactly those, by absolute path, so every DuckDB client,
in any working directory, sees `events` as it would a table. The database file keeps what is small or
changes (traces, detections, lessons, reviews, runs); copying it is cheap, which is what lets a writer
work on a copy and publish it whole while readers keep the one they opened (store.writing).

A file is never changed. Removing events (an input file whose content changed, a late quarantine,
`forget`, retention) writes a new file without them in the same transaction that lists it instead of
the old one; `sweep` deletes, once a database is published, the files it no longer lists.
"""

import os
import secrets
import shutil
from pathlib import Path

import duckdb


WORKING_SUFFIX = ".writing"  # the copy a writer works on before it is published (store.writing)
MIGRATED = "before-the-events-folder"  # the run id of the events a database held before the event files
FILE_SIZE = "256MB"  # a run's events are split into files of about this size: a removal rewrites only those it touches
ROW_GROUP_ROWS = 16384  # as a batch writes them (sql/stage/outputs.sql): a reader holds one row group's text at a time
# The columns of `events`, in order; every file is written with exactly these.
COLUMNS = (("trace_id", "VARCHAR"), ("seq", "INTEGER"), ("event_id", "VARCHAR"), ("type", "VARCHAR"),
           ("raw_type", "VARCHAR"), ("content", "VARCHAR"), ("status", "VARCHAR"), ("success", "BOOLEAN"),
           ("tool_name", "VARCHAR"), ("ts", "TIMESTAMP"), ("parent_id", "VARCHAR"), ("metadata", "JSON"),
           ("extra", "JSON"), ("actor", "VARCHAR"))
ADDED = {"actor"}  # columns files written before them lack: read as NULL


def folder_for(db: str) -> Path:
    """The events folder of the database `db` (of the database it will be published as, for a working copy)."""
    published = Path(os.path.abspath(db.removesuffix(WORKING_SUFFIX)))
    return published.with_name(published.stem + ".events")


def attach(con: duckdb.DuckDBPyConnection, db: str) -> None:
    """Tell the connection where its events folder is (the variable lw_events_folder)."""
    con.execute("SET VARIABLE lw_events_folder = ?", [folder_for(db).as_posix()])


def folder(con: duckdb.DuckDBPyConnection) -> Path:
    return Path(con.execute("SELECT getvariable('lw_events_folder')").fetchone()[0])


def files(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    """The files that hold the stored events: (absolute path, run id) each."""
    base = folder(con)
    return [((base / name).as_posix(), run_id)
            for name, run_id in con.execute("SELECT file, run_id FROM event_files ORDER BY file").fetchall()]


def paths(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The absolute paths of the files that hold the stored events."""
    return [path for path, _ in files(con)]


def define_view(con: duckdb.DuckDBPyConnection) -> None:
    """(Re)create the view `events` over the files `event_files` lists. A view takes no parameters, so the
    paths are written into its text: they are ours (the events folder and names this module made)."""
    con.execute(f"CREATE OR REPLACE VIEW events AS {reading(con, paths(con))}")


def reading(con: duckdb.DuckDBPyConnection, files: list[str]) -> str:
    """A query of the events in `files` with exactly COLUMNS: files written before a column was added
    give NULL for it. The paths are written into the text: they are ours (see define_view)."""
    if not files:  # read_parquet needs a file: an empty relation of the same shape
        return "SELECT " + ", ".join(f"NULL::{t} AS {c}" for c, t in COLUMNS) + " WHERE false"
    listing = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    source = f"read_parquet([{listing}], union_by_name = true)"
    present = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    return "SELECT " + ", ".join(c if c in present else f"NULL::{t} AS {c}" for c, t in COLUMNS) + f" FROM {source}"


def migrate(con: duckdb.DuckDBPyConnection) -> None:
    """A database from before the events folder holds `events` as a table: write it out once, and drop it.
    Then (and on every read-write open) define the view over the files this database lists."""
    kind = con.execute("SELECT table_type FROM information_schema.tables WHERE table_schema = 'main' "
                       "AND table_catalog = current_database() AND table_name = 'events'").fetchone()
    if kind and kind[0] == "BASE TABLE":
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("ALTER TABLE main.events RENAME TO events_before_files")
            write(con, "SELECT * FROM events_before_files", MIGRATED)
            con.execute("DROP TABLE events_before_files")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    else:  # also where the database was copied with its events folder: the view names this folder's files
        define_view(con)


def write(con: duckdb.DuckDBPyConnection, select: str, run_id: str, params: dict | None = None) -> int:
    """Write the events the query `select` (with `params`) returns as new files of run `run_id`, list
    them, and redefine the view; inside the caller's transaction. Returns the number of events written."""
    target = folder(con) / f"{run_id}-{secrets.token_hex(3)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    present = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM ({select})", params or {}).fetchall()}
    columns = ", ".join(f"{c}::{t} AS {c}" if c in present else f"NULL::{t} AS {c}" for c, t in COLUMNS)
    # `select` is one of this package's queries, never input; the target is a parameter.
    con.execute(f"COPY (SELECT {columns} FROM ({select})) TO $target "
                f"(FORMAT parquet, FILE_SIZE_BYTES '{FILE_SIZE}', ROW_GROUP_SIZE {ROW_GROUP_ROWS}, "
                f"FILENAME_PATTERN 'part-{{i}}')",
                {**(params or {}), "target": target.as_posix()})
    return _list(con, target, run_id)


def adopt(con: duckdb.DuckDBPyConnection, batch_files: list[Path], run_id: str) -> int:
    """Move finished batches' events files into the store as they are, as files of run `run_id`, and
    list them; inside the caller's transaction (a file moved for a load that then fails is swept).
    Returns the number of events they hold."""
    if not batch_files:
        return 0
    target = folder(con) / f"{run_id}-{secrets.token_hex(3)}"
    target.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(batch_files):
        shutil.move(path, target / f"batch-{i}.parquet")  # a rename when the work folder is on the same disk
    return _list(con, target, run_id)


def _list(con: duckdb.DuckDBPyConnection, target: Path, run_id: str) -> int:
    """List the files just written into `target` in event_files; an empty file is deleted instead."""
    written = con.execute("SELECT file_name, num_rows FROM parquet_file_metadata(?)",
                          [sorted(p.as_posix() for p in target.glob("*.parquet"))]).fetchall()
    base = folder(con)
    rows = 0
    for path, n in written:
        if n == 0:
            os.remove(path)
            continue
        rows += n
        con.execute("INSERT INTO event_files VALUES (?, ?, ?, now()::TIMESTAMP)",
                    [Path(path).relative_to(base).as_posix(), run_id, n])
    if not any(target.iterdir()):
        target.rmdir()
    define_view(con)
    return rows


def remove(con: duckdb.DuckDBPyConnection, trace_ids: str, runs: str | None = None) -> int:
    """Remove the events of the traces in the relation `trace_ids` (a table or query with a trace_id
    column): each file holding some is written again without them, inside the caller's transaction.
    Only the files of the runs that loaded those traces are searched (`runs`, a relation of run ids;
    default: the traces' own rows), not every night's. Returns the number of events removed."""
    if not con.execute(f"SELECT EXISTS (SELECT 1 FROM {trace_ids})").fetchone()[0]:
        return 0
    runs = runs or f"SELECT run_id FROM traces WHERE trace_id IN (SELECT trace_id FROM {trace_ids})"
    base = folder(con)
    files = [(base / name).as_posix() for (name,) in con.execute(
        f"SELECT file FROM event_files WHERE run_id IN ({runs}) OR run_id = ? ORDER BY file", [MIGRATED]).fetchall()]
    if not files:
        return 0
    touched = con.execute(
        f"SELECT filename, count(*) FROM read_parquet(?, filename = true) "
        f"WHERE trace_id IN (SELECT trace_id FROM {trace_ids}) GROUP BY filename", [files]).fetchall()
    for path, _ in touched:
        name = Path(path).relative_to(base).as_posix()
        run_id = con.execute("SELECT run_id FROM event_files WHERE file = ?", [name]).fetchone()[0]
        con.execute("DELETE FROM event_files WHERE file = ?", [name])
        write(con, f"SELECT * FROM ({reading(con, [path])}) WHERE trace_id NOT IN (SELECT trace_id FROM {trace_ids})",
              run_id)  # which lists the new file and redefines the view
    return sum(n for _, n in touched)


def sweep(db: str) -> int:
    """Delete the files in the events folder of `db` that its (published) database does not list: the
    old versions of rewritten files, and what a failed run wrote. Returns how many were deleted."""
    base = folder_for(db)
    if not base.is_dir() or not os.path.exists(db):
        return 0
    con = duckdb.connect(db, read_only=True)
    try:
        listed = {name for (name,) in con.execute("SELECT file FROM event_files").fetchall()}
    except duckdb.CatalogException:  # a database from before the events folder
        listed = set()
    finally:
        con.close()
    deleted = 0
    for path in sorted(base.rglob("*.parquet")):
        if path.relative_to(base).as_posix() not in listed:
            path.unlink()
            deleted += 1
    for sub in base.iterdir():
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    return deleted
