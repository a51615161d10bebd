"""The agent_chat_log adapter (sql/adapters/agent_chat_log.sql) on multi-agent message logs of our own
writing, in the two shapes such logs come in (tests/fixtures/formats/agent_chat_log/): an AG2 group chat
(`history` of {content, name, role}: the speaker in `name`, `role` only the chat role) and a Magentic-One
transcript (`role` the speaker's label: `human`, `Orchestrator (-> WebSurfer)`, `WebSurfer`, ...). Both
carry the annotations such logs are published with (the agent and step to blame, the expected answer): the
answer key, never read. And the real logs of ../shared/benchmarks/whowhen/ (skipped when absent)."""

import json

import pytest

from conftest import REPO, SHARED, events_of, rows, stage

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "agent_chat_log"
WHOWHEN = SHARED / "benchmarks" / "whowhen"


@pytest.fixture(scope="module")
def con():
    return stage([FIXTURES])


def trace_of(con, source: str) -> str:
    return con.execute("SELECT trace_id FROM traces WHERE source = ?", [source]).fetchone()[0]


def test_a_log_is_a_trace_with_its_question_as_task(con):
    assert rows(con, "SELECT * FROM rejects") == []
    traces = {t["source"]: t for t in rows(con, "SELECT * FROM traces")}
    assert set(traces) == {"ag2", "magentic-one"}
    assert traces["magentic-one"]["task"] == "What time does the Riverside public library open on Sundays?"
    assert json.loads(traces["ag2"]["metadata"]) == {"agents": ["Computer_terminal", "Spreadsheet_Expert", "Verification_Expert"]}
    assert set(json.loads(traces["ag2"]["extra"])["system"]) == {"Spreadsheet_Expert", "Verification_Expert"}


def test_the_speaker_not_the_chat_role_says_who_acts_in_a_group_chat(con):
    got = [(e["type"], e["actor"], json.loads(e["metadata"])["agent"], e["status"]) for e in events_of(con, trace_of(con, "ag2"))]
    assert got == [
        ("user_message", "parent", "Spreadsheet_Expert", None),  # the task its lead composed for the group
        ("assistant_message", "agent", "Spreadsheet_Expert", None),  # chat role `user`: still an agent
        ("tool_call", "agent", "Spreadsheet_Expert", None), ("tool_result", "tool", "Computer_terminal", "error"),  # exitcode 1
        ("assistant_message", "agent", "Spreadsheet_Expert", None),
        ("tool_call", "agent", "Spreadsheet_Expert", None), ("tool_result", "tool", "Computer_terminal", "ok"),
        ("assistant_message", "agent", "Spreadsheet_Expert", None),
        ("tool_call", "agent", "Spreadsheet_Expert", None), ("tool_result", "tool", "Computer_terminal", "ok"),
        ("assistant_message", "agent", "Verification_Expert", None),
        ("workflow_step", "harness", "Computer_terminal", None),  # the executor found no code to run
        ("final_answer", "agent", "Verification_Expert", None),
    ]
    calls = [e for e in events_of(con, trace_of(con, "ag2")) if e["type"] == "tool_call"]
    assert json.loads(calls[1]["metadata"])["arguments"] == {"command": "pip install pandas openpyxl"}


def test_the_orchestrator_hands_steps_to_its_agents(con):
    got = [(e["type"], e["actor"], json.loads(e["metadata"]).get("agent"), json.loads(e["metadata"]).get("to"))
           for e in events_of(con, trace_of(con, "magentic-one"))]
    assert got == [
        ("user_message", "human", "human", None),  # the task, labelled `human` by the script that started the run
        ("assistant_message", "agent", "Orchestrator", None),  # its plan
        ("user_message", "parent", "Orchestrator", "WebSurfer"),
        ("assistant_message", "agent", "WebSurfer", None),
        ("assistant_message", "agent", "Orchestrator", None),  # its ledger
        ("user_message", "parent", "Orchestrator", "Assistant"),
        ("assistant_message", "agent", "Assistant", None),
        ("user_message", "parent", "Orchestrator", "ComputerTerminal"),
        ("tool_call", "agent", "Assistant", None),  # the code the Assistant wrote, run by the terminal
        ("tool_result", "tool", "ComputerTerminal", None),
        ("final_answer", "agent", "Orchestrator", None),
        ("workflow_step", "harness", "Orchestrator", None),  # the orchestration loop's stop
    ]


def test_no_turn_after_the_first_is_a_persons_and_none_is_a_correction(con):
    people = rows(con, "SELECT seq FROM events WHERE actor IN ('human', 'counterpart') OR type = 'human_correction'")
    assert people == [{"seq": 1}]
    assert rows(con, "SELECT * FROM detections WHERE detector = 'human_correction'") == []


def test_the_annotations_are_never_read(con):
    texts = [json.dumps(r, default=str) for r in rows(con, "SELECT * FROM traces")] \
        + [json.dumps(r, default=str) for r in rows(con, "SELECT * FROM events")]
    for key in ("mistake", "ground_truth", "is_correct", "question_ID", "must never be read", "fixture-rye-0001", "10:30"):
        assert not any(key in t for t in texts), key


def test_a_message_it_cannot_read_rejects_the_run(tmp_path):
    bad = {"history": [{"content": "Find the report.", "name": "Lead_Expert", "role": "assistant"}, "not a message",
                       {"content": "done", "name": "Lead_Expert", "role": "user"}], "question": "Find the report."}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    con = stage([path])
    assert [r["reason"] for r in rows(con, "SELECT reason FROM rejects")] == ["history[1]: not an object"]
    assert rows(con, "SELECT count(*) AS n FROM traces") == [{"n": 0}]


@pytest.mark.skipif(not WHOWHEN.is_dir(), reason="needs ../shared/benchmarks/whowhen")
def test_the_real_logs():
    con = stage([WHOWHEN])
    assert rows(con, "SELECT * FROM rejects") == []
    assert con.execute("SELECT sum(records), sum(unaccounted) FROM file_accounts").fetchone() == (184, 0)
    # every record loaded or quarantined (a log whose web pages carry a token-like field is held back)
    assert con.execute("SELECT (SELECT count(*) FROM traces) + (SELECT count(*) FROM quarantine)").fetchone()[0] == 184
    # after the first message no event is a person's, and nothing is a correction
    assert con.execute("""SELECT count(*) FROM events WHERE (actor IN ('human', 'counterpart') AND seq > 1)
                          OR type = 'human_correction'""").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM detections WHERE detector = 'human_correction'").fetchone()[0] == 0
