"""SWE-agent `.traj` and mini-swe-agent `.traj.json` trajectories, read by the chat adapter, on files the
producers' own run loops wrote (tests/fixtures/formats/swe_agent/, see its README) and on the real
mini-swe-agent runs in ../shared/samples/swe-agent/ (skipped when absent).

What matters: the action an agent writes in its text (one fenced shell block, or SWE-agent's `action`) is a
bash tool call, the harness's observation after it is its result (failed at a non-zero return code or a
time-out), the harness's templates (format errors) are no person, and `info.exit_status` is the outcome."""

import json

import pytest

from conftest import REPO, SHARED, events_of, rows, stage

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "swe_agent"


@pytest.fixture(scope="module")
def con():
    return stage([FIXTURES])


def trace_of(con, name: str) -> str:
    [row] = rows(con, "SELECT trace_id FROM traces WHERE file LIKE ?", [f"%{name}"])
    return row["trace_id"]


def shape(con, name: str) -> list[tuple]:
    return [(e["type"], e["tool_name"], e["status"]) for e in events_of(con, trace_of(con, name))]


def test_every_trajectory_loads_with_its_exit_status_as_outcome(con):
    assert rows(con, "SELECT * FROM rejects") == []
    outcomes = {r["file"].rsplit("/", 2)[-2] + "/" + r["file"].rsplit("/", 1)[-1]: r["outcome"]
                for r in rows(con, "SELECT file, outcome FROM traces")}
    assert outcomes == {
        "mini-v2/shelfcount__restock-1.traj.json": "Submitted",
        "mini-v2/shelfcount__restock-2.traj.json": "RuntimeError",
        "mini-v2/toolcall_step_limit.traj.json": "LimitsExceeded",
        "mini-v2/deterministic_clean.traj.json": "Submitted",
        "mini-v1/shelfcount__restock-1.traj.json": "Submitted",
        "mini-v1/deterministic_step_limit.traj.json": "LimitsExceeded",
        "sweagent/shelfcount-restock-thought_action.traj": "submitted",
        "sweagent/shelfcount-restock-function_calling.traj": "submitted (exit_cost)",
        "sweagent/shelfcount-restock-bash_only.traj": "exit_format",
    }


def test_an_action_in_the_text_is_a_bash_call_and_the_observation_its_result(con):
    events = events_of(con, trace_of(con, "mini-v2/shelfcount__restock-1.traj.json"))
    calls = [e for e in events if e["type"] == "tool_call"]
    results = {e["parent_id"] or e["event_id"]: e for e in events if e["type"] == "tool_result"}
    assert [c["content"] for c in calls][:3] == ["ls", "python3 -m unittest -q test_inventory", "tail -f README.md"]
    assert all(c["tool_name"] == "bash" for c in calls)
    shown = [(e["status"], (e["content"] or "")[:40]) for e in events if e["type"] == "tool_result"]
    assert shown[0] == ("ok", "README.md\ninventory.py\ntest_inventory.py")  # the output, out of its wrapper
    assert shown[1][0] == "error"  # the failing test run: <returncode>1</returncode>
    assert shown[2] == ("error", "An error occurred while executing the co")  # the time-out: <exception>, rc -1
    assert len(results) == len(calls) == 6  # every call has its result (the pairing itself: below)
    # the reply with no action is the harness's format error, a workflow step of the harness, no person
    [fmt] = [e for e in events if (e["content"] or "").startswith("Format error")]
    assert (fmt["type"], fmt["actor"]) == ("workflow_step", "harness")
    assert not rows(con, "SELECT * FROM detections WHERE detector = 'human_correction'")


def test_mini_swe_agent_1_timeout_template_fails_the_call(con):
    events = events_of(con, trace_of(con, "mini-v1/shelfcount__restock-1.traj.json"))
    timed_out = [e for e in events if e["type"] == "tool_result" and "timed out" in (e["content"] or "")]
    assert [e["status"] for e in timed_out] == ["error"]
    # two actions in one reply are a format error: no call is made of that reply
    assert not [e for e in events if e["type"] == "tool_call" and "RestockTest" in (e["content"] or "")
                and "cat inventory.py" in (e["content"] or "")]


def test_swe_agent_actions_and_cancelled_commands(con):
    events = events_of(con, trace_of(con, "sweagent/shelfcount-restock-thought_action.traj"))
    calls = [e["content"] for e in events if e["type"] == "tool_call"]
    assert calls[:3] == ["ls", "cd /shelfcount && python3 -m unittest -q test_inventory", "sleep 20 && cat /shelfcount/README.md"]
    cancelled = [e for e in events if e["type"] == "tool_result" and "was cancelled" in (e["content"] or "")]
    assert [e["status"] for e in cancelled] == ["error"]
    # function calling: results are paired by SWE-agent's tool_call_ids
    fc = shape(con, "sweagent/shelfcount-restock-function_calling.traj")
    assert ("tool_result", "str_replace_editor", "ok") in fc


def test_a_tool_call_observation_is_its_output_and_return_code(con):
    events = events_of(con, trace_of(con, "mini-v2/toolcall_step_limit.traj.json"))
    first = next(e for e in events if e["type"] == "tool_result")
    assert first["status"] == "error" and first["content"].startswith("======")


def test_a_run_stopped_at_its_limit_is_found(con):
    found = {r["trace_id"]: r["evidence"] for r in rows(con, "SELECT trace_id, evidence FROM detections WHERE detector = 'unfinished_run'")}
    assert set(found) == {trace_of(con, "mini-v2/toolcall_step_limit.traj.json"),
                          trace_of(con, "mini-v1/deterministic_step_limit.traj.json"),
                          trace_of(con, "sweagent/shelfcount-restock-bash_only.traj"),
                          trace_of(con, "sweagent/shelfcount-restock-function_calling.traj")}
    assert found[trace_of(con, "mini-v2/toolcall_step_limit.traj.json")].startswith("the run ended with LimitsExceeded")


@pytest.mark.skipif(not (SHARED / "samples" / "swe-agent").is_dir(), reason="needs ../shared/samples/swe-agent")
def test_the_real_mini_swe_agent_runs():
    real = stage([SHARED / "samples" / "swe-agent" / "trajs"])
    assert rows(real, "SELECT * FROM rejects") == []
    assert {r["outcome"] for r in rows(real, "SELECT outcome FROM traces")} == {"Submitted"}
    [counts] = rows(real, "SELECT count(*) FILTER (WHERE type = 'tool_call') AS calls, "
                          "count(*) FILTER (WHERE type = 'tool_result') AS results FROM events")
    assert counts["calls"] > 100 and counts["calls"] == counts["results"]


def test_every_result_is_paired_with_the_call_before_it(con):
    """In every trajectory each result names a call made before it and not yet answered (tool_call_id, by
    which the facts pair them; a reply of several calls is answered in turn), of the same tool; every call
    is answered once."""
    for trace in rows(con, "SELECT trace_id, file FROM traces ORDER BY file"):
        waiting: dict[str, str] = {}
        for e in events_of(con, trace["trace_id"]):
            if e["type"] not in ("tool_call", "tool_result"):
                continue
            ref = json.loads(e["metadata"] or "{}").get("tool_call_id")
            where = (trace["file"].rsplit("/", 1)[-1], e["seq"], ref, dict(waiting))
            if e["type"] == "tool_call":
                assert ref and ref not in waiting, where
                waiting[ref] = e["tool_name"]
            else:
                assert waiting.pop(ref, None) == e["tool_name"], where
        assert waiting == {}, (trace["file"], waiting)


def test_swe_agent_1_has_no_person_and_skips_its_demonstrations(tmp_path):
    """SWE-agent 1.x writes only its templates in the user role (agents.py), and puts demonstrations in the
    history marked `is_demo`: an example run, not this one. A user-role entry whose words read like a
    person's is still the harness's, and a demonstration's action is no call of this run."""
    doc = json.loads((FIXTURES / "sweagent" / "shelfcount-restock-thought_action.traj").read_text())
    demo = [{"role": "user", "content": "No, that is wrong: fix the parser in the other module instead.",
             "agent": "main", "message_type": "demonstration", "is_demo": True},
            {"role": "assistant", "content": "DISCUSSION\nAn example.\n\n```\nrm -rf demo_only_dir\n```\n",
             "thought": "An example.", "action": "rm -rf demo_only_dir", "agent": "main",
             "message_type": "action", "is_demo": True}]
    said = {"role": "user", "content": "No, that is wrong: you changed the wrong file, revert it.",
            "agent": "main", "message_type": "observation"}
    doc["history"] = doc["history"][:1] + demo + doc["history"][1:3] + [said] + doc["history"][3:]
    (tmp_path / "run.traj").write_text(json.dumps(doc))
    con = stage([tmp_path])
    found = rows(con, "SELECT type, actor, content FROM events ORDER BY seq")
    assert not [e for e in found if "demo_only_dir" in (e["content"] or "") or "other module" in (e["content"] or "")]
    assert {e["type"] for e in found if "changed the wrong file" in (e["content"] or "")} == {"workflow_step"}
    assert not [e for e in found if e["type"] in ("user_message", "human_correction")]
    assert rows(con, "SELECT count(*) AS n FROM detections WHERE detector = 'human_correction'") == [{"n": 0}]


def test_a_long_output_is_its_head_and_tail(tmp_path):
    """mini-swe-agent shows an output of 10,000 characters or more as its first and last 5,000 under a
    warning (`<output_head>`, `<elided_chars>`, `<output_tail>`: its action_observation_template): the result
    is that head and tail, so a failing test run's error line is read from it (not from a warning, nor an
    empty output)."""
    head = ("/testbed/app/models.py:164: DeprecationWarning: Using or importing the ABCs from 'collections' is deprecated\n"
            + "".join(f"test_case_{n} ... ok\n" for n in range(600)))
    tail = ("ERROR: test_post_params (test_requests.RequestsTestCase)\n" + "x\n" * 40
            + "TypeError: 'str' object is not callable\n\nFAILED (errors=1)")
    observation = ("<returncode>1</returncode>\n<warning>\nThe output of your last command was too long.\n"
                   "Please try a different command that produces less output.\n</warning><output_head>\n" + head
                   + "\n</output_head>\n<elided_chars>\n12000 characters elided\n</elided_chars>\n<output_tail>\n"
                   + tail + "\n</output_tail>")
    run = {"trajectory_format": "mini-swe-agent-1", "instance_id": "long-output",
           "info": {"exit_status": "Submitted", "submission": ""},
           "messages": [{"role": "system", "content": "You are a helpful assistant that can interact with a computer shell."},
                        {"role": "user", "content": "<pr_description>\nFix the post params test.\n</pr_description>"},
                        {"role": "assistant", "content": "THOUGHT: Run the tests.\n\n```bash\npython3 test_requests.py\n```"},
                        {"role": "user", "content": observation},
                        {"role": "assistant", "content": "THOUGHT: Fixed the test; again.\n\n```bash\npython3 test_requests.py\n```"},
                        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nOK\n</output>"},
                        {"role": "assistant", "content": "THOUGHT: Done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"}]}
    (tmp_path / "long-output.traj.json").write_text(json.dumps(run))
    con = stage([tmp_path])
    [result] = [e for e in events_of(con, trace_of(con, "long-output.traj.json")) if e["type"] == "tool_result"][:1]
    assert result["status"] == "error"
    assert result["content"].startswith("/testbed/app/models.py:164: Deprecation") and result["content"].endswith("FAILED (errors=1)")
    assert "12000 characters elided" in result["content"]
    [retry] = rows(con, "SELECT evidence FROM detections WHERE detector = 'retry'")
    assert retry["evidence"] == "python3 test_requests.py: ERROR: test_post_params (test_requests.RequestsTestCase)"
