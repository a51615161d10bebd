"""SWE-agent 0.x `.traj` trajectories (`swe_agent0`), on two runs SWE-agent's own repository publishes (trimmed)
and one of our writing in the same shape (tests/fixtures/formats/swe_agent0/, see its README).

What matters: the user role is SWE-agent's harness, never a person: the task statement, the demonstrations
(skipped), the observation after each action; each action is a `bash` call and that observation its
result, failed where SWE-agent's environment says so (a syntax check refusing an edit, a time-out, a
refused command, a shell error, a traceback); a sub-agent keeps its name; `info.exit_status` is the outcome;
SWE-agent 1.x files stay with `chat`."""

import json
import shutil

import pytest

from conftest import REPO, events_of, rows, stage
from lessonweaver.queries import execute

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "swe_agent0"
ONE_X = REPO / "tests" / "fixtures" / "formats" / "swe_agent" / "sweagent"


@pytest.fixture(scope="module")
def con():
    return stage([FIXTURES])


def trace_of(con, name: str) -> str:
    [row] = rows(con, "SELECT trace_id FROM traces WHERE file LIKE ?", [f"%{name}"])
    return row["trace_id"]


def test_every_run_loads_with_its_exit_status_and_issue(con):
    assert rows(con, "SELECT * FROM rejects") == []
    got = {json.loads(r["metadata"])["instance_id"]: (r["format"], r["outcome"], r["task"][:40])
           for r in rows(con, "SELECT format, outcome, task, metadata FROM traces")}
    assert got == {
        "swe-agent__test-repo-i1": ("swe_agent0", "submitted", "SyntaxError: invalid syntax I'm running "),
        "marshmallow-code__marshmallow-1867": ("swe_agent0", "submitted", "TimeDelta serialization precision Hi the"),
        "shelfcount__restock-3": ("swe_agent0", "submitted (exit_cost)", "restock() raises KeyError when the item "),
    }


def test_actions_are_bash_calls_and_observations_their_results(con):
    events = events_of(con, trace_of(con, "swe-agent__test-repo-i1.traj"))
    assert [(e["type"], e["actor"]) for e in events[:4]] == [
        ("workflow_step", "harness"), ("assistant_message", "agent"), ("tool_call", "agent"), ("tool_result", "tool")]
    calls = [e for e in events if e["type"] == "tool_call"]
    assert [c["content"] for c in calls] == ['find_file "missing_colon.py"', "open tests/missing_colon.py",
                                             # a multi-line command as the environment runs it: a heredoc
                                             "edit 4:4 << 'end_of_edit'\ndef division(a: float, b: float) -> float:\nend_of_edit",
                                             "python tests/missing_colon.py", "submit"]
    assert {c["tool_name"] for c in calls} == {"bash"}
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["parent_id"] for r in results] == [c["event_id"] for c in calls]
    # the output out of the next-step template's footer; the submission's from the last trajectory step
    assert results[3]["content"] == "8.2"
    assert results[4]["content"].strip().startswith("diff --git a/tests/missing_colon.py")
    assert {r["status"] for r in results} == {"ok"}


def test_demonstrations_and_the_system_template_are_no_events(con):
    trace = trace_of(con, "swe-agent__test-repo-i1.traj")
    texts = [e["content"] or "" for e in events_of(con, trace)]
    assert not [t for t in texts if "DEMONSTRATION" in t or t.startswith("SETTING:")]
    [extra] = rows(con, "SELECT extra FROM traces WHERE trace_id = ?", [trace])
    assert json.loads(extra["extra"])["system"].startswith("SETTING: You are an autonomous programmer")


def test_failures_are_read_from_what_the_environment_wrote(con):
    refused = [(e["status"], json.loads(e["metadata"]).get("failure"))
               for e in events_of(con, trace_of(con, "marshmallow-code__marshmallow-1867.traj")) if e["type"] == "tool_result"]
    assert refused.count(("error", "syntax_check")) == 1 and len([r for r in refused if r[0] == "error"]) == 1
    failed = [json.loads(e["metadata"]).get("failure")
              for e in events_of(con, trace_of(con, "shelfcount__restock-3.traj")) if e["type"] == "tool_result"]
    assert failed == ["command_refused", None, "shell", "exception", None, "syntax_check", None, "timeout", None]


def test_a_sub_agent_keeps_its_name_and_its_prompt_is_its_parents(con):
    events = events_of(con, trace_of(con, "shelfcount__restock-3.traj"))
    agents = [json.loads(e["metadata"]).get("agent") for e in events]
    assert set(agents) == {"primary", "fixer"}
    [prompt] = [e for e in events if e["type"] == "user_message"]
    assert (prompt["actor"], json.loads(prompt["metadata"])["agent"]) == ("parent", "fixer")
    # the primary agent's call of its sub-agent is answered by what the sub-agent returned
    [call] = [e for e in events if e["type"] == "tool_call" and e["content"].startswith("fixer ")]
    [answer] = [e for e in events if e["parent_id"] == call["event_id"]]
    assert answer["content"] == "restock() now starts a new item at zero."
    # the run loop's own exit action is the harness's, not a call of the agent
    assert (events[-1]["type"], events[-1]["raw_type"], events[-1]["actor"]) == ("workflow_step", "exit_cost", "harness")


def test_no_person_speaks_so_nothing_is_a_correction(con):
    assert rows(con, "SELECT count(*) AS n FROM events WHERE actor = 'human' OR (actor IS NULL AND type IN "
                     "('user_message', 'human_correction'))") == [{"n": 0}]
    found = {(r["detector"], r["trace_id"]) for r in rows(con, "SELECT detector, trace_id FROM detections")}
    assert not [d for d, _ in found if d in ("human_correction", "unverified_claim")]
    # the run stopped at its cost limit is unfinished; the two that submitted are not
    assert {t for d, t in found if d == "unfinished_run"} == {trace_of(con, "shelfcount__restock-3.traj")}


def test_swe_agent_1_files_stay_with_chat(tmp_path):
    shutil.copytree(FIXTURES, tmp_path / "zero")
    shutil.copytree(ONE_X, tmp_path / "one")
    both = stage([tmp_path])
    got = {(r["file"].split("/")[-2], r["format"]) for r in rows(both, "SELECT file, format FROM traces")}
    assert got == {("zero", "swe_agent0"), ("one", "chat")}


def test_a_history_entry_that_is_no_object_rejects_the_run(tmp_path):
    run = json.loads((FIXTURES / "swe-agent__test-repo-i1.traj").read_text(encoding="utf-8"))
    run["history"][3] = "not an entry"
    (tmp_path / "broken.traj").write_text(json.dumps(run), encoding="utf-8")
    broken = stage([tmp_path])
    assert [r["reason"] for r in rows(broken, "SELECT reason FROM rejects")] == ["history[3]: not an object"]
    assert rows(broken, "SELECT count(*) AS n FROM traces") == [{"n": 0}]


def test_an_edit_changes_the_open_file_and_create_the_file_it_names(con):
    """SWE-agent 0.x's `edit N:M` rewrites lines of the file open at the time (the footer of the observation
    before it says which) and `create PATH` makes PATH: both are changes of files, so a run that only edits
    with them is a coding run (retries while editing are how code is written there)."""
    execute(con, "facts/facts.sql")
    tid = trace_of(con, "swe-agent__test-repo-i1.traj")
    calls = rows(con, "SELECT f.edited, f.changes, f.coding_run, e.content FROM facts f JOIN events e USING (trace_id, seq) "
                      "WHERE f.trace_id = ? AND f.type = 'tool_call' ORDER BY f.seq", [tid])
    assert [(c["content"].split()[0], c["edited"], c["changes"]) for c in calls] == [
        ("find_file", [], False), ("open", [], False), ("edit", ["/klieret__swe-agent-test-repo/tests/missing_colon.py"], True),
        ("python", [], False), ("submit", [], False)]
    assert all(c["coding_run"] for c in calls)
    made = rows(con, "SELECT f.edited FROM facts f JOIN events e USING (trace_id, seq) WHERE f.trace_id = ? "
                     "AND f.type = 'tool_call' AND e.content LIKE 'create %'", [trace_of(con, "marshmallow-code__marshmallow-1867.traj")])
    assert made == [{"edited": ["reproduce.py"]}]
