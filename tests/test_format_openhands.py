"""OpenHands, on files OpenHands' own code wrote (tests/fixtures/formats/openhands/, see its README): an
evaluation's output.jsonl (a run's event history a line), a session's event stream (one event a file) and
the LLM completion logs (read by the chat adapter: the calls of one run are one trace), for the current V0
engine (openhands-ai 1.6.0) and the 0.15 release of the shared benchmark; and the real benchmark logs in
../shared/benchmarks/openhands-swe-verified/ (skipped when absent)."""

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
        ("user_message", None, None, None),
        ("tool_call", "execute_bash", None, None), ("tool_result", "execute_bash", "error", "2"),  # exit code 1
        ("tool_call", "str_replace_editor", None, None), ("tool_result", "str_replace_editor", "error", "4"),  # ERROR:
        ("tool_call", "str_replace_editor", None, None), ("tool_result", "str_replace_editor", "ok", "6"),
        ("assistant_message", None, None, None),
        ("workflow_step", None, None, None),  # the evaluation harness's "Please continue..." in the user's place
        ("tool_call", "execute_bash", None, None), ("tool_result", "execute_bash", "ok", "12"),
        ("final_answer", None, None, None)]
    [step] = [e for e in events_of(v015, "billing__tax-7") if e["type"] == "workflow_step"]
    assert step["actor"] == "harness"


def test_the_session_event_stream_is_the_same_run(v0):
    streams = rows(v0, "SELECT trace_id, outcome FROM traces WHERE file LIKE '%/events/%' ORDER BY trace_id")
    assert len(streams) == 3 and {s["outcome"] for s in streams} == {"finished", "error"}
    # the system prompt is context, not an event
    assert all("coding agent" in (t["extra"] or "") for t in rows(v0, "SELECT extra FROM traces WHERE format = 'openhands'"))
    assert not rows(v0, "SELECT * FROM events WHERE raw_type IN ('system', 'recall', 'agent_state_changed')")


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
