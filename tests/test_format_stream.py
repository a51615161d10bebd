"""The WebSocket stream-event adapter (sql/adapters/stream.sql) on our own fixtures and on the real samples.

Fixtures in tests/fixtures/formats/stream/: the same run with a failed and retried tool in the documented
shape and in the wire shape, a failed DAG run whose public events are redacted, a successful ReAct run as one
JSON array, a tool start whose failure never reached the stream (plus parallel calls that are not a retry),
and a file with bad records and a replayed event. Runs split over files, files delivered twice and repeats
in the other shape are built from them in a temporary folder. The fixtures in current/ (the names the
producer's current source sends) have tests of their own, in test_format_stream_current.py.
"""

import shutil

import pytest

from conftest import REPO, SHARED, events_of, read_jsonl, rows, stage, write_jsonl
from lessonweaver import read
from lessonweaver.adapters import load_adapters
from lessonweaver.batch import connect_staging
from lessonweaver.config import Settings
from lessonweaver.discover import discover

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "stream"
SAMPLES = SHARED / "samples" / "stream"
CANONICAL = "type, tool_name, status, success, content, ts, extra"
SHEET_RETRIED = "open_sheet"


@pytest.fixture(scope="module")
def con():
    return stage(sorted(p for p in FIXTURES.iterdir() if p.is_file()))



def test_traces(con):
    found = rows(con, "SELECT trace_id, format, source, task, outcome, file, line FROM traces ORDER BY trace_id")
    assert [(t["trace_id"], t["source"], t["task"], t["outcome"]) for t in found] == [
        ("fx-bad", "stream/react", "Draft the onboarding checklist", "incomplete"),
        ("fx-dag-fail", "stream/dag", "Post the March invoices to the ledger", "failed"),
        ("fx-doc-retry", "stream/react", "Summarise the regional sales sheet", "success"),
        ("fx-parallel", "stream", "Search both archives for the contract", "success"),
        ("fx-react-ok", "stream/react", "What is the EUR to CHF rate today?", "success"),
        ("fx-unanswered", "stream/react", "Read my notes and list the open items", "success"),
        ("fx-wire-retry", "stream/react", "Summarise the regional sales sheet", "success"),
    ]
    assert {t["format"] for t in found} == {"stream"}
    by_id = {t["trace_id"]: t for t in found}
    # a trace starts at its first record; an element of a JSON array has no line
    assert by_id["fx-parallel"]["line"] == 8
    assert by_id["fx-react-ok"]["file"].endswith("react_success.json") and by_id["fx-react-ok"]["line"] is None


def test_bad_records_are_rejected_with_their_reason(con):
    found = rows(con, "SELECT f.path, r.line, r.reason FROM rejects r JOIN files f USING (file_id) ORDER BY r.line")
    assert {r["path"].rsplit("/", 1)[-1] for r in found} == {"bad_records.jsonl"}
    assert [(r["line"], r["reason"]) for r in found] == [
        (2, "missing required field 'task_id'"),
        (4, "field 'data' must be an object"),
        (5, "field 'timestamp' must be Unix seconds"),
        (6, "missing required field 'event_type'"),
        (7, "field 'task_id' must be a string"),
    ]
    # line 10 replays b-01 (line 1), line 8 is a visualization update (bookkeeping): linked to their trace,
    # not events
    linked = rows(con, "SELECT r.line, k.trace_id FROM record_links k JOIN records r USING (file_id, record)")
    assert sorted((k["line"], k["trace_id"]) for k in linked if k["trace_id"] == "fx-bad") == [
        (8, "fx-bad"), (10, "fx-bad")]
    # every record is an event, a link or a reject, and nothing of a rejected record is kept
    assert rows(con, "SELECT count(*) AS n FROM records")[0]["n"] == (
        rows(con, "SELECT count(*) AS n FROM events")[0]["n"] + len(linked) + len(found))
    assert "not an object" not in str(rows(con, "SELECT * FROM events"))


def test_event_without_id_or_timestamp_keeps_its_place(con):
    # record 8 (no id, no timestamp) is a visualization update: bookkeeping, linked (see the test above); an
    # event without id or timestamp keeping its place is checked on current/wire_pause_wait_resume.jsonl
    found = events_of(con, "fx-bad")
    assert [(e["event_id"], e["type"], e["raw_type"]) for e in found] == [
        ("b-01", "user_message", "user_message"),
        ("b-03", "workflow_step", "react_task_start"),
        ("b-09", "model_call", "llm_call_start"),
    ]


def test_documented_run_in_order(con):
    found = events_of(con, "fx-doc-retry")
    # d-07 is written before d-06; the timestamps put it back
    assert [e["event_id"] for e in found] == [f"d-{n:02d}" for n in range(1, 14)]
    assert [e["type"] for e in found] == [
        "user_message", "workflow_step", "model_call", "model_call", "tool_call", "tool_result", "model_call",
        "model_call", "tool_call", "tool_result", "workflow_step", "assistant_message", "final_answer"]
    assert [e["tool_name"] for e in found if e["tool_name"]] == ["open_sheet"] * 4
    failed = found[5]
    assert (failed["raw_type"], failed["status"], failed["success"], failed["content"]) == (
        "action_error_tool", "failed", False, "sheet is locked by another editor")
    assert failed["parent_id"] == "d-05"
    assert str(failed["ts"]) == "2026-01-01 10:00:00.600000"
    assert '"error_type":"agent_tool_error"' in failed["extra"]
    assert '"step_id":"react_fx1"' in failed["metadata"]
    assert found[0]["content"].startswith("Summarise the regional sales sheet\n")
    # one final answer: the task_completion; the pattern end that carries it too is a step
    assert found[12]["content"] == "March sales: 1.2M across 4 regions."
    assert (found[10]["raw_type"], found[10]["content"]) == ("task_end_react", "react task end: completed")


def test_wire_and_documented_shapes_give_the_same_events(con):
    query = f"SELECT {CANONICAL} FROM events WHERE trace_id = ? ORDER BY seq"
    wire = rows(con, query, ["fx-wire-retry"])
    assert wire == rows(con, query, ["fx-doc-retry"])
    raw_types = [e["raw_type"] for e in events_of(con, "fx-wire-retry")]
    assert raw_types[4:6] == ["tool_execution_start", "tool_execution_failed"]


def test_failed_dag_with_redacted_events(con):
    found = events_of(con, "fx-dag-fail")
    assert [(e["type"], e["content"]) for e in found] == [
        ("workflow_step", "dag_plan task start"),
        ("workflow_step", "dag_plan task end"),
        ("workflow_step", "dag task start"),
        ("workflow_step", "Fetch invoices"),
        ("tool_call", "invoice_api"),
        ("tool_result", '{"count":12}'),
        ("workflow_step", "Fetch invoices"),
        ("workflow_step", "Post to ledger"),
        ("error", "Task execution failed."),
        ("workflow_step", "dag task end: failed"),
    ]
    # the tool name comes from data.name when there is no data.tool_name
    assert [e["tool_name"] for e in found if e["tool_name"]] == ["invoice_api", "invoice_api"]
    error, end = found[8], found[9]
    assert (error["raw_type"], error["status"], error["success"]) == ("trace_error", "failed", False)
    assert (end["raw_type"], end["status"], end["success"]) == ("dag_execute_end", "failed", False)


def test_json_array_run(con):
    # context compaction is a step; the visualization update is bookkeeping (linked, not an event)
    found = events_of(con, "fx-react-ok")
    assert [(e["type"], e["raw_type"]) for e in found if e["raw_type"] in ("action_start_compact",
                                                                           "system_update_visualization")] == [
        ("workflow_step", "action_start_compact")]
    assert [e["type"] for e in found if e["raw_type"] != "action_start_compact"] == [
        "user_message", "workflow_step", "model_call", "model_call", "tool_call", "tool_result", "model_call",
        "model_call", "workflow_step", "assistant_message", "final_answer"]


def test_unanswered_tool_start(con):
    unanswered = events_of(con, "fx-unanswered")
    assert [(e["event_id"], e["status"], e["success"]) for e in unanswered if e["type"] == "tool_call"] == [
        ("u-02", "no_result", False), ("u-05", None, None)]
    parallel = events_of(con, "fx-parallel")
    assert [(e["status"], e["success"]) for e in parallel if e["type"] == "tool_call"] == [(None, None)] * 2


def test_millisecond_timestamps_are_read_as_such(con):
    last = events_of(con, "fx-parallel")[-1]
    assert (last["event_id"], str(last["ts"])) == ("p-06", "2026-01-01 10:00:00.600000")


def test_detections(con):
    found = rows(con, "SELECT detector, trace_id, event_id, evidence FROM known_detections ORDER BY trace_id, detector")
    assert [(d["detector"], d["trace_id"], d["event_id"], d["evidence"]) for d in found] == [
        ("unrecovered_error", "fx-dag-fail", "g-09", "error: Task execution failed. | step before: Post to ledger"),
        ("retry", "fx-doc-retry", "d-06", f"{SHEET_RETRIED}: sheet is locked by another editor"),
        ("retry", "fx-unanswered", "u-02", "read_notes: failed, with no message"),
        ("retry", "fx-wire-retry", "w-06", f"{SHEET_RETRIED}: sheet is locked by another editor"),
    ]


def test_match_claims_stream_records_only():
    """Every stream record but the one without an event_type is claimed; no record of another format is."""
    match = next(a.match for a in load_adapters() if a.format == "stream")
    samples = SHARED / "samples"
    folders = sorted(p for p in samples.iterdir() if p.is_dir()) if samples.is_dir() else []
    con = connect_staging(Settings())
    read.read_files(con, discover([str(p) for p in [FIXTURES, *folders]]))
    found = rows(con, f"""SELECT fl.path, count(*) FILTER (WHERE {match}) AS matched, count(*) AS n
                          FROM records JOIN files fl USING (file_id) GROUP BY fl.path""")
    for f in found:
        if "/stream/" not in f["path"]:
            assert f["matched"] == 0, f["path"]
        else:
            assert f["n"] - f["matched"] == (1 if f["path"].endswith("bad_records.jsonl") else 0), f["path"]


# The real samples: six runs recorded by xagent's end-to-end tests, each in both shapes.
SAMPLE_TRACES = {
    "task_react_file_tools": 15,
    "task_sdk_two_runs_run1": 7,
    "task_sdk_two_runs_run2": 7,
    "task_websocket_stream": 7,
    "task_workforce_child_run1_tool_failed_then_more_tools": 18,
    "task_workforce_child_run2_waiting_for_user_then_resume": 12,
}
WORKFORCE = "task_workforce_child_run1_tool_failed_then_more_tools"

needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")


@pytest.fixture(scope="module")
def shapes():
    return {shape: stage(sorted(SAMPLES.glob(f"*.{shape}.jsonl"))) for shape in ("wire", "documented")}


@needs_samples
@pytest.mark.parametrize("shape", ["wire", "documented"])
def test_samples_load(shapes, shape):
    con = shapes[shape]
    assert rows(con, "SELECT * FROM rejects") == []
    assert {r["format"] for r in rows(con, "SELECT format FROM file_formats")} == {"stream"}
    found = rows(con, "SELECT trace_id, source, task, outcome FROM traces ORDER BY trace_id")
    assert [t["trace_id"] for t in found] == sorted(SAMPLE_TRACES)
    assert {(t["source"], t["outcome"]) for t in found} == {("stream/react", "success")}
    assert {t["trace_id"]: t["task"] for t in found if t["task"] != "shared first"} == {
        "task_react_file_tools": "e2e:files", WORKFORCE: "e2e:files"}
    counts = rows(con, "SELECT trace_id, count(*) AS n FROM events GROUP BY trace_id")
    assert {c["trace_id"]: c["n"] for c in counts} == SAMPLE_TRACES
    assert rows(con, "SELECT count(*) AS n FROM events WHERE type = 'unknown'")[0]["n"] == 0


@needs_samples
def test_sample_shapes_give_the_same_events(shapes):
    query = f"SELECT trace_id, seq, event_id, parent_id, {CANONICAL} FROM events ORDER BY trace_id, seq"
    wire, documented = (rows(shapes[s], query) for s in ("wire", "documented"))
    assert wire == documented
    workforce = [(e["type"], e["tool_name"]) for e in wire if e["trace_id"] == WORKFORCE]
    assert workforce == [
        ("user_message", None), ("workflow_step", None), ("model_call", None), ("model_call", None),
        ("tool_call", "read_file"), ("model_call", None), ("model_call", None),
        ("tool_call", "read_file"), ("tool_result", "read_file"), ("model_call", None), ("model_call", None),
        ("tool_call", "read_file"), ("tool_result", "write_file"), ("model_call", None), ("model_call", None),
        ("workflow_step", None), ("assistant_message", None), ("final_answer", None)]


@needs_samples
@pytest.mark.parametrize("shape", ["wire", "documented"])
def test_sample_tool_failure_is_a_retry(shapes, shape):
    # The failure event itself was not recorded: read_file starts (ev012), gets no result, and the model
    # calls read_file again (ev022). The unanswered start is marked failed, so the retry detector fires.
    # (It reads the same file a third time too, which the loop detector reports on its own.)
    found = rows(shapes[shape], "SELECT detector, trace_id, event_id, evidence FROM detections "
                                "WHERE detector = 'retry'")
    assert found == [{"detector": "retry", "trace_id": WORKFORCE, "event_id": f"{WORKFORCE[5:]}-ev012",
                      "evidence": "read_file: failed, with no message"}]


@needs_samples
def test_samples_both_shapes_in_one_batch():
    # The same runs delivered in both shapes: each event is kept once, the other shape's copy is linked.
    con = stage([SAMPLES])
    assert rows(con, "SELECT * FROM rejects") == []
    assert len(rows(con, "SELECT * FROM traces")) == len(SAMPLE_TRACES)
    assert rows(con, "SELECT count(*) AS n FROM events")[0]["n"] == sum(SAMPLE_TRACES.values())
    assert rows(con, "SELECT count(*) AS n FROM record_links")[0]["n"] == sum(SAMPLE_TRACES.values())
    unmapped = rows(con, "SELECT file_id, record FROM records ANTI JOIN record_traces USING (file_id, record)")
    assert unmapped == []
    found = rows(con, "SELECT detector FROM known_detections ORDER BY detector")
    # read_file fails, is called again and works, then reads once more: a retry, not a loop (the three
    # calls had three different answers)
    assert [d["detector"] for d in found] == ["retry"]




def test_a_run_split_across_two_files_is_one_trace(tmp_path):
    lines = read_jsonl(FIXTURES / "wire_tool_retry.jsonl")
    # alternate records in each file: only the timestamps give the run's order back
    write_jsonl(tmp_path / "a.jsonl", lines[0::2])
    write_jsonl(tmp_path / "b.jsonl", lines[1::2])
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    [trace] = rows(con, "SELECT trace_id, source, task, outcome, file, line FROM traces")
    assert trace["file"].endswith("a.jsonl") and trace["line"] == 1
    assert (trace["trace_id"], trace["source"], trace["task"], trace["outcome"]) == (
        "fx-wire-retry", "stream/react", "Summarise the regional sales sheet", "success")
    found = events_of(con, "fx-wire-retry")
    assert [(e["seq"], e["event_id"]) for e in found] == [(n, f"w-{n:02d}") for n in range(1, 14)]
    assert [(d["detector"], d["event_id"]) for d in rows(con, "SELECT * FROM known_detections")] == [("retry", "w-06")]


def test_the_same_file_twice_is_one_trace_and_every_record_loads(tmp_path):
    shutil.copy(FIXTURES / "documented_tool_retry.jsonl", tmp_path / "run.jsonl")
    shutil.copy(FIXTURES / "documented_tool_retry.jsonl", tmp_path / "run-copy.jsonl")
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    assert [t["trace_id"] for t in rows(con, "SELECT trace_id FROM traces")] == ["fx-doc-retry"]
    assert [e["event_id"] for e in events_of(con, "fx-doc-retry")] == [f"d-{n:02d}" for n in range(1, 14)]
    mapped = rows(con, "SELECT rt.trace_id FROM records r LEFT JOIN record_traces rt USING (file_id, record)")
    assert len(mapped) == 26 and {m["trace_id"] for m in mapped} == {"fx-doc-retry"}
    # the file read first gives the events; every record of the other is linked
    assert rows(con, """SELECT count(DISTINCT e.file_id) AS event_files, count(DISTINCT k.file_id) AS link_files,
                               count(DISTINCT k.record) AS links, bool_or(e.file_id = k.file_id) AS shared
                        FROM events e, record_links k""") == [
        {"event_files": 1, "link_files": 1, "links": 13, "shared": False}]


def documented(wire: dict, event_type: str, scope: str, action: str, category: str) -> dict:
    """A wire record in the documented shape: the same event under its documented name and envelope."""
    return {"id": wire["event_id"], "event_type": event_type, "scope": scope, "action": action, "category": category,
            "timestamp": wire["timestamp"], "task_id": wire["task_id"], "step_id": wire.get("step_id"),
            "data": wire["data"], "parent_id": wire.get("parent_id")}


def test_the_other_shape_repeats_an_event_or_conflicts_with_it(tmp_path):
    lines = read_jsonl(FIXTURES / "wire_tool_retry.jsonl")
    write_jsonl(tmp_path / "a.jsonl", lines)
    start = documented(lines[4], "action_start_tool", "action", "start", "tool")  # w-05, as sent
    failed = documented(lines[5], "action_error_tool", "action", "error", "tool")  # w-06, another error
    failed["data"] = dict(failed["data"], error_message="sheet not found")
    write_jsonl(tmp_path / "b.jsonl", [start, failed])
    con = stage([tmp_path])
    assert rows(con, "SELECT f.path, j.line, j.reason FROM rejects j JOIN files f USING (file_id)") == [
        {"path": str(tmp_path / "b.jsonl"), "line": 2,
         "reason": f"conflicting duplicate of event w-06 of trace fx-wire-retry (first at {tmp_path / 'a.jsonl'} line 6)"}]
    assert rows(con, "SELECT line FROM record_links JOIN records USING (file_id, record)") == [{"line": 1}]
    found = events_of(con, "fx-wire-retry")
    assert len(found) == 13  # the first delivery wins
    assert (found[5]["raw_type"], found[5]["content"]) == ("tool_execution_failed", "sheet is locked by another editor")


def test_each_thing_wrong_with_a_record_is_named_from_its_one_parse(tmp_path):
    """The adapter reads a record's envelope once (a typed parse: each field's own JSON text) and judges the
    fields from that text: a JSON null is as good as missing, a number is a usable task id, and a frame that
    names its task only in task.id is judged on that."""
    def event(**fields) -> dict:
        return {"type": "trace_event", "event_type": "task_start_general", "task_id": "t-ok", "timestamp": 1.0e9,
                "data": {"message": "hello"}, **fields}

    lines = [
        event(task_id=None), event(task_id={"id": "t"}), event(task_id="  "),
        event(event_type=None), event(event_type=5), event(event_type=""),
        event(data="hello"), event(timestamp="soon"), event(timestamp=-5), event(execution_sequence="first"),
        {"type": "task_completed", "task": {"id": ["t-frame"]}, "timestamp": 1.0e9},
        {"type": "task_completed", "task": {"id": " "}, "timestamp": 1.0e9},
        event(task_id=42, event_type="user_message", data=None),
        {"type": "task_completed", "task": {"id": "t-frame", "status": "completed"}, "output": "done",
         "timestamp": 1.0e9 + 1},
    ]
    path = tmp_path / "stream.jsonl"
    write_jsonl(path, lines)
    con = stage([path])
    assert rows(con, "SELECT line, reason FROM rejects ORDER BY line") == [
        {"line": 1, "reason": "missing required field 'task_id'"},
        {"line": 2, "reason": "field 'task_id' must be a string"},
        {"line": 3, "reason": "field 'task_id' is empty"},
        {"line": 4, "reason": "missing required field 'event_type'"},
        {"line": 5, "reason": "field 'event_type' must be a string"},
        {"line": 6, "reason": "field 'event_type' is empty"},
        {"line": 7, "reason": "field 'data' must be an object"},
        {"line": 8, "reason": "field 'timestamp' must be Unix seconds"},
        {"line": 9, "reason": "field 'timestamp' is out of range"},
        {"line": 10, "reason": "field 'execution_sequence' must be a whole number"},
        {"line": 11, "reason": "field 'task.id' must be a string"},
        {"line": 12, "reason": "field 'task.id' is empty"},
    ]
    assert rows(con, "SELECT trace_id, outcome, line FROM traces ORDER BY trace_id") == [
        {"trace_id": "42", "outcome": "incomplete", "line": 13},
        {"trace_id": "t-frame", "outcome": "success", "line": 14}]
    assert rows(con, "SELECT trace_id, type, content FROM events ORDER BY trace_id") == [
        {"trace_id": "42", "type": "user_message", "content": None},
        {"trace_id": "t-frame", "type": "final_answer", "content": "done"}]
