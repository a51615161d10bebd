"""The claude_code adapter (sql/adapters/claude_code.sql) on a session of our own writing, in the layout and
shape Claude Code 2.1 writes (tests/fixtures/formats/claude_code/: a project folder with a session file and
its subagent's file), and on the real recorded sessions in ../shared/samples/coding-agents/.

The session: a slash command, its output and a meta caveat, a prompt under an IDE note and beside a system
reminder, a thinking block, a failing test run, an API error, an edit the user rejects with a reason, a
subagent (Task) whose write its permission settings refuse, an interruption and the user's next message, a
synthetic API error message, the final answer, bookkeeping records (snapshot, progress, queue operation,
turn duration, summary), and the start of the history written again after a resume (new uuids, same times
and ids).
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
    assert [(a["records"], a["loaded"], a["unaccounted"]) for a in accounts] == [(35, 35, 0), (6, 6, 0)]
    assert accounts[1]["note"] == "1 comment line(s) (//) skipped"


def test_events_in_time_order(con):
    got = [(e["type"], e["tool_name"], e["status"], e["actor"]) for e in events_of(con, SESSION)]
    assert got == [
        # every text in the user's place is an event as written, the CLI's the harness's
        ("workflow_step", None, None, "harness"),  # the meta caveat
        ("workflow_step", None, None, "harness"),  # /clear
        ("workflow_step", None, None, "harness"),  # its output
        ("workflow_step", None, None, "harness"),  # the IDE note
        ("user_message", None, None, "human"),  # what the person typed
        ("workflow_step", None, None, "harness"),  # a system reminder
        ("assistant_message", None, None, None),  # the thinking block is no event
        ("tool_call", "Read", None, None), ("tool_result", "Read", "ok", None),
        ("tool_call", "Bash", None, None), ("tool_result", "Bash", "error", None),
        ("error", None, "error", "provider"),  # system api_error
        ("tool_call", "Edit", None, None), ("tool_result", "Edit", "rejected", None), ("human_correction", "Edit", None, "human"),
        ("tool_call", "Task", None, None),
        ("user_message", None, None, "parent"),  # the subagent's prompt: the agent that started it wrote it
        ("tool_call", "Grep", None, None), ("tool_result", "Grep", "ok", None),
        ("tool_call", "Write", None, None), ("tool_result", "Write", "denied", "harness"),  # refused by the settings
        ("assistant_message", None, None, None),
        ("tool_result", "Task", "ok", None),
        ("assistant_message", None, None, None),
        ("user_message", None, None, "human"),  # the interruption, a turn of its own
        ("user_message", None, None, "human"),  # and what the person said next, another
        ("error", None, "error", "provider"),  # the synthetic API error message
        ("final_answer", None, None, None),
    ]


def test_a_rejection_carries_the_persons_words_and_an_interruption_is_a_turn_of_its_own(con):
    events = events_of(con, SESSION)
    fixes = [e for e in events if e["type"] == "human_correction"]
    # the reason given with the rejection, not the CLI's text around it
    assert [(f["content"], f["metadata"]) for f in fixes] == [("Do not double the coupon; apply the percentage to the subtotal.", None)]
    interrupted = next(i for i, e in enumerate(events) if e["raw_type"] == "user:interrupt")
    assert (events[interrupted]["content"], json.loads(events[interrupted]["metadata"])) == (
        "[Request interrupted by user]", {"interruption": True})
    assert events[interrupted + 1]["content"] == "Stop, first check the coupon type: some coupons are fixed amounts."
    found = {(d["detector"], d["evidence"]) for d in rows(con, "SELECT detector, evidence FROM detections")}
    assert ("human_correction", "Do not double the coupon; apply the percentage to the subtotal.") in found


def test_a_call_the_settings_refused_is_denied_not_failed(con):
    (denied,) = [e for e in events_of(con, SESSION) if e["status"] == "denied"]
    assert (denied["event_id"], denied["parent_id"], denied["success"], denied["actor"]) == (
        "toolu_write1/result", "toolu_write1", False, "harness")
    assert denied["content"] == "Permission to use Write has been auto-denied (prompts unavailable)."


def test_a_rejection_without_words_is_a_correction_with_none(tmp_path):
    """The person rejected a call and said nothing: the correction's text is empty, whatever the CLI wrote
    around it (its memory note included), and what they say next is their own turn."""
    records = [json.loads(line) for line in (FIXTURES / "-home-dev-shopfront" / f"{SESSION}.jsonl").read_text().splitlines()]
    rejected = next(r for r in records if r.get("uuid", "").endswith("0013"))
    rejected["message"]["content"][0]["content"] = (
        "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
        "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
        "to proceed.\n\nNote: The user's next message may contain a correction or preference. Pay close attention "
        "— if they explain what went wrong or how they'd prefer you to work, consider saving that to memory for "
        "future sessions.")
    folder = tmp_path / "-home-dev-shopfront"
    folder.mkdir()
    (folder / f"{SESSION}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    con = stage([folder])
    fixes = [e for e in events_of(con, SESSION) if e["type"] == "human_correction"]
    assert [(f["content"], f["actor"], f["tool_name"]) for f in fixes] == [("", "human", "Edit")]


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
    # an interruption is the person's turn, a subagent's prompt its parent's; no rejection carries words
    actors = dict(con.execute("SELECT raw_type || ' ' || actor, count(*) FROM events WHERE type IN ('user_message', 'human_correction') "
                              "GROUP BY 1").fetchall())
    assert actors == {"user:interrupt human": 4, "user:rejected_tool_use human": 2, "user human": 14, "user parent": 6}
    assert kinds["system:api_error"] == 9
    assert con.execute("SELECT count(*) FROM events WHERE type = 'tool_result' AND tool_name IS NULL").fetchone()[0] == 0
