"""One batch of files through read, adapt, screen and detect, in a private in-memory database.

The batch never touches the lessonweaver database: it writes what survived the screen (and the
accounting) as Parquet into its own folder, and the load stage takes it from there. That keeps raw,
unscreened content in memory only, and lets batches run in parallel or on other machines.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from lessonweaver import adapters, detectors, privacy, read
from lessonweaver.config import Settings, batch_memory_limit, batch_threads
from lessonweaver.discover import InputFile
from lessonweaver.errors import safe_error
from lessonweaver.resources import sql_path

# The Parquet files a batch leaves behind, and the query that writes each.
OUTPUTS = {
    "traces": """SELECT trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                        metadata, extra, h.content_hash
                 FROM traces JOIN trace_hashes h USING (trace_id)""",
    # Which records made each trace, the quarantined ones too: a trace quarantined after the load moves
    # only those of its records that no quarantined trace had already claimed (store.quarantine_loaded).
    "trace_records": """SELECT rt.trace_id, f.path AS file, r.line, r.record,
                               rt.trace_id IN (SELECT trace_id FROM quarantine) AS quarantined
                        FROM record_traces rt JOIN records r USING (file_id, record) JOIN files f USING (file_id)
                        WHERE rt.trace_id IN (SELECT trace_id FROM traces UNION ALL SELECT trace_id FROM quarantine)""",
    "events": """SELECT trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                        parent_id, metadata, extra FROM events""",
    "detections": """SELECT detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id,
                            category, confidence, lesson_key
                     FROM detections""",
    "quarantine": """SELECT q.trace_id, f.path AS file, r.line, q.reason
                     FROM quarantine q
                     JOIN (SELECT trace_id, file_id, record FROM record_traces
                           QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY file_id, record) = 1) rt
                          USING (trace_id)
                     JOIN records r USING (file_id, record)
                     JOIN files f USING (file_id)""",
    "rejects": """SELECT f.path AS file, j.line, j.record, j.reason
                  FROM rejects j JOIN files f USING (file_id)""",
    "files": "SELECT * FROM file_accounts",
}


class BatchError(RuntimeError):
    """A batch that failed for a reason other than its input (input problems become rejects)."""


class MemoryShareExceeded(BatchError):
    """A batch ran out of its share of the run's memory limit (see config.batch_memory_limit)."""


@dataclass
class BatchResult:
    folder: str
    detector_errors: dict[str, str] = field(default_factory=dict)
    alone: bool = False  # ran out of its share of memory and was staged again with the whole limit


def connect_staging(settings: Settings, spill: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB bounded by the batch's share of the run's threads and memory limit, with the
    shared macros. Past the limit it spills to `spill` (the batch's own folder), never to the current
    directory."""
    config: dict[str, object] = {"threads": batch_threads(settings), "memory_limit": batch_memory_limit(settings)}
    if spill:
        config["temp_directory"] = spill
    con = duckdb.connect(config=config)
    con.execute(sql_path("macros.sql").read_text(encoding="utf-8"))
    return con


def account(con: duckdb.DuckDBPyConnection) -> None:
    """Per file: every record is loaded, quarantined or rejected, exactly once."""
    con.execute(
        """
        CREATE OR REPLACE TABLE file_accounts AS
        WITH fate AS (
            SELECT r.file_id, r.record,
                   CASE WHEN j.record IS NOT NULL THEN 'rejected'
                        WHEN bool_or(q.trace_id IS NOT NULL) THEN 'quarantined'
                        WHEN bool_or(t.trace_id IS NOT NULL) THEN 'loaded'
                        ELSE 'unaccounted' END AS fate
            FROM (SELECT file_id, record FROM records
                  UNION SELECT file_id, record FROM rejects) r
            LEFT JOIN (SELECT DISTINCT file_id, record FROM rejects) j USING (file_id, record)
            LEFT JOIN record_traces rt USING (file_id, record)
            LEFT JOIN quarantine q ON q.trace_id = rt.trace_id
            LEFT JOIN (SELECT DISTINCT trace_id FROM traces) t ON t.trace_id = rt.trace_id
            GROUP BY r.file_id, r.record, j.record
        )
        SELECT fl.path, fl.sha256, fl.size, fl.mtime, ff.format, fl.skipped, fl.note,
               count(fate.record) AS records,
               count(*) FILTER (WHERE fate = 'loaded') AS loaded,
               count(*) FILTER (WHERE fate = 'quarantined') AS quarantined,
               count(*) FILTER (WHERE fate = 'rejected') AS rejected,
               count(*) FILTER (WHERE fate = 'unaccounted') AS unaccounted
        FROM files fl LEFT JOIN file_formats ff USING (file_id) LEFT JOIN fate USING (file_id)
        GROUP BY ALL
        """
    )


def write_outputs(con: duckdb.DuckDBPyConnection, folder: str) -> None:
    """Write the batch's outputs (OUTPUTS) as Parquet into `folder`, each trace with its content hash."""
    # A trace's content, as it will be stored: the same trace delivered again hashes the same.
    con.execute(
        """
        CREATE OR REPLACE TABLE trace_hashes AS
        SELECT rt.trace_id,
               md5(array_to_string(list_sort(list_distinct(list(md5(json(r.doc))))), ',')) AS content_hash
        FROM record_traces rt JOIN records r USING (file_id, record)
        WHERE rt.trace_id IN (SELECT trace_id FROM traces)
        GROUP BY rt.trace_id
        """
    )
    for name, query in OUTPUTS.items():
        target = (Path(folder) / f"{name}.parquet").as_posix().replace("'", "''")
        con.execute(f"COPY ({query}) TO '{target}' (FORMAT parquet)")


def _keep_only(con: duckdb.DuckDBPyConnection, trace_ids: frozenset[str]) -> None:
    con.execute("CREATE OR REPLACE TEMP TABLE keep AS SELECT unnest(?::VARCHAR[]) AS trace_id", [sorted(trace_ids)])
    for table in ("traces", "events", "detections", "quarantine", "record_traces"):
        con.execute(f"DELETE FROM {table} WHERE trace_id NOT IN (SELECT trace_id FROM keep)")
    con.execute("DELETE FROM rejects; DELETE FROM file_accounts; DROP TABLE keep")


def split_traces(folders: list[str], gathering_formats: list[str],
                 memory_limit: str | None = None) -> tuple[list[str], list[str]]:
    """Traces of gathering formats whose records were staged in more than one batch, with different
    content in each: (their ids, the files their records came from). Those files are staged again together.

    Only traces with a record of a gathering format are grouped, so a night of one-trace-per-line files
    costs one scan of the batches' trace ids; `memory_limit` bounds the grouping (it spills next to the
    batches' folders)."""
    if len(folders) < 2 or not gathering_formats:
        return [], []
    paths = [(Path(f) / "traces.parquet").as_posix() for f in folders]
    config: dict[str, object] = {"threads": 1}
    if memory_limit:
        config.update(memory_limit=memory_limit, temp_directory=str(Path(folders[0]).parent / "split-spill"))
    con = duckdb.connect(config=config)
    try:
        # Different files and different content: min and max differ, which needs no set per trace.
        ids = [r[0] for r in con.execute(
            """
            SELECT trace_id FROM read_parquet(?, filename = true)
            SEMI JOIN (SELECT DISTINCT trace_id FROM read_parquet(?) WHERE list_contains(?, format)) USING (trace_id)
            GROUP BY trace_id
            HAVING min(filename) <> max(filename) AND min(content_hash) <> max(content_hash)
               AND bool_and(list_contains(?, format))
            ORDER BY trace_id
            """, [paths, paths, gathering_formats, gathering_formats]).fetchall()]
        if not ids:
            return [], []
        records = [(Path(f) / "trace_records.parquet").as_posix() for f in folders]
        files = [r[0] for r in con.execute(
            "SELECT DISTINCT file FROM read_parquet(?) WHERE list_contains(?, trace_id) ORDER BY file",
            [records, ids]).fetchall()]
        return ids, files
    finally:
        con.close()


def run_batch(files: list[InputFile], settings: Settings, folder: str,
              known_hashes: frozenset[str] = frozenset(), only_traces: frozenset[str] | None = None) -> BatchResult:
    """Stage `files` and write the batch's Parquet outputs into `folder`.

    With `only_traces`, a merge batch: the files were staged before, in other batches, and are staged
    again together so that traces split between those batches are gathered whole. It keeps only those
    traces and accounts for no record (the first batches did).

    A batch that runs out of its share of the memory limit (a very large trace) is staged once more
    with the whole limit rather than failing the night; for that moment the run may use more than its
    limit."""
    try:
        return _stage(files, settings, folder, known_hashes, only_traces)
    except MemoryShareExceeded:
        result = _stage(files, replace(settings, workers=1), folder, known_hashes, only_traces)
        result.alone = True
        return result


def stage_in(con: duckdb.DuckDBPyConnection, files: list[InputFile], settings: Settings,
             known_hashes: frozenset[str] = frozenset(), detector_list: list[detectors.Detector] | None = None,
             on_step: Callable[[str, float], None] | None = None) -> dict[str, str]:
    """The staging sequence on a staging connection: read, scan, adapt, screen, detect, audit what was
    staged, and account for every record. Returns the detectors that failed (id -> why); `on_step`
    hears each step's seconds (the benchmarks' breakdown)."""
    found = detector_list if detector_list is not None else detectors.load_detectors(settings.detector_dirs)
    errors: dict[str, str] = {}
    sequence: list[tuple[str, Callable[[], object]]] = [
        ("read", lambda: read.read_files(con, files, known_hashes)),
        ("scan", lambda: privacy.scan(con, settings.pii)),
        ("adapt", lambda: adapters.adapt(con, adapters.load_adapters(), settings.format)),
        ("screen", lambda: privacy.screen(con, settings.pii, settings.tenant_salt)),
        ("detect", lambda: errors.update(detectors.detect(con, found))),
        ("audit staged", lambda: privacy.audit_staged(con)),
        ("account", lambda: account(con)),
    ]
    for name, step in sequence:
        started = time.perf_counter()
        step()
        if on_step:
            on_step(name, time.perf_counter() - started)
    return errors


def _stage(files: list[InputFile], settings: Settings, folder: str, known_hashes: frozenset[str],
           only_traces: frozenset[str] | None) -> BatchResult:
    os.makedirs(folder, exist_ok=True)
    con = connect_staging(settings, str(Path(folder) / "spill"))
    try:
        errors = stage_in(con, files, settings, known_hashes)
        if only_traces is not None:
            _keep_only(con, only_traces)
        write_outputs(con, folder)
    except duckdb.Error as exc:
        # The database's message may quote raw record text; never let it reach a log line.
        names = ", ".join(f.path for f in files[:3]) + (" …" if len(files) > 3 else "")
        share = isinstance(exc, duckdb.OutOfMemoryException) and settings.shared_machine and settings.workers > 1
        raise (MemoryShareExceeded if share else BatchError)(
            f"staging failed for {names}: {safe_error(exc)}") from None
    finally:
        con.close()
    return BatchResult(folder=folder, detector_errors=errors)
