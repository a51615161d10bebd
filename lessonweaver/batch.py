"""One batch of files through read, adapt, screen and detect, in a private in-memory database.

The batch never touches the lessonweaver database: it writes what survived the screen (and the
accounting) as Parquet into its own folder, and the load stage takes it from there. That keeps raw,
unscreened content in memory only, and lets batches run in parallel or on other machines.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from lessonweaver import adapters, detectors, privacy, read
from lessonweaver.config import Settings
from lessonweaver.discover import InputFile
from lessonweaver.resources import sql_path

# The Parquet files a batch leaves behind, and the query that writes each.
OUTPUTS = {
    "traces": """SELECT trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                        metadata, extra, h.content_hash
                 FROM traces JOIN trace_hashes h USING (trace_id)""",
    "trace_records": """SELECT rt.trace_id, f.path AS file, r.line, r.record
                        FROM record_traces rt JOIN records r USING (file_id, record) JOIN files f USING (file_id)
                        WHERE rt.trace_id IN (SELECT trace_id FROM traces)""",
    "events": """SELECT trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                        parent_id, metadata, extra FROM events""",
    "detections": """SELECT detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id
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


@dataclass
class BatchResult:
    folder: str
    detector_errors: dict[str, str] = field(default_factory=dict)


def connect_staging(settings: Settings) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB bounded by the run's threads and memory limit, with the shared macros."""
    con = duckdb.connect(config={"threads": settings.threads, "memory_limit": settings.memory_limit})
    con.execute(sql_path("macros.sql").read_text(encoding="utf-8"))
    return con


def _account(con: duckdb.DuckDBPyConnection) -> None:
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


def run_batch(files: list[InputFile], settings: Settings, folder: str,
              known_hashes: frozenset[str] = frozenset()) -> BatchResult:
    """Stage `files` and write the batch's Parquet outputs into `folder`."""
    os.makedirs(folder, exist_ok=True)
    con = connect_staging(settings)
    try:
        read.read_files(con, files, known_hashes)
        privacy.scan(con, settings.pii)
        adapters.adapt(con, adapters.load_adapters(), settings.format)
        privacy.screen(con, settings.pii, settings.tenant_salt)
        errors = detectors.detect(con, detectors.load_detectors(settings.detector_dirs))
        _account(con)
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
    except duckdb.Error as exc:
        # The database's message may quote raw record text; never let it reach a log line.
        names = ", ".join(f.path for f in files[:3]) + (" …" if len(files) > 3 else "")
        raise BatchError(f"staging failed for {names}: {privacy.safe_error(exc)}") from None
    finally:
        con.close()
    return BatchResult(folder=folder, detector_errors=errors)
