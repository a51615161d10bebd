"""The claude_code adapter (sql/adapters/claude_code.sql) on a session of our own writing, in the layout and
shape Claude Code 2.1 writes (tests/fixtures/formats/claude_code/: a project folder with a session file and
its subagent's file), and on the real recorded sessions in ../shared/samples/coding-agents/.

The session: a slash command and a meta caveat, a prompt under an IDE note, a thinking block, a failing
test run, an API error, an edit the user rejects with a reason, a subagent (Task), an interruption and the
user's next message, a synthetic API error message, the final answer, bookkeeping records (snapshot,
progress, queue operation, turn duration, summary), and the start of the history written again after a
resume (new uuids, same times and ids).
"""

import json

import pytest

from conftest import REPO, SHARED, events_of, rows, stage

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "claude_code"
SESSION = "5d0c9e4a-7b1f-4e2a-9c3d-1a2b3c4d5e6f"
SAMPLES = SHARED / "samples" / "coding-agents" / "cc-session-share"


@pytest.fixture(scope="module")
def con():
    con = stage([FIXTURES])
    return con


def test_a_session_and_its_subagent_are_one_trace(con):
    assert rows(con, "SELECT * FROM rejects") == []
    (t,) = rows(con, "SELECT * FROM traces")
    assert (t["trace_id"], t["format"], t["source"]) == (SESSION, "claude_code", "claude-code/shopfront")
    assert t["task"] == "The cart total is wrong when a coupon is applied. Fix it and run the tests."
    meta = json.loads(t["metadata"])
    assert meta["subagents"] == ["b7c1d2e"] and meta["title"] == "Cart coupon total fix"
    assert meta["models"] == ["claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"]
    # every record, bookkeeping and repeats included, is accounted for with the session
    accounts = rows(con, "SELECT records, loaded, unaccounted, note FROM file_accounts ORDER BY records DESC")
    assert [(a["records"], a["loaded"], a["unaccounted"]) for a in accounts] == [(33, 33, 0), (4, 4, 0)]
    assert accounts[1]["note"] == "1 comment line(s) (//) skipped"


def test_events_in_time_order(con):
    got = [(e["type"], e["tool_name"], e["status"]) for e in events_of(con, SESSION)]
    assert got == [
        ("workflow_step", None, None),  # /clear; the meta caveat is no event
        ("user_message", None, None),
        ("assistant_message", None, None),  # the thinking block is no event
        ("tool_call", "Read", None), ("tool_result", "Read", "ok"),
        ("tool_call", "Bash", None), ("tool_result", "Bash", "error"),
        ("error", None, "error"),  # system api_error
        ("tool_call", "Edit", None), ("tool_result", "Edit", "rejected"), ("human_correction", "Edit", None),
        ("tool_call", "Task", None),
        ("user_message", None, None), ("tool_call", "Grep", None), ("tool_result", "Grep", "ok"),  # the subagent
        ("assistant_message", None, None),
        ("tool_result", "Task", "ok"),
        ("assistant_message", None, None),
        ("human_correction", None, None), ("user_message", None, None),
        ("error", None, "error"),  # the synthetic API error message
        ("final_answer", None, None),
    ]


def test_corrections_carry_what_the_user_said(con):
    fixes = [e for e in events_of(con, SESSION) if e["type"] == "human_correction"]
    assert [f["content"] for f in fixes] == [
        "Do not double the coupon; apply the percentage to the subtotal.",  # the reason given with the rejection
        "Stop, first check the coupon type: some coupons are fixed amounts.",  # the message after the interruption
    ]
    assert json.loads(fixes[1]["metadata"]) == {"said": "[Request interrupted by user]"}
    found = {(d["detector"], d["evidence"]) for d in rows(con, "SELECT detector, evidence FROM detections")}
    assert ("human_correction", "Do not double the coupon; apply the percentage to the subtotal.") in found


def test_tool_calls_keep_their_input_and_subagent_events_their_agent(con):
    events = {e["event_id"]: e for e in events_of(con, SESSION)}
    assert json.loads(events["toolu_test1"]["metadata"]) == {"input": {"command": "npm test -- cart",
                                                                       "description": "Run cart tests"}}
    assert events["toolu_test1/result"]["content"].startswith("Exit code 1")
    assert json.loads(events["toolu_grep1"]["metadata"])["agent_id"] == "b7c1d2e"
    api = next(e for e in events.values() if e["raw_type"] == "system:api_error")
    assert json.loads(api["metadata"]) == {"retry": {"retry_attempt": 1, "max_retries": 10}}


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_the_real_sessions():
    con = stage([SAMPLES])
    assert rows(con, "SELECT * FROM rejects") == []
    assert rows(con, "SELECT * FROM quarantine") == []
    assert con.execute("SELECT sum(unaccounted) FROM file_accounts").fetchone()[0] == 0
    traces = dict(con.execute("SELECT trace_id, format FROM traces").fetchall())
    assert len(traces) == 7 and set(traces.values()) == {"claude_code"}
    kinds = dict(con.execute("SELECT raw_type, count(*) FROM events GROUP BY 1").fetchall())
    # 6 interruption markers and 3 rejections are written, some twice (a history written again): 4 and 2
    assert kinds["user:interrupt"] == 4 and kinds["user:rejected_tool_use"] == 2
    assert kinds["system:api_error"] == 9
    assert con.execute("SELECT count(*) FROM events WHERE type = 'tool_result' AND tool_name IS NULL").fetchone()[0] == 0
