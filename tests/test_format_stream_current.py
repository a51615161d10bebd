"""The stream adapter on the names the producer's current source sends (xagent: trace events, the v2 display
envelope, frames with a top-level type, v2 execution facts), on our own fixtures in
tests/fixtures/formats/stream/current/:

- wire_pause_wait_resume.jsonl: a ReAct run paused and resumed, that asks the user a question, waits and
  resumes with the answer (integer task_id, a frame with neither id nor timestamp);
- wire_failed_settled.jsonl: a DAG run whose tool and step fail, then trace_error, a failed DAG end, the
  settlement broadcast with success false and execution_settled failed;
- v2_final_answer_stream.jsonl: a v2 run (execution_sequence, parent_event_id) with a streamed final answer
  (final_answer_start, deltas, end) and every copy of the answer the producer sends;
- v2_question_recovery.jsonl: v2 execution facts: input_accepted, a checkpoint (recovery_state), a question
  (agent_message with expect_response) and its chat copy, a waiting settlement, the user's answer,
  input_applied and the completed settlement;
- every_name.jsonl: every name the adapter reads by itself, one record per trace (nm-<name>).
"""

import json
import re

import pytest

from conftest import REPO, SHARED, events_of, query_db, read_jsonl, rows, stage, write_jsonl
from lessonweaver import read
from lessonweaver.adapters import load_adapters
from lessonweaver.batch import connect_staging
from lessonweaver.config import Settings
from lessonweaver.discover import discover

CURRENT = REPO / "tests" / "fixtures" / "formats" / "stream" / "current"
SAMPLES = SHARED / "samples" / "stream"
ADAPTER = REPO / "sql" / "adapters" / "stream.sql"


@pytest.fixture(scope="module")
def con():
    return stage([CURRENT])


def linked_types(con, trace_id: str) -> list[str]:
    """The names of a trace's records that were linked to it rather than loaded as events, in file order."""
    found = rows(con, """SELECT coalesce(r.doc->>'event_type', r.doc->>'type') AS name FROM record_links k
                         JOIN records r USING (file_id, record) WHERE k.trace_id = ? ORDER BY r.file_id, r.record""",
                 [trace_id])
    return [f["name"] for f in found]


def test_every_record_is_an_event_a_link_or_a_reject(con):
    assert rows(con, "SELECT * FROM rejects") == []
    counts = rows(con, """SELECT (SELECT count(*) FROM records) AS records, (SELECT count(*) FROM events) AS events,
                                 (SELECT count(*) FROM record_links) AS links""")[0]
    assert counts["records"] == counts["events"] + counts["links"]
    # no record is both, and every record has its trace
    assert rows(con, "SELECT count(*) AS n FROM events JOIN record_links USING (file_id, record)") == [{"n": 0}]
    assert rows(con, "SELECT count(*) AS n FROM records ANTI JOIN record_traces USING (file_id, record)") == [{"n": 0}]
    assert rows(con, "SELECT count(*) AS n FROM record_links ANTI JOIN traces USING (trace_id)") == [{"n": 0}]


# name: (type, or None when linked as bookkeeping; status; success; the one-record trace's outcome)
EVERY_NAME = {
    # the final-answer stream: a stream end without a task_completion is the answer
    "final_answer_start": (None, None, None, "incomplete"),
    "final_answer_delta": (None, None, None, "incomplete"),
    "final_answer_end": ("final_answer", None, None, "incomplete"),
    "final_answer_error": ("error", "failed", False, "failed"),
    # task lifecycle: the settlement broadcast is the answer only when nothing else carries it
    "task_completed": ("final_answer", "completed", True, "success"),
    "task_continuation_completed": ("final_answer", None, True, "success"),
    "task_error": ("error", "failed", False, "failed"),
    "agent_error": ("error", "failed", False, "failed"),
    "error": ("error", "failed", False, "failed"),
    "task_started": (None, None, None, "incomplete"),
    "task_resumed": ("workflow_step", None, None, "incomplete"),
    "task_paused": ("workflow_step", "paused", None, "incomplete"),
    "task_pause_requested": (None, None, None, "incomplete"),
    "task_waiting_for_user": ("workflow_step", "waiting_for_user", None, "incomplete"),
    "task_info": (None, None, None, "incomplete"),
    "task-info": (None, None, None, "incomplete"),
    "historical_data_complete": (None, None, None, "incomplete"),
    "execution_log": (None, None, None, "incomplete"),
    "message_received": (None, None, None, "incomplete"),
    "chat": ("user_message", None, None, "incomplete"),
    "chat_message": ("assistant_message", None, None, "incomplete"),
    # the agent's outbound messages
    "agent_message": ("assistant_message", None, None, "incomplete"),
    "agent_progress": ("assistant_message", None, None, "incomplete"),
    # v2 execution facts
    "input_accepted": ("user_message", None, None, "incomplete"),
    "assistant_message": ("assistant_message", None, None, "incomplete"),
    "recovery_state": (None, None, None, "incomplete"),
    "input_applied": (None, None, None, "incomplete"),
    "input_delivery_changed": (None, None, None, "incomplete"),
    "command_accepted": (None, None, None, "incomplete"),
    "control_state_changed": (None, None, None, "incomplete"),
    "interaction_requested": (None, None, None, "incomplete"),
    "execution_settled": (None, None, None, "failed"),
    # documented categories read now: skill, memory, compaction are steps; visualization, checkpoints
    # (task_update_general, system_update_general) and system notes are bookkeeping
    "task_start_skill": ("workflow_step", None, None, "incomplete"),
    "task_end_skill": ("workflow_step", None, None, "incomplete"),
    "task_start_memory_retrieve": ("workflow_step", None, None, "incomplete"),
    "task_end_memory_retrieve": ("workflow_step", None, None, "incomplete"),
    "task_start_memory_generate": ("workflow_step", None, None, "incomplete"),
    "task_end_memory_generate": ("workflow_step", None, None, "incomplete"),
    "task_start_memory_store": ("workflow_step", None, None, "incomplete"),
    "task_end_memory_store": ("workflow_step", None, None, "incomplete"),
    "action_start_compact": ("workflow_step", None, None, "incomplete"),
    "action_end_compact": ("workflow_step", None, True, "incomplete"),
    "system_update_visualization": (None, None, None, "incomplete"),
    "task_update_general": (None, None, None, "incomplete"),
    "task_update_general-2": ("tool_result", "completed", None, "incomplete"),  # a delegation summary
    "system_update_general": (None, None, None, "incomplete"),
    "system_info_general": (None, None, None, "incomplete"),
    # a task-level model call; the DAG's goal check is an evaluation
    "task_start_llm": ("model_call", None, None, "incomplete"),
    "task_end_llm": ("evaluation_result", "failed", False, "incomplete"),
    "task_end_llm-2": ("model_call", None, None, "incomplete"),
    "step_error_general": ("error", "failed", False, "failed"),
    "task_error_general": ("error", "failed", False, "failed"),
    # a failed model call and a failed DAG step are errors; a run end waiting for the user is not over, one
    # out of quota failed
    "llm_call_failed": ("error", "failed", False, "failed"),
    "dag_step_end": ("error", "failed", False, "failed"),
    "react_task_end": ("workflow_step", "waiting_for_user", None, "incomplete"),
    "dag_execute_end": ("workflow_step", "quota_exceeded", False, "failed"),
    # names only the web client still reads
    "dag_step_info": ("workflow_step", None, None, "incomplete"),
    "dag_step_failed": ("error", "failed", False, "failed"),
    "dag_step_skipped": ("workflow_step", "skipped", None, "incomplete"),
    "react_task_failed": ("error", "failed", False, "failed"),
    "task_failed_react": ("error", "failed", False, "failed"),
    "tool_using": ("tool_call", None, None, "incomplete"),
    "llm_call_info": ("model_call", None, None, "incomplete"),
    "llm_call_result": ("model_call", None, True, "incomplete"),
    # names the producer does not document stay unknown, with their raw type
    "telemetry_ping": ("unknown", None, None, "incomplete"),
    "task_update_widget": ("unknown", None, None, "incomplete"),
}


def test_every_name_maps(con):
    found = rows(con, """SELECT t.trace_id, t.outcome, e.type, e.raw_type, e.status, e.success,
                                (SELECT count(*) FROM record_links k WHERE k.trace_id = t.trace_id) AS links
                         FROM traces t LEFT JOIN events e USING (trace_id) WHERE t.trace_id LIKE 'nm-%'""")
    got = {f["trace_id"][3:]: (f["type"], f["status"], f["success"], f["outcome"]) for f in found}
    assert got == EVERY_NAME
    for f in found:
        # one record each: an event, else linked to its trace
        assert f["links"] == (0 if f["type"] else 1), f["trace_id"]
        assert f["type"] is None or f["raw_type"] == f["trace_id"][3:].removesuffix("-2")
    delegation = events_of(con, "nm-task_update_general-2")[0]
    assert (delegation["tool_name"], delegation["content"]) == ("research_worker", "Found 3 sources on the 2026 travel policy")


def test_every_name_the_adapter_reads_is_matched_and_in_the_fixture():
    """The names of stream_kinds are the frame names of the match, and each is in every_name.jsonl."""
    sql = ADAPTER.read_text()
    kinds_block = sql.split("INSERT INTO stream_kinds VALUES", 1)[1].split(");\n", 1)[0]
    kinds = set(re.findall(r"\('([a-z_-]+)', ", kinds_block))
    match = next(a.match for a in load_adapters() if a.format == "stream")
    frames = set(re.findall(r"'([a-z_-]+)'", match.split(") IN (", 1)[1]))
    assert kinds == frames
    fixture = {r.get("event_type") or r["type"] for r in read_jsonl(CURRENT / "every_name.jsonl")}
    assert kinds <= fixture


def test_a_run_paused_waiting_for_the_user_and_resumed(con):
    [trace] = rows(con, "SELECT source, task, outcome, file, line FROM traces WHERE trace_id = '4101'")
    assert (trace["source"], trace["task"], trace["outcome"]) == (
        "stream/react", "Book a meeting room for Thursday's design review", "success")
    # the trace starts at its first record, a bookkeeping frame
    assert trace["file"].endswith("wire_pause_wait_resume.jsonl") and trace["line"] == 1
    found = events_of(con, "4101")
    assert [(e["type"], e["raw_type"]) for e in found if e["type"] not in ("model_call", "tool_call", "tool_result")] == [
        ("user_message", "user_message"),
        ("workflow_step", "react_task_start"),
        ("workflow_step", "task_paused"),
        ("workflow_step", "task_resumed"),
        ("assistant_message", "agent_message"),          # the question
        ("workflow_step", "react_task_end"),              # waiting for the user
        ("workflow_step", "task_waiting_for_user"),
        ("user_message", "user_message"),                 # the answer: a user message, not a correction
        ("workflow_step", "task_resumed"),
        ("workflow_step", "react_task_start"),
        ("workflow_step", "react_task_end"),              # completed; the answer is the task_completion's
        ("assistant_message", "ai_message"),
        ("final_answer", "task_completion"),
    ]
    assert linked_types(con, "4101") == ["task_started", "task_pause_requested", "task_info", "task_completed"]
    # the resume frame has neither id nor timestamp: it keeps its place after the pause
    paused = next(i for i, e in enumerate(found) if e["raw_type"] == "task_paused")
    resumed = found[paused + 1]
    assert (resumed["raw_type"], resumed["event_id"], resumed["ts"], resumed["content"]) == (
        "task_resumed", "record-10", None, "Task resumed")
    waiting = next(e for e in found if e["raw_type"] == "react_task_end")
    assert (waiting["status"], waiting["success"], waiting["content"]) == (
        "waiting_for_user", False, "react task end: waiting_for_user")
    question = next(e for e in found if e["raw_type"] == "agent_message")
    assert question["content"].endswith("Which floor do you prefer?")
    assert '"expect_response":true' in question["extra"]
    answer = found[-1]
    assert answer["content"] == "Room 5B is booked for Thursday 14:00-16:00 (confirmation RB-5521)."
    assert '"type":"task_paused"' in found[paused]["metadata"]
    assert rows(con, "SELECT count(*) AS n FROM events WHERE type IN ('human_correction', 'retry')") == [{"n": 0}]
    # Nothing went wrong in the run. The agent booked after the user chose a floor without reading the
    # booking back, but no policy in the trace asks for a yes and the user did not object: no finding.
    assert rows(con, "SELECT detector FROM known_detections WHERE trace_id = '4101'") == []


def test_a_failed_run_reads_as_failed(con):
    [trace] = rows(con, "SELECT source, task, outcome FROM traces WHERE trace_id = '4102'")
    assert trace == {"source": "stream/dag", "task": "Export last quarter's invoices to the accounting share",
                     "outcome": "failed"}
    found = events_of(con, "4102")
    assert [(e["type"], e["raw_type"], e["status"], e["success"], e["content"]) for e in found[5:]] == [
        ("tool_call", "tool_execution_start", None, None, "invoice_export"),
        ("tool_result", "tool_execution_failed", "failed", False, "accounting share is not mounted"),
        ("error", "dag_step_end", "failed", False, "accounting share is not mounted"),
        ("error", "trace_error", "failed", False, "Task execution failed."),
        ("workflow_step", "dag_execute_end", "failed", False, "dag task end: failed"),
    ]
    assert not any(e["type"] == "final_answer" for e in found)
    # the broadcast (success false) and the settlement are the outcome's evidence, not events
    assert linked_types(con, "4102") == ["task_completed", "execution_settled"]
    found = rows(con, "SELECT detector, event_id, evidence FROM known_detections WHERE trace_id = '4102' ORDER BY event_id")
    assert found == [
        {"detector": "unrecovered_error", "event_id": "f-08",
         "evidence": "error: accounting share is not mounted | step before: Collect invoices"},
        {"detector": "unrecovered_error", "event_id": "f-09",
         "evidence": "error: Task execution failed. | step before: Collect invoices"},
    ]


def test_a_streamed_final_answer_is_one_final_answer(con):
    [trace] = rows(con, "SELECT task, outcome FROM traces WHERE trace_id = '4103'")
    assert trace == {"task": "What changed in the travel policy this year?", "outcome": "success"}
    found = events_of(con, "4103")
    assert [(e["type"], e["raw_type"]) for e in found] == [
        ("user_message", "user_message"),
        ("workflow_step", "react_task_start"),
        ("model_call", "llm_call_start"),
        ("model_call", "llm_call_end"),
        ("tool_call", "tool_execution_start"),
        ("tool_result", "tool_execution_end"),
        ("workflow_step", "action_start_compact"),
        ("workflow_step", "action_end_compact"),
        ("model_call", "llm_call_start"),
        ("model_call", "llm_call_end"),
        ("workflow_step", "react_task_end"),
        ("assistant_message", "ai_message"),
        ("final_answer", "task_completion"),
    ]
    answer = "Two changes: flights under 6 h are economy class (4.2), and the per-diem is now 60 EUR (7)."
    assert [e["content"] for e in found if e["type"] == "final_answer"] == [answer]
    # the stream frames, the end the completion repeats (same message id), the chat copy of the answer and
    # the broadcast are linked
    assert linked_types(con, "4103") == ["final_answer_start", "final_answer_delta", "final_answer_delta",
                                         "final_answer_delta", "final_answer_end", "agent_message",
                                         "task_completed"]
    # the sequence orders s-04 after s-03 although its clock ran behind; parent_event_id is the parent
    assert [e["event_id"] for e in found[2:4]] == ["s-03", "s-04"]
    assert found[3]["ts"] < found[2]["ts"]
    assert [(e["event_id"], e["parent_id"]) for e in found[3:6]] == [("s-04", "s-03"), ("s-05", "s-04"),
                                                                   ("s-06", "s-05")]
    assert '"execution_sequence":4' in found[3]["metadata"] and "parent_event_id" not in found[3]["metadata"]
    assert found[0]["event_id"] == "execution_message_0c1f7a52"


def test_v2_facts_a_question_a_checkpoint_and_the_answer(con):
    [trace] = rows(con, "SELECT outcome FROM traces WHERE trace_id = '4104'")
    assert trace["outcome"] == "success"
    found = events_of(con, "4104")
    assert [(e["type"], e["raw_type"]) for e in found] == [
        ("user_message", "input_accepted"),
        ("workflow_step", "react_task_start"),
        ("model_call", "llm_call_start"),
        ("model_call", "llm_call_end"),
        ("assistant_message", "agent_message"),   # the question, expect_response true
        ("workflow_step", "react_task_end"),      # waiting_for_user
        ("user_message", "input_accepted"),       # the answer: a user message, not a correction
        ("workflow_step", "react_task_start"),
        ("model_call", "llm_call_start"),
        ("model_call", "llm_call_end"),
        ("workflow_step", "react_task_end"),
        ("final_answer", "task_completion"),
        ("assistant_message", "assistant_message"),
    ]
    assert found[6]["content"] == "Ask for free shipping on the next order; no discount."
    # the runtime user_message repeats input_accepted's turn, the assistant_message fact repeats the
    # question; checkpoints, delivery, commands, control state and settlements are bookkeeping
    assert linked_types(con, "4104") == [
        "user_message", "input_delivery_changed", "recovery_state", "assistant_message", "interaction_requested",
        "execution_settled", "command_accepted", "control_state_changed", "input_applied", "execution_settled"]
    # nothing in the format says the resume from the checkpoint retried anything
    assert rows(con, "SELECT count(*) AS n FROM events WHERE trace_id = '4104' AND type IN ('retry', 'human_correction')"
                ) == [{"n": 0}]
    assert rows(con, "SELECT detector FROM known_detections WHERE trace_id = '4104'") == []


def test_the_last_settlement_decides_the_outcome(tmp_path):
    # cut where the run waits for the user: not over, whatever the pattern end's success says
    waiting = read_jsonl(CURRENT / "v2_question_recovery.jsonl")[:12]
    write_jsonl(tmp_path / "waiting.jsonl", waiting)
    # the same run settled failed after all (an unconfirmed tool effect), then a later run completes
    failed = [r | {"task_id": 4105} for r in waiting[:11]] + [
        {"type": "execution_settled", "event_id": "x-12", "task_id": 4105, "execution_sequence": 12,
         "timestamp": 1767276000.7, "status": "failed", "result": {"success": False, "error": "tool effect unknown"}}]
    write_jsonl(tmp_path / "failed.jsonl", failed)
    rerun = failed + read_jsonl(CURRENT / "v2_question_recovery.jsonl")[12:]
    write_jsonl(tmp_path / "rerun.jsonl", [r | {"task_id": 4106} for r in rerun])
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    assert {t["trace_id"]: t["outcome"] for t in rows(con, "SELECT trace_id, outcome FROM traces")} == {
        "4104": "incomplete", "4105": "failed", "4106": "success"}


def test_v2_replays_repeat_their_events(tmp_path):
    """A v2 replay sends a question with expect_response false and an unfinished answer stream as interrupted:
    still the same events. A different text under the same id conflicts."""
    lines = read_jsonl(CURRENT / "v2_question_recovery.jsonl")
    write_jsonl(tmp_path / "live.jsonl", lines)
    question = next(r for r in lines if r.get("event_type") == "agent_message")
    replayed = question | {"data": question["data"] | {"expect_response": False}}
    start = {"type": "final_answer_start", "event_id": "q-30", "task_id": 4104, "execution_sequence": 30,
             "timestamp": 1767276100.0, "message_id": "final_answer_q30"}
    changed = lines[0] | {"content": "Draft a reply to the carrier instead"}
    write_jsonl(tmp_path / "live2.jsonl", [start])
    write_jsonl(tmp_path / "replay.jsonl", [replayed, start | {"status": "interrupted"}, changed])
    con = stage([tmp_path])
    assert [r["reason"] for r in rows(con, "SELECT reason FROM rejects")] == [
        f"conflicting duplicate of event q-01 of trace 4104 (first at {tmp_path / 'live.jsonl'} line 1)"]
    linked = rows(con, """SELECT f.path, r.line FROM record_links k JOIN records r USING (file_id, record)
                          JOIN files f USING (file_id) WHERE f.path LIKE '%replay.jsonl' ORDER BY r.line""")
    assert [k["line"] for k in linked] == [1, 2]
    assert len(events_of(con, "4104")) == 13


def test_a_run_split_over_batches_loads_whole(prefect_server, tmp_path):
    """Every third record in each of three files, one batch per file: the trace is gathered again, bookkeeping
    included, and equals the run loaded in one batch."""
    from flows.nightly import nightly

    lines = read_jsonl(CURRENT / "v2_question_recovery.jsonl")
    (tmp_path / "in").mkdir()
    for i in range(3):
        write_jsonl(tmp_path / "in" / f"part-{i}.jsonl", lines[i::3])
    runs = {name: nightly(paths=[str(tmp_path / "in")], db=str(tmp_path / f"{name}.duckdb"),
                          out=str(tmp_path / f"out-{name}"), **options)
            for name, options in (("whole", {}), ("parted", {"batch_mb": 0.0001}))}
    assert "merge" in runs["parted"].timings
    for run in runs.values():
        assert (run.records, run.records_loaded, run.records_rejected) == (23, 23, 0)
    events, traces = "SELECT * FROM events ORDER BY seq", "SELECT trace_id, outcome, task FROM traces"
    assert query_db(tmp_path / "parted.duckdb", events) == query_db(tmp_path / "whole.duckdb", events)
    assert query_db(tmp_path / "parted.duckdb", traces) == query_db(tmp_path / "whole.duckdb", traces) == [
        ("4104", "success", "Draft a reply to the supplier about the late delivery of order 7731")]
    assert len(query_db(tmp_path / "whole.duckdb", events)) == 13


def test_match_claims_the_frames_and_nothing_like_them():
    match = next(a.match for a in load_adapters() if a.format == "stream")
    records = {
        "task_paused frame": {"type": "task_paused", "task_id": 7, "status": "paused"},
        "agent_error frame naming its task in task.id": {"type": "agent_error", "message": "busy", "task": {"id": 7}},
        "v2 display event": {"type": "trace_event", "event_id": "a", "event_type": "agent_message", "task_id": 7,
                             "execution_sequence": 3, "parent_event_id": None, "data": {}},
        # another tool's frames: no task_id, a payload, a name this producer does not send
        "camelCase frame": {"type": "task_resumed", "taskId": "t1"},
        "frame with a payload": {"type": "task_completed", "task_id": "t1", "payload": {"status": "done"}},
        "unknown frame": {"type": "task_done", "task_id": "t1"},
        "event_msg line": {"type": "event_msg", "payload": {"type": "agent_message", "message": "hi"}},
    }
    con = connect_staging(Settings())
    found = {}
    for name, record in records.items():
        found[name] = con.execute(f"SELECT {match} FROM (SELECT ?::JSON AS doc)", [json.dumps(record)]).fetchone()[0]
    assert found == {"task_paused frame": True, "agent_error frame naming its task in task.id": True,
                     "v2 display event": True, "camelCase frame": False, "frame with a payload": False,
                     "unknown frame": False, "event_msg line": False}


def test_the_stream_priority_is_its_own():
    priorities = [a.priority for a in load_adapters()]
    stream = next(a.priority for a in load_adapters() if a.format == "stream")
    assert priorities.count(stream) == 1


needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")


@needs_samples
def test_the_real_samples_still_load_whole():
    """Both shapes of xagent's recorded runs in one batch: nothing rejected, nothing unknown, every record
    loaded, and one final answer per answered turn."""
    con = stage([SAMPLES])
    assert rows(con, "SELECT * FROM rejects") == []
    assert rows(con, "SELECT DISTINCT raw_type FROM events WHERE type = 'unknown'") == []
    assert rows(con, "SELECT count(*) AS n FROM records ANTI JOIN record_traces USING (file_id, record)") == [{"n": 0}]
    answers = rows(con, "SELECT trace_id, count(*) AS n FROM events WHERE type = 'final_answer' GROUP BY 1")
    # the second workforce run answers twice: the first turn (no task_completion) and the resumed one
    assert {a["trace_id"]: a["n"] for a in answers} == {
        "task_react_file_tools": 1, "task_sdk_two_runs_run1": 1, "task_sdk_two_runs_run2": 1,
        "task_websocket_stream": 1, "task_workforce_child_run1_tool_failed_then_more_tools": 1,
        "task_workforce_child_run2_waiting_for_user_then_resume": 2}
    assert {t["outcome"] for t in rows(con, "SELECT outcome FROM traces")} == {"success"}


@needs_samples
def test_the_samples_and_our_fixtures_are_all_claimed():
    match = next(a.match for a in load_adapters() if a.format == "stream")
    con = connect_staging(Settings())
    read.read_files(con, discover([str(SAMPLES), str(CURRENT)]))
    assert rows(con, f"SELECT count(*) FILTER (WHERE NOT ({match})) AS n FROM records") == [{"n": 0}]
