"""The whole pipeline through the real Prefect flow and the real CLI, on files written here."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, leaks, query_db, run_state, write_traces
from flows.nightly import nightly
from lessonweaver.cli import main

MARKER = "PLANTED-SENSITIVE-9c41f"


def trace(tid: str, events: list, outcome: str = "success", **extra) -> dict:
    evs = [{"id": f"e{i}", **e} for i, e in enumerate(events, 1)]
    return {"trace_id": tid, "source": "agent-x", "task": "Triage a ticket", "events": evs, "outcome": outcome, **extra}


def corrected(tid: str, n: int) -> dict:
    return trace(tid, [{"type": "assistant_message", "content": f"Closed ticket #{n} as a duplicate."},
                       {"type": "human_correction", "content": f"Ticket #{n} was not a duplicate; search open tickets first."}],
                 outcome="corrected_by_human")


def sensitive(tid: str, meta: dict, marker: str = MARKER) -> dict:
    return trace(tid, [{"type": "user_message", "content": f"my account is {marker}"},
                       {"type": "human_correction", "content": f"do not echo {marker}"}],
                 metadata={**meta, "customer": marker})


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    write_traces(folder, "night1.jsonl", [corrected(f"c{i}", 100 + i) for i in range(5)] + [
        trace("clean", [{"type": "user_message", "content": "hi"}, {"type": "final_answer", "content": "done"}]),
        sensitive("q-pii", {"contains_pii": True}),
        sensitive("q-secret", {"contains_secret": "yes"}),
        sensitive("q-sens", {"sensitivity": "high"}),
        sensitive("q-class", {"data_classification": "restricted"}),
        sensitive("q-one", {"contains_pii": 1}),
        trace("optout", [{"type": "human_correction", "content": "Not worth a lesson."}], metadata={"lesson_candidate": False}),
    ])
    with open(folder / "night1.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"trace_id": "torn", "source": "agent-x", "task": "' + MARKER + '\n')
    write_traces(folder, "single.json", [sensitive("q-low-ok", {"sensitivity": "low", "data_classification": "internal"}, "harmless-text")])
    return folder


def test_flow_end_to_end(prefect_server, inputs: Path, tmp_path: Path):
    db, out = tmp_path / "db" / "lw.duckdb", tmp_path / "reports"
    run = nightly(paths=[str(inputs)], db=str(db), out=str(out))
    assert run.status == "completed"
    assert (run.records, run.records_loaded, run.records_quarantined, run.records_rejected) == (14, 8, 5, 1)
    assert run.quarantine_reasons == {"tag:contains_pii": 2, "tag:contains_secret": 1,
                                         "tag:data_classification": 1, "tag:sensitivity": 1}
    assert query_db(db, "SELECT count(*) FROM traces") == [(8,)]
    # Five corrections that differ only in ticket numbers are one lesson with five occurrences.
    lessons = query_db(db, "SELECT detector, occurrences, trace_count, example_trace_ids FROM lessons ORDER BY 2 DESC")
    assert lessons == [("human_correction", 5, 5, ["c0", "c1", "c2", "c3", "c4"]),
                       ("human_correction", 1, 1, ["q-low-ok"])]
    # The opted-out trace is detected but joins no lesson.
    assert query_db(db, "SELECT lesson_id FROM detections WHERE trace_id = 'optout'") == [(None,)]
    assert query_db(db, "SELECT file, line, reason FROM rejects") == [
        (str(inputs / "night1.jsonl"), 13, "invalid JSON (unexpected end of input)")]
    report = (out / "lessons.md").read_text(encoding="utf-8")
    assert "5 times in 5 sessions" in report and "tag:contains_pii" in report
    jsonl = [json.loads(line) for line in (out / "lessons.jsonl").read_text().splitlines()]
    assert [(j["detector"], j["occurrences"]) for j in jsonl] == [("human_correction", 5), ("human_correction", 1)]


def test_quarantined_content_reaches_no_byte_of_any_output(prefect_server, inputs: Path, tmp_path: Path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    nightly(paths=[str(inputs)], db=str(db), out=str(out))
    assert query_db(db, "SELECT count(*) FROM traces WHERE trace_id = 'q-low-ok'") == [(1,)]
    assert query_db(db, "SELECT count(*) FROM quarantine") == [(5,)]
    assert list((tmp_path / "lw.events").rglob("*.parquet"))
    assert leaks(db, out, MARKER) == []


def test_rerun_is_idempotent_and_new_files_add_only_their_traces(prefect_server, inputs: Path, tmp_path: Path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    counts = "SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM events), (SELECT count(*) FROM detections), " \
             "(SELECT count(*) FROM lessons), (SELECT count(*) FROM quarantine), (SELECT count(*) FROM rejects)"
    nightly(paths=[str(inputs)], db=str(db), out=str(out))
    first = query_db(db, counts)
    second_run = nightly(paths=[str(inputs)], db=str(db), out=str(out))
    assert second_run.files_skipped == 2 and second_run.records == 0
    assert query_db(db, counts) == first
    # The same content under another name is recognised and not read into the database again.
    (inputs / "copy-of-night1.jsonl").write_bytes((inputs / "night1.jsonl").read_bytes())
    third = nightly(paths=[str(inputs)], db=str(db), out=str(out))
    assert third.files_skipped == 3 and query_db(db, counts) == first
    write_traces(inputs, "night2.jsonl", [corrected("c9", 109)])
    fourth = nightly(paths=[str(inputs)], db=str(db), out=str(out))
    assert fourth.traces_loaded == 1 and fourth.lessons_new == 0
    assert query_db(db, "SELECT max(occurrences), count(*) FROM lessons") == [(6, 2)]


def test_cli_in_process(prefect_server, inputs: Path, tmp_path: Path, capsys):
    db = tmp_path / "nested" / "lw.duckdb"
    assert main(["run", str(inputs), "--db", str(db), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "records:    14 = 8 loaded + 5 quarantined + 1 rejected" in printed
    assert "human_correction" in printed and MARKER not in printed
    assert query_db(db, "SELECT count(*) FROM runs WHERE status = 'completed'") == [(1,)]


def test_without_prefect_the_same_tables_and_reports(prefect_server, tmp_path: Path, capsys, monkeypatch):
    """`run --no-prefect` runs the same pipeline in this process: the demo data gives what the flow gives."""
    monkeypatch.setenv("LESSONWEAVER_TENANT_SALT", "same-salt")  # both databases hash tenants alike
    flowed = nightly(paths=[str(REPO / "data")], db=str(tmp_path / "flow.duckdb"), out=str(tmp_path / "flow"))
    assert main(["run", str(REPO / "data"), "--no-prefect", "--db", str(tmp_path / "local.duckdb"),
                 "--out", str(tmp_path / "local")]) == 0
    printed = capsys.readouterr().out
    assert f"records:    {flowed.records} = {flowed.records_loaded} loaded" in printed and " s in-process (" in printed
    assert run_state(tmp_path / "local.duckdb", tmp_path / "local") == run_state(tmp_path / "flow.duckdb",
                                                                                  tmp_path / "flow")
    rows = query_db(tmp_path / "local.duckdb", "SELECT status, records, detections FROM runs")
    assert rows == [("completed", flowed.records, flowed.detections)]


def test_cli_errors_are_one_clear_line(tmp_path: Path, capsys):
    assert main(["run", str(tmp_path / "missing"), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert capsys.readouterr().err == f"lessonweaver: error: input path does not exist: {tmp_path / 'missing'}\n"
    bad = tmp_path / "detectors"
    bad.mkdir()
    (bad / "broken.sql").write_text("-- id: broken\n-- title: Broken\nSELECT 1\n")
    assert main(["run", str(tmp_path), "--detectors", str(bad), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert "header is missing severity, description" in capsys.readouterr().err


def test_a_bad_memory_limit_is_one_clear_line(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("LESSONWEAVER_MEMORY_LIMIT", "plenty")
    assert main(["run", str(tmp_path), "--db", str(tmp_path / "x.duckdb")]) == 2
    assert capsys.readouterr().err == ("lessonweaver: error: memory limit must be a size such as 1536MB or 2GB, "
                                       "not 'plenty'\n")


def test_user_detector_folder(prefect_server, inputs: Path, tmp_path: Path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "long_ticket_close.sql").write_text(
        "-- id: closed_as_duplicate\n-- title: Closed as a duplicate\n-- severity: low\n"
        "-- description: The agent closed a ticket as a duplicate.\n"
        "SELECT trace_id, event_id, content AS evidence FROM events WHERE content ILIKE '%as a duplicate%'\n")
    db = tmp_path / "lw.duckdb"
    run = nightly(paths=[str(inputs)], db=str(db), out=str(tmp_path / "out"), detector_dirs=[str(mine)])
    assert run.detections_by_detector["closed_as_duplicate"] == 5
    assert query_db(db, "SELECT count(*) FROM lessons WHERE detector = 'closed_as_duplicate'") == [(1,)]


@pytest.mark.slow
def test_console_script_subprocess(inputs: Path, tmp_path: Path):
    """The installed `lessonweaver` command, as a user types it (starts its own temporary Prefect server)."""
    exe = Path(sys.executable).with_name("lessonweaver")
    db = tmp_path / "lw.duckdb"
    done = subprocess.run([str(exe), "run", str(inputs), "--db", str(db), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PREFECT_HOME": str(tmp_path / "ph"),
                               "LESSONWEAVER_PREFECT_IDLE": "0"})
    assert done.returncode == 0, done.stderr
    assert "lessons:    2 (2 first seen in this run)" in done.stdout
    assert MARKER not in done.stdout + done.stderr
    assert query_db(db, "SELECT count(*) FROM traces") == [(8,)]
    assert not (tmp_path / "ph" / "lessonweaver-server.json").exists()  # no server left running after the test


def test_the_summary_names_what_was_not_understood(prefect_server, tmp_path: Path, capsys):
    """Unknown event types are kept and counted by name; records no adapter reads are counted by their
    top-level keys, so a user sees at once what lessonweaver did not understand."""
    folder = tmp_path / "in"
    write_traces(folder, "t.jsonl", [trace("u1", [{"type": "recovery_state", "content": "checkpoint"},
                                                  {"type": "recovery_state", "content": "checkpoint"},
                                                  {"type": "vendor_ping", "content": "pong"}])])
    (folder / "cases.jsonl").write_text("".join(json.dumps({"case_id": f"c{i}", "input": "x", "expected": []}) + "\n"
                                               for i in range(3)))
    assert main(["run", str(folder), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "(3 of unknown type, kept: recovery_state ×2, vendor_ping ×1)" in out
    assert "not understood     3  records with keys {case_id, expected, input} in " in out
