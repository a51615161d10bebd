"""The chat adapter (sql/adapters/chat.sql) on our own transcripts in every shape it reads, on records it
must refuse, and on the real tau-bench sample.

Fixtures in tests/fixtures/formats/chat/: a file of bare OpenAI messages (one conversation), fine-tuning
JSON Lines (a conversation per line, with and without an id, the older `function_call`), an Anthropic
Messages request with content blocks, and a tau-bench-shaped results file of our own.
"""

import json
from pathlib import Path

import pytest

from conftest import REPO, SHARED, events_of, rows, stage, write_jsonl

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "chat"
TAU_SAMPLE = SHARED / "samples" / "tau-bench"


@pytest.fixture(scope="module")
def con():
    con = stage([FIXTURES])
    return con


def trace_of(con, task_start: str) -> dict:
    (t,) = [t for t in rows(con, "SELECT * FROM traces") if (t["task"] or "").startswith(task_start)]
    return t


def kinds(con, trace_id: str) -> list[tuple]:
    return [(e["type"], e["tool_name"], e["status"]) for e in events_of(con, trace_id)]


def test_every_record_is_accounted_for(con):
    assert rows(con, "SELECT * FROM rejects") == []
    accounts = {Path(a["path"]).name: (a["records"], a["loaded"], a["unaccounted"])
                for a in rows(con, "SELECT * FROM file_accounts")}
    assert accounts == {"returns-chat.json": (9, 9, 0), "conversations.jsonl": (2, 2, 0),
                        "anthropic-deploy.json": (1, 1, 0), "tau-retail-results.json": (2, 2, 0)}
    assert {t["format"] for t in rows(con, "SELECT format FROM traces")} == {"chat"}


def test_a_file_of_bare_messages_is_one_conversation(con):
    t = trace_of(con, "I want to return the tent")
    assert t["trace_id"].startswith("chat-") and t["outcome"] is None
    assert json.loads(t["extra"])["system"].startswith("You are the returns assistant")
    assert kinds(con, t["trace_id"]) == [
        ("user_message", None, None),
        ("tool_call", "get_order", None), ("tool_result", "get_order", "error"),  # {"error": ...}
        ("tool_call", "get_order", None), ("tool_result", "get_order", "ok"),
        ("assistant_message", None, None),
        ("user_message", None, None),  # text given as content parts
        ("final_answer", None, None),
    ]
    call = events_of(con, t["trace_id"])[3]
    assert json.loads(call["metadata"]) == {"arguments": {"order_id": "55102", "region": "US"}, "tool_call_id": "call_a2"}


def test_json_lines_conversations_with_and_without_ids(con):
    billing = trace_of(con, "Why was I charged twice")
    assert (billing["trace_id"], billing["source"]) == ("conv-billing-1", "billing-bot")
    assert kinds(con, "conv-billing-1") == [
        ("user_message", None, None), ("tool_call", "list_charges", None),
        ("tool_result", "list_charges", "error"), ("final_answer", None, None)]
    sunday = trace_of(con, "What is your opening time")
    assert sunday["trace_id"].startswith("chat-") and sunday["trace_id"] != billing["trace_id"]


def test_anthropic_content_blocks(con):
    t = trace_of(con, "Deploy the payments service")
    assert t["trace_id"] == "deploy-thread-77"
    assert json.loads(t["extra"]) == {"system": "You are a deployment helper for the payments team.",
                                      "model": "claude-sonnet-4-5"}
    assert kinds(con, "deploy-thread-77") == [
        ("user_message", None, None), ("assistant_message", None, None),
        ("tool_call", "run_deploy", None), ("tool_result", "run_deploy", "error"),  # is_error
        ("tool_call", "release_lock", None), ("tool_result", "release_lock", "ok"),
        ("final_answer", None, None)]
    failed = events_of(con, "deploy-thread-77")[3]
    assert (failed["content"], failed["success"]) == ("deploy blocked: migration lock held by job 4411", False)


def test_tau_bench_results_reward_is_an_evaluation_and_info_is_not_read(con):
    tau = {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces WHERE trace_id LIKE 'tau-%'")}
    assert sorted((tid.rsplit("-", 1)[0], t["outcome"]) for tid, t in tau.items()) == [
        ("tau-7-0", "failed"), ("tau-7-1", "success")]
    failed = next(tid for tid in tau if tid.startswith("tau-7-0"))
    assert json.loads(tau[failed]["metadata"]) == {"task_id": 7, "trial": 0}
    last = events_of(con, failed)[-1]
    assert (last["type"], last["content"], last["status"], last["success"]) == (
        "evaluation_result", "reward 0.0", "failed", False)
    # the grader's expected actions are not part of the trace
    for table in ("traces", "events", "detections"):
        text = con.execute(f"SELECT string_agg(CAST(columns(*) AS VARCHAR), ' ') FROM {table}").fetchall()
        assert "EXPECTEDQX9" not in repr(text), table
    found = {(r["detector"], r["trace_id"]) for r in rows(con, "SELECT detector, trace_id FROM detections")}
    assert ("failed_evaluation", failed) in found


def test_records_it_cannot_use(tmp_path: Path):
    records = [
        {"id": "c1", "messages": {"role": "user"}},
        {"id": "c2", "messages": [{"role": "user", "content": "hi"}, "not a message"]},
        {"id": "c3", "messages": [{"content": "who am I"}]},
        {"id": "c4", "messages": [{"role": "assistant", "content": "x", "tool_calls": {"id": 1}}]},
        {"task_id": 3, "trial": 0, "reward": 1, "traj": [{"role": "user", "content": "fine"}]},
    ]
    con = stage([write_jsonl(tmp_path / "bad.jsonl", records)])
    assert [(r["line"], r["reason"]) for r in rows(con, "SELECT line, reason FROM rejects ORDER BY line")] == [
        (1, "field 'messages' must be a list"),
        (2, "messages[1]: not an object"),
        (3, "messages[0]: missing required field 'role'"),
        (4, "messages[0]: field 'tool_calls' must be a list"),
    ]
    assert [t["trace_id"].rsplit("-", 1)[0] for t in rows(con, "SELECT trace_id FROM traces")] == ["tau-3-0"]


def test_a_bad_message_in_a_file_of_messages_leaves_the_rest(tmp_path: Path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "Book a table for two."},
                                {"content": "no role"},
                                {"role": "assistant", "content": "Booked for 19:00."}]))
    con = stage([path])
    assert [(r["record"], r["reason"]) for r in rows(con, "SELECT record, reason FROM rejects")] == [
        (2, "missing required field 'role'")]
    (t,) = rows(con, "SELECT trace_id FROM traces")
    assert [e["type"] for e in events_of(con, t["trace_id"])] == ["user_message", "final_answer"]


@pytest.mark.skipif(not TAU_SAMPLE.is_dir(), reason="shared samples not present")
def test_the_real_tau_bench_sample():
    con = stage([TAU_SAMPLE])
    assert rows(con, "SELECT * FROM rejects") == []
    outcomes = dict(con.execute("SELECT outcome, count(*) FROM traces GROUP BY 1").fetchall())
    assert outcomes == {"success": 20, "failed": 20}
    # every tool result is paired with its call's tool, and the system prompt is context, not an event
    assert con.execute("SELECT count(*) FROM events WHERE type = 'tool_result' AND tool_name IS NULL").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM events WHERE content LIKE '# Airline Agent Policy%'").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM events WHERE type = 'tool_result' AND NOT success").fetchone()[0] > 0


def test_an_llm_call_log_ends_with_the_models_answer_and_exit_codes_say_failed(tmp_path: Path):
    """A record that logs one model call (OpenHands' log_completions: `messages` sent and the `response`
    the model gave) is the conversation with that answer last; a shell result that ends with a non-zero
    exit code, as OpenHands, mini-swe-agent and Codex report it, is a failed result."""
    def call(i: str, command: str) -> dict:
        return {"id": i, "type": "function", "function": {"name": "execute_bash", "arguments": json.dumps({"command": command})}}
    record = {"id": "llm-log-1", "messages": [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in /repo."},
        {"role": "assistant", "content": "Run it.", "tool_calls": [call("c1", "pytest -q")]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed\n[Command finished with exit code 1]"},
        {"role": "assistant", "content": "Again.", "tool_calls": [call("c2", "pytest -q")]},
        {"role": "tool", "tool_call_id": "c2", "content": "<returncode>0</returncode>\n<output>5 passed</output>"},
        {"role": "assistant", "content": "Lint.", "tool_calls": [call("c3", "ruff check .")]},
        {"role": "tool", "tool_call_id": "c3", "content": "Exit code: 2\nruff: command not found"}],
        "response": {"id": "r", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "All done.",
            "tool_calls": [{"id": "c4", "type": "function", "function": {"name": "finish", "arguments": "{}"}}]}}]}}
    con = stage([write_jsonl(tmp_path / "completions.jsonl", [record])])
    events = events_of(con, "llm-log-1")
    assert [(e["type"], e["tool_name"], e["status"]) for e in events if e["type"] == "tool_result"] == [
        ("tool_result", "execute_bash", "error"), ("tool_result", "execute_bash", "ok"), ("tool_result", "execute_bash", "error")]
    assert [(e["type"], e["tool_name"], e["content"]) for e in events[-2:]] == [
        ("final_answer", None, "All done."), ("tool_call", "finish", "finish")]
