"""Nothing lost across runs: changed files, re-deliveries, conflicts and held-back ids, all accounted for."""

import json
import os
from pathlib import Path


from conftest import query_db
from flows.nightly import nightly


def trace(tid: str, task: str = "Close a ticket", **meta) -> dict:
    return {"trace_id": tid, "source": "agent", "task": task, "outcome": "success", "metadata": meta,
            "events": [{"id": "e1", "type": "human_correction", "content": f"Check the ticket history first ({tid})."}]}


def write(path: Path, traces: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))


def balanced(db: Path) -> bool:
    return query_db(db, "SELECT count(*) FROM ingested_files WHERE records <> loaded + quarantined + rejected") == [(0,)]


def run(folder: Path, db: Path) -> dict:
    return nightly(paths=[str(folder)], db=str(db), out=str(db.parent / "reports"))


def test_a_changed_file_replaces_what_came_from_it(prefect_server, tmp_path: Path):
    folder, db = tmp_path / "in", tmp_path / "lw.duckdb"
    write(folder / "a.jsonl", [trace("a1"), trace("a2")])
    run(folder, db)
    write(folder / "a.jsonl", [trace("a1", task="Close a ticket politely"), trace("a3")])
    os.utime(folder / "a.jsonl", (1, 1))  # a different mtime, as a rewrite would give
    second = run(folder, db)
    assert second.traces_loaded == 2 and second.traces_conflicting == 0
    assert query_db(db, "SELECT trace_id, task FROM traces ORDER BY 1") == [("a1", "Close a ticket politely"), ("a3", "Close a ticket")]
    assert query_db(db, "SELECT count(*), count(DISTINCT content_hash) FROM ingested_files WHERE path LIKE '%a.jsonl'") == [(1, 1)]
    assert query_db(db, "SELECT DISTINCT trace_id FROM detections ORDER BY 1") == [("a1",), ("a3",)]
    assert balanced(db)


def test_redelivery_conflict_and_held_back_ids(prefect_server, tmp_path: Path):
    folder, db = tmp_path / "in", tmp_path / "lw.duckdb"
    write(folder / "night1.jsonl", [trace("t1"), trace("q1", contains_pii=True), trace("t2")])
    run(folder, db)
    write(folder / "night2.jsonl", [trace("t1"), trace("t2", task="Something else"), trace("q1"), trace("t3")])
    second = run(folder, db)
    assert (second.traces_loaded, second.traces_duplicate, second.traces_conflicting) == (1, 1, 1)
    accounts = query_db(db, "SELECT records, loaded, quarantined, rejected FROM ingested_files WHERE path LIKE '%night2.jsonl'")
    assert accounts == [(4, 2, 1, 1)]
    assert query_db(db, "SELECT line, reason FROM rejects") == [
        (2, f"conflicting duplicate of trace_id t2 from {folder / 'night1.jsonl'}")]
    assert query_db(db, "SELECT task FROM traces WHERE trace_id = 't2'") == [("Close a ticket",)]
    assert query_db(db, "SELECT count(*) FROM traces WHERE trace_id = 'q1'") == [(0,)]
    assert query_db(db, "SELECT DISTINCT reason FROM quarantine WHERE trace_id = 'q1'") == [("tag:contains_pii",)]
    assert balanced(db)


def test_a_second_run_on_the_same_database_fails_at_once(tmp_path: Path, capsys):
    from lessonweaver import store
    from lessonweaver.cli import main

    write(tmp_path / "in" / "a.jsonl", [trace("a1")])
    db = tmp_path / "lw.duckdb"
    with store.run_lock(str(db)):
        assert main(["run", str(tmp_path / "in"), "--db", str(db), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"lessonweaver: error: {db} is in use by another lessonweaver run; try again when it has finished\n"


def test_only_transient_read_errors_retry_a_batch():
    from prefect.states import Failed

    from flows.nightly import _transient
    from lessonweaver.batch import BatchError
    from lessonweaver.read import TransientReadError

    assert _transient(None, None, Failed(data=TransientReadError("traces/a.jsonl: Input/output error")))
    assert not _transient(None, None, Failed(data=BatchError("staging failed for traces/a.jsonl")))


def test_the_refusal_names_the_command_that_holds_the_database(tmp_path: Path, capsys):
    """A run refused while a review decision is being written says a review holds it, not a run."""
    from lessonweaver import store
    from lessonweaver.cli import main

    write(tmp_path / "in" / "a.jsonl", [trace("a1")])
    db = tmp_path / "lw.duckdb"
    with store.writing(str(db), "review"):
        assert main(["run", str(tmp_path / "in"), "--db", str(db), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (f"lessonweaver: error: {db} is in use by another lessonweaver review; "
                                       "try again when it has finished\n")
    assert main(["run", str(tmp_path / "in"), "--db", str(db), "--out", str(tmp_path / "out"), "--no-prefect", "-q"]) == 0
