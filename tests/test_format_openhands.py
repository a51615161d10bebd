"""OpenHands, on files OpenHands' own code wrote (tests/fixtures/formats/openhands/, see its README): an
evaluation's output.jsonl (a run's event history a line), a session's event stream (one event a file) and
the LLM completion logs (read by the chat adapter: the calls of one run are one trace), for the current V0
engine (openhands-ai 1.6.0) and the 0.15 release of the shared benchmark; and the real benchmark logs in
../shared/benchmarks/openhands-swe-verified/ (skipped when absent)."""

import json

import pytest

from conftest import REPO, SHARED, events_of, rows, stage

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "openhands"
V0_EVAL = next((FIXTURES / "v0" / "evaluation_outputs").glob("*/*/*"))


@pytest.fixture(scope="module")
def v0():
    return stage([FIXTURES / "v0"])


@pytest.fixture(scope="module")
def v015():
    return stage([FIXTURES / "v015"])


def test_every_record_is_loaded_or_linked(v0, v015):
    for con in (v0, v015):
        assert rows(con, "SELECT * FROM rejects") == []
        [total] = rows(con, "SELECT sum(records) AS records, sum(loaded) AS loaded, sum(unaccounted) AS lost FROM file_accounts")
        assert total["records"] == total["loaded"] and total["lost"] == 0


def test_a_run_of_output_jsonl_is_a_trace_with_the_error_it_stopped_with(v0, v015):
    outcomes = {r["trace_id"]: r["outcome"] for r in rows(v0, "SELECT trace_id, outcome FROM traces WHERE file LIKE '%output.jsonl'")}
    assert outcomes == {
        "shopfront__inventory-101": "finished",
        "shopfront__inventory-102": "RuntimeError: Agent reached maximum iteration. Current iteration: 8, max iteration: 8",
        "shopfront__inventory-103": "AgentStuckInLoopError: Agent got stuck in a loop"}
    [legacy] = rows(v015, "SELECT outcome, source FROM traces WHERE trace_id = 'billing__tax-8'")
    assert legacy["outcome"].startswith("Agent reached maximum iteration in headless mode")
    assert legacy["source"] == "openhands/CodeActAgent"


def test_actions_and_observations(v015):
    shape = [(e["type"], e["tool_name"], e["status"], e["parent_id"]) for e in events_of(v015, "billing__tax-7")]
    assert shape == [
        ("workflow_step", None, None, None),  # the task statement the evaluation harness sent as the user's
        ("tool_call", "execute_bash", None, None), ("tool_result", "execute_bash", "error", "2"),  # exit code 1
        ("tool_call", "str_replace_editor", None, None), ("tool_result", "str_replace_editor", "error", "4"),  # ERROR:
        ("tool_call", "str_replace_editor", None, None), ("tool_result", "str_replace_editor", "ok", "6"),
        ("assistant_message", None, None, None),
        ("workflow_step", None, None, None),  # the evaluation harness's "Please continue..." in the user's place
        ("tool_call", "execute_bash", None, None), ("tool_result", "execute_bash", "ok", "12"),
        ("final_answer", None, None, None)]
    steps = [e for e in events_of(v015, "billing__tax-7") if e["type"] == "workflow_step"]
    assert [s["actor"] for s in steps] == ["harness", "harness"]
    # an evaluation run has no person in it: the task is its harness's statement
    assert rows(v015, "SELECT count(*) AS n FROM events e JOIN traces t USING (trace_id) "
                      "WHERE t.file LIKE '%output.jsonl' AND e.type IN ('user_message', 'human_correction')") == [{"n": 0}]
    assert rows(v015, "SELECT task FROM traces WHERE trace_id = 'billing__tax-7'") == [
        {"task": "add_tax() in billing/tax.py returns only the tax. Make it return net plus tax."}]


def test_the_session_event_stream_is_the_same_run(v0):
    streams = rows(v0, "SELECT trace_id, outcome FROM traces WHERE file LIKE '%/events/%' ORDER BY trace_id")
    assert len(streams) == 3 and {s["outcome"] for s in streams} == {"finished", "error"}
    # the system prompt is context, not an event
    assert all("coding agent" in (t["extra"] or "") for t in rows(v0, "SELECT extra FROM traces WHERE format = 'openhands'"))
    assert not rows(v0, "SELECT * FROM events WHERE raw_type IN ('system', 'recall', 'agent_state_changed')")


def test_in_a_session_the_user_is_the_person_but_the_fake_user(v0):
    """A session's event stream does not say whether a person or an evaluation sat at it: its user's messages
    are the person's, except the evaluation harness's fixed fake-user reply."""
    said = rows(v0, """SELECT e.type, e.actor, left(e.content, 24) AS words FROM events e JOIN traces t USING (trace_id)
                       WHERE t.file LIKE '%/events/%' AND e.raw_type = 'message' AND e.type <> 'assistant_message'
                       ORDER BY t.trace_id, e.seq""")
    assert {(r["type"], r["actor"]) for r in said} == {("user_message", "human"), ("workflow_step", "harness")}
    assert [r["words"] for r in said if r["actor"] == "harness"] == ["Please continue working "]


def test_an_action_the_person_rejected_is_a_rejected_result_and_a_correction(tmp_path):
    """In confirmation mode the person can refuse an action: OpenHands answers it with a user_rejected
    observation (openhands/events/observation/reject.py). The action did not run, and the person objected."""
    events = tmp_path / "sessions" / "confirm-1" / "events"
    events.mkdir(parents=True)
    stream = [
        {"id": 0, "timestamp": "2026-03-02T10:00:00", "source": "user", "message": "Clean up the build output.",
         "action": "message", "args": {"content": "Clean up the build output.", "image_urls": None, "wait_for_response": False}},
        {"id": 1, "timestamp": "2026-03-02T10:00:05", "source": "agent", "message": "Running command: rm -rf build dist",
         "action": "run", "tool_call_metadata": {"function_name": "execute_bash", "tool_call_id": "toolu_1"},
         "args": {"command": "rm -rf build dist", "is_input": False, "thought": "", "blocking": False,
                  "confirmation_state": "rejected", "security_risk": 1}},
        {"id": 2, "timestamp": "2026-03-02T10:00:09", "source": "environment", "cause": 1, "observation": "user_rejected",
         "message": "Action has been rejected by the user! Waiting for further user input.",
         "content": "Action has been rejected by the user! Waiting for further user input.", "extras": {}},
        {"id": 3, "timestamp": "2026-03-02T10:00:20", "source": "user", "message": "Only remove dist; build holds the cache.",
         "action": "message", "args": {"content": "Only remove dist; build holds the cache.", "image_urls": None,
                                       "wait_for_response": False}}]
    for e in stream:
        (events / f"{e['id']}.json").write_text(json.dumps(e))
    con = stage([tmp_path])
    got = [(e["type"], e["status"], e["tool_name"], e["actor"], e["content"]) for e in events_of(con, "confirm-1")]
    assert got == [
        ("user_message", None, None, "human", "Clean up the build output."),
        ("tool_call", None, "execute_bash", None, "rm -rf build dist"),
        ("tool_result", "rejected", "execute_bash", None, "Action has been rejected by the user! Waiting for further user input."),
        ("human_correction", None, "execute_bash", "human", ""),  # OpenHands records no words with it
        ("user_message", None, None, "human", "Only remove dist; build holds the cache.")]


def test_the_calls_of_one_run_logged_one_by_one_are_one_trace(v0):
    logs = rows(v0, "SELECT trace_id, file FROM traces WHERE format = 'chat'")
    assert len(logs) == 3  # 20 call logs of 3 runs: the last of each stands for its run
    linked = rows(v0, "SELECT count(*) AS n FROM record_links l JOIN files f USING (file_id) WHERE f.path LIKE '%llm_completions%'")
    assert linked == [{"n": 17}]


def test_what_stopped_a_run_is_found_in_every_shape(v0):
    found = {(r["trace_id"], r["detector"]) for r in rows(v0, "SELECT trace_id, detector FROM detections "
                                                              "WHERE detector IN ('unfinished_run', 'unchecked_edit')")}
    assert {("shopfront__inventory-102", "unfinished_run"), ("shopfront__inventory-103", "unfinished_run"),
            ("shopfront__inventory-102", "unchecked_edit")} <= found
    [budget_log] = rows(v0, "SELECT trace_id FROM traces WHERE format = 'chat' AND file LIKE '%inventory-102%'")
    assert (budget_log["trace_id"], "unfinished_run") in found  # the completion log: cut off mid-action
    assert not [t for t, d in found if t == "shopfront__inventory-101"]


@pytest.mark.skipif(not (SHARED / "benchmarks" / "openhands-swe-verified").is_dir(), reason="needs ../shared")
def test_the_real_benchmark_logs():
    real = stage([SHARED / "benchmarks" / "openhands-swe-verified" / "completions"])
    assert rows(real, "SELECT * FROM rejects") == []
    assert rows(real, "SELECT count(*) AS n FROM traces") == [{"n": 50}]
    ends = rows(real, """SELECT count(*) FILTER (WHERE tool_name = 'finish') AS finished FROM events e
                         WHERE seq = (SELECT max(seq) FROM events x WHERE x.trace_id = e.trace_id)""")
    assert ends == [{"finished": 45}]  # 5 runs were cut off by the 50-iteration budget


def test_what_worked_after_an_edit_names_the_editor_command_and_file(v0):
    """An editor's call is its sub-command and file (`str_replace_editor str_replace <path>`), not its JSON:
    the rule says what was sent again, in a person's words."""
    [worked] = rows(v0, "SELECT recovery FROM detections WHERE trace_id = 'shopfront__inventory-101' "
                        "AND detector = 'retry' AND recovery_kind = 'changed'")
    assert worked["recovery"] == ("`str_replace_editor str_replace /tmp/oh-fixture-work/workspace/shopfront__inventory-101/"
                                  "inventory/stock.py` again with other input")
