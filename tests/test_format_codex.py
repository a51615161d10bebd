"""The codex adapter (sql/adapters/codex.sql) on rollouts of our own writing in the layout Codex CLI uses
(tests/fixtures/formats/codex/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl), and on the real recorded sessions
in ../shared/samples/coding-agents/ (Codex CLI 0.34, under a hidden .codex folder).

The enveloped session: injected context, a prompt written twice, encrypted reasoning, a shell call with a
0.3x JSON output, a failed apply_patch, a failing test run (`Exit code: 1`), a push the user rejects, an
interrupted turn, the user's next message, a `failed in sandbox` run, the final answer written twice, and
bookkeeping (turn context, token counts, task markers). The bare file: the earlier form with a header,
items without an envelope and state lines.
"""

import json

import pytest

from conftest import REPO, SHARED, events_of, rows, stage

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "codex"
SESSION = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
BARE = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
SAMPLES = SHARED / "samples" / "coding-agents" / "codex-openprintkit"


@pytest.fixture(scope="module")
def con():
    con = stage([FIXTURES])
    return con


def test_a_rollout_is_a_trace_and_every_line_is_accounted(con):
    assert rows(con, "SELECT * FROM rejects") == []
    traces = {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces")}
    assert set(traces) == {SESSION, BARE}
    t = traces[SESSION]
    assert (t["format"], t["source"], t["task"]) == ("codex", "codex/invoicer", "Fix the VAT rounding in invoices and run the tests.")
    assert json.loads(t["metadata"]) == {"cwd": "/home/dev/invoicer", "cli_version": "0.58.0", "originator": "codex_cli_rs",
                                         "git_branch": "fix/vat", "models": ["gpt-5-codex"]}
    assert traces[BARE]["task"] == "Add a --dry-run flag to the export command."
    assert [(a["records"], a["loaded"], a["unaccounted"]) for a in rows(con, "SELECT * FROM file_accounts ORDER BY records")] == [
        (7, 7, 0), (25, 25, 0)]


def test_events_once_each_with_their_outcome(con):
    got = [(e["type"], e["tool_name"], e["status"]) for e in events_of(con, SESSION)]
    assert got == [
        ("user_message", None, None),  # once, though written twice; the environment context is no event
        ("tool_call", "shell", None), ("tool_result", "shell", "ok"),
        ("tool_call", "apply_patch", None), ("tool_result", "apply_patch", "error"),
        ("tool_call", "shell_command", None), ("tool_result", "shell_command", "error"),
        ("tool_call", "shell_command", None), ("tool_result", "shell_command", "rejected"),
        ("human_correction", "shell_command", None),  # the rejected push
        ("human_correction", None, None),  # the interrupted turn
        ("user_message", None, None),
        ("tool_call", "shell", None), ("tool_result", "shell", "error"),  # failed in sandbox
        ("final_answer", None, None),
    ]
    events = {e["event_id"]: e for e in events_of(con, SESSION)}
    assert json.loads(events["call_test1/output"]["metadata"]) == {"exit_code": 1}
    assert json.loads(events["call_test2/output"]["metadata"]) == {"exit_code": 2}
    assert events["call_rg/output"]["content"] == "src/vat.py:12: return round(amount * rate, 1)"  # the JSON output unwrapped
    assert json.loads(events["call_rg"]["metadata"]) == {"arguments": {"command": ["bash", "-lc", "rg -n vat src"]}}


def test_corrections_carry_the_users_next_message(con):
    fixes = [e for e in events_of(con, SESSION) if e["type"] == "human_correction"]
    assert {f["content"] for f in fixes} == {"Don't push. Round to 2 decimals, half up, as the tax office requires."}
    assert [json.loads(f["metadata"])["said"] for f in fixes] == ["exec command rejected by user", "interrupted"]
    assert {d["detector"] for d in rows(con, "SELECT detector FROM detections WHERE trace_id = ?", [SESSION])} >= {
        "human_correction"}


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_the_real_sessions():
    con = stage([SAMPLES])
    assert rows(con, "SELECT * FROM rejects") == [] and rows(con, "SELECT * FROM quarantine") == []
    assert con.execute("SELECT sum(unaccounted) FROM file_accounts").fetchone()[0] == 0
    assert dict(con.execute("SELECT format, count(*) FROM traces GROUP BY 1").fetchall()) == {"codex": 3}
    calls, results, failed = con.execute(
        "SELECT count(*) FILTER (WHERE type = 'tool_call'), count(*) FILTER (WHERE type = 'tool_result'),"
        " count(*) FILTER (WHERE type = 'tool_result' AND NOT success) FROM events").fetchone()
    assert calls == results == 729 and failed == 58  # every call answered; 58 failures, read from the text
    # user and assistant text are written twice; each is one event
    assert con.execute("SELECT count(*) FROM events WHERE type = 'user_message'").fetchone()[0] == 115
