"""Shared test set-up: one Prefect test server for the session, and helpers that stage real traces."""

import json
import os
from pathlib import Path

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.pop("LESSONWEAVER_DB", None)  # tests name their databases, or expect the default (test_project_db.py)
# A temporary Prefect server per run, stopped with it, unless a test asks for the background one
# (tests/test_prefect_server.py): no server outlives the tests.
os.environ["LESSONWEAVER_PREFECT_IDLE"] = "0"

import duckdb  # noqa: E402
import pytest  # noqa: E402

from lessonweaver import detectors  # noqa: E402
from lessonweaver.batch import connect_staging, stage_in  # noqa: E402
from lessonweaver.config import Settings  # noqa: E402
from lessonweaver.discover import discover  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
# The shipped detectors these tests were written against. A test that expects an exact set of findings
# reads the view `known_detections` (their rows of `detections`) that `stage` leaves: a detector added
# later brings its own cases and changes what no other test expects (tests/test_new_detector.py).
KNOWN_DETECTORS = ("critic_revision", "environment_error", "escalation", "failed_evaluation", "flagged",
                   "handoff_loss", "human_correction", "incomplete_trace", "loop", "outcome_label", "retry",
                   "tool_fallback", "unconfirmed_action", "unrecovered_error", "unverified_claim")


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real, temporary Prefect API for every flow run in the session."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def write_traces(folder: Path, name: str, traces: list) -> Path:
    """Write traces as JSONL (or a .json document when `name` ends in .json)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if name.endswith(".json"):
        path.write_text(json.dumps(traces if len(traces) != 1 else traces[0]), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(t) + "\n" for t in traces), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSON Lines fixture, to cut up or change in a test."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def stage(paths: list[Path], detector_dirs: tuple[str, ...] = (), only: str | None = None, pii: str = "redact",
          secrets: str = "redact"):
    """Run the staging sequence (read, scan, adapt, screen, detect, audit) on real files in a staging
    database, as a batch does; return the connection, with the view `known_detections`."""
    settings = Settings(pii=pii, secrets=secrets, detector_dirs=detector_dirs)
    con = connect_staging(settings)
    found = [d for d in detectors.load_detectors(detector_dirs) if only is None or d.id == only]
    errors = stage_in(con, discover([str(p) for p in paths]), settings, detector_list=found)
    assert not errors, errors
    known = ", ".join(f"'{d}'" for d in KNOWN_DETECTORS)
    con.execute(f"CREATE TEMP VIEW known_detections AS SELECT * FROM detections WHERE detector IN ({known})")
    return con


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`lessonweaver ARGV...` in this process: (exit code, stdout, stderr)."""
    from lessonweaver.cli import main

    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(con, query: str, params: list | None = None) -> list[dict]:
    cur = con.execute(query, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def query_db(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    """A query's rows from a database file, opened read-only for just this query."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def copy_db(source: Path, target: Path) -> Path:
    """A copy of a lessonweaver database: the file and its events folder beside it (eventstore)."""
    import shutil

    from lessonweaver.eventstore import folder_for

    shutil.copy(source, target)
    if folder_for(str(source)).is_dir():
        shutil.copytree(folder_for(str(source)), folder_for(str(target)))
    return target


def leaks(db: Path, out: Path | None, needle: str) -> list[str]:
    """The files a run leaves (the database, its WAL and copies, its event files, the reports) that hold
    `needle`: in their bytes, or, for Parquet (compressed), in the text of any of their rows."""
    from lessonweaver.eventstore import folder_for

    files = [*db.parent.glob(db.name + "*"), *folder_for(str(db)).rglob("*"), *(out.iterdir() if out else [])]
    found = [str(p) for p in files if p.is_file() and needle.encode() in p.read_bytes()]
    for p in (f for f in files if f.suffix == ".parquet"):
        con = duckdb.connect()
        try:
            rows = con.execute("SELECT count(*) FROM read_parquet(?) t WHERE contains(t::VARCHAR, ?)",
                               [str(p), needle]).fetchone()[0]
        finally:
            con.close()
        if rows:
            found.append(str(p))
    return found


def events_of(con, trace_id: str) -> list[dict]:
    """A staged trace's events, in order."""
    return rows(con, "SELECT * FROM events WHERE trace_id = ? ORDER BY seq", [trace_id])


# What two runs over the same input must agree on, leaving out the ids and times of the runs themselves.
STATE_QUERIES = {
    "traces": "SELECT trace_id, format, source, task, outcome, tenant, file, line, metadata, extra, content_hash FROM traces",
    "events": "SELECT * FROM events",
    "detections": "SELECT detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id FROM detections",
    "lessons": "SELECT * EXCLUDE (first_seen, last_seen) FROM lessons",
    "quarantine": "SELECT trace_id, file, line, reason FROM quarantine",
    "rejects": "SELECT file, line, record, reason FROM rejects",
    "ingested_files": "SELECT path, content_hash, format, records, loaded, quarantined, rejected, note FROM ingested_files",
}


def run_state(db: Path, out: Path) -> dict:
    """The tables and lessons.jsonl of a finished run, comparable with another run's."""
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        state = {name: sorted(map(repr, con.execute(q).fetchall())) for name, q in STATE_QUERIES.items()}
    finally:
        con.close()
    lessons = [json.loads(line) for line in (out / "lessons.jsonl").read_text().splitlines()]
    state["lessons.jsonl"] = sorted((json.dumps({k: v for k, v in lesson.items() if k not in ("first_seen", "last_seen")},
                                                sort_keys=True) for lesson in lessons))
    state["reports"] = sorted(p.name for p in out.iterdir())
    return state


DEMO_NIGHT = "2026-11-29"


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """The demo data (data/) run once through the pipeline in this process (no Prefect), counted for
    DEMO_NIGHT: a real database, with its reports in `reports/` beside it. Tests that write copy it first
    (copy_db)."""
    from lessonweaver import pipeline

    folder = tmp_path_factory.mktemp("demo")
    pipeline.run_local(Settings(paths=(str(REPO / "data"),), db=str(folder / "lw.duckdb"),
                                out=str(folder / "reports"), night=DEMO_NIGHT))
    return folder / "lw.duckdb"
