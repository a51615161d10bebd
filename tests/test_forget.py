"""Forgetting and retention on the event files: `lessonweaver forget` leaves no byte of a trace in the
database, its event files or (from their next render) the reports; a forgotten trace delivered again
is not stored again; `--retain-days` drops old events while lessons keep their counts."""

import json
from pathlib import Path

import duckdb
import pytest

from conftest import REPO, leaks, query_db, write_traces
from lessonweaver.cli import main
from lessonweaver.privacy import tenant_hash

MARKER = "FORGET-ME-7Q2"


def corrected(tid: str, **extra) -> dict:
    return {"trace_id": tid, "source": extra.pop("source", "helpdesk"), "task": "Close a ticket",
            "outcome": "corrected_by_human", **extra,
            "events": [{"id": "e1", "type": "user_message", "content": f"ticket of {tid}"},
                       {"id": "e2", "type": "human_correction", "content": f"Check the queue first ({tid})."}]}


def run(inputs: Path, db: Path, *more: str) -> int:
    return main(["run", str(inputs), "--db", str(db), "--out", str(db.parent / "out"), "-q", "--no-prefect", *more])


@pytest.fixture()
def stored(tmp_path: Path) -> tuple[Path, Path]:
    inputs = tmp_path / "in"
    write_traces(inputs, "a.jsonl", [corrected(MARKER, metadata={"tenant_id": "acme"}), corrected("keep-1"),
                                     corrected("keep-2", source="billing")])
    db = tmp_path / "lw.duckdb"
    assert run(inputs, db) == 0
    assert leaks(db, tmp_path / "out", MARKER) != []  # the check can see it
    return inputs, db


def test_forget_a_trace_leaves_no_byte_of_it(stored, tmp_path: Path, capsys):
    inputs, db = stored
    capsys.readouterr()
    assert main(["forget", "--db", str(db), "--trace", MARKER]) == 0
    assert capsys.readouterr().out.startswith("forget: 1 trace, 2 events and 1 detection removed; lessons ")
    assert leaks(db, None, MARKER) == []
    assert query_db(db, "SELECT count(*), min(asked_by) FROM forgotten") == [(1, "trace")]
    assert query_db(db, "SELECT count(*) FROM events") == [(4,)]
    assert query_db(db, "SELECT count(*) FROM lessons WHERE list_contains(example_trace_ids, ?)", [MARKER]) == [(0,)]
    assert run(inputs, db) == 0  # the next render
    assert leaks(db, tmp_path / "out", MARKER) == []


def test_a_forgotten_trace_delivered_again_is_not_stored_again(stored, tmp_path: Path):
    inputs, db = stored
    assert main(["forget", "--db", str(db), "--trace", MARKER]) == 0
    # The file changes (a trace added), so it is read again, the forgotten trace with it.
    write_traces(inputs, "a.jsonl", [corrected(MARKER), corrected("keep-1"), corrected("keep-2"), corrected("new-1")])
    assert run(inputs, db) == 0
    assert query_db(db, "SELECT trace_id FROM traces ORDER BY 1") == [("keep-1",), ("keep-2",), ("new-1",)]
    assert query_db(db, "SELECT line, reason FROM rejects") == [
        (1, "a trace lessonweaver forget removed: not stored again")]
    assert query_db(db, "SELECT records, loaded, rejected FROM ingested_files") == [(4, 3, 1)]
    assert leaks(db, tmp_path / "out", MARKER) == []


def test_forget_by_tenant_and_by_source(stored, capsys):
    _, db = stored
    assert query_db(db, "SELECT count(*) FROM traces WHERE tenant IS NOT NULL") == [(1,)]
    assert main(["forget", "--db", str(db), "--tenant", "acme"]) == 0
    assert main(["forget", "--db", str(db), "--source", "billing"]) == 0
    assert query_db(db, "SELECT trace_id FROM traces") == [("keep-1",)]
    assert query_db(db, "SELECT asked_by FROM forgotten ORDER BY 1") == [("source",), ("tenant",)]
    assert tenant_hash("", "acme") != "acme"  # what the store keeps is a hash, and forget finds it by the name


def test_forget_says_when_nothing_matches(stored, capsys):
    _, db = stored
    capsys.readouterr()
    assert main(["forget", "--db", str(db), "--trace", "no-such-trace"]) == 1
    assert capsys.readouterr().out == "forget: no stored trace matches; nothing changed\n"
    assert main(["forget", "--db", str(db)]) == 2
    assert capsys.readouterr().err == "lessonweaver: error: forget needs --trace ID, --tenant T or --source S\n"


def test_retention_drops_old_events_and_lessons_keep_their_counts(tmp_path: Path):
    inputs, db = tmp_path / "in", tmp_path / "lw.duckdb"
    write_traces(inputs, "old.jsonl", [corrected("old-1")])
    write_traces(inputs, "new.jsonl", [corrected("new-1")])
    assert run(inputs, db) == 0
    # The lessonweaver format has no start time: a trace's age is then when it was loaded.
    con = duckdb.connect(str(db))
    con.execute("UPDATE traces SET loaded_at = loaded_at - INTERVAL 40 DAY WHERE trace_id = 'old-1'")
    con.close()
    lessons = query_db(db, "SELECT lesson_id, occurrences, trace_count FROM lessons ORDER BY 1")
    assert run(inputs, db, "--retain-days", "30") == 0
    assert query_db(db, "SELECT DISTINCT trace_id FROM events") == [("new-1",)]
    assert query_db(db, "SELECT count(*) FROM traces") == [(2,)]
    assert query_db(db, "SELECT lesson_id, occurrences, trace_count FROM lessons ORDER BY 1") == lessons
    assert query_db(db, "SELECT events_dropped FROM runs ORDER BY started_at") == [(0,), (2,)]
    run_rows = json.loads((tmp_path / "out" / "lessons.jsonl").read_text().splitlines()[0])
    assert run_rows["occurrences"] == 2


def test_forget_and_redetect_weave_with_the_resolve_after_the_runs_used(tmp_path: Path, capsys):
    """A run with --resolve-after 1 calls lessons unseen for three nights resolved; weaving again after a
    forget or a redetect keeps that, rather than going back to the default of 7 nights."""
    db, out = str(tmp_path / "lw.duckdb"), str(tmp_path / "out")
    for night in ("2026-12-01", "2026-12-04"):
        assert main(["run", str(REPO / "data"), "--db", db, "--out", out, "--no-prefect", "-q", "--night", night,
                     "--resolve-after", "1"]) == 0
    statuses = "SELECT status, count(*) FROM lessons GROUP BY 1"
    total = query_db(tmp_path / "lw.duckdb", "SELECT count(*) FROM lessons")[0][0]
    assert total > 1 and dict(query_db(tmp_path / "lw.duckdb", statuses)) == {"resolved": total}
    some = query_db(tmp_path / "lw.duckdb", "SELECT min(trace_id) FROM detections")[0][0]
    assert main(["forget", "--db", db, "--trace", some]) == 0
    assert set(dict(query_db(tmp_path / "lw.duckdb", statuses))) == {"resolved"}
    assert main(["redetect", "--db", db, "--out", out]) == 0
    assert set(dict(query_db(tmp_path / "lw.duckdb", statuses))) == {"resolved"}
