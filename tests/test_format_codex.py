"""The codex adapter (sql/adapters/codex.sql) on rollouts of our own writing in the layout Codex CLI uses
(tests/fixtures/formats/codex/sessions/YYYY/MM/DD/rollout-…-<id>.jsonl), and on the real recorded sessions
in ../shared/samples/coding-agents/ (Codex CLI 0.34, under a hidden .codex folder).

The enveloped session: injected context, a prompt written twice, encrypted reasoning, a shell call with a
0.3x JSON output, a failed apply_patch, a failing test run (`Exit code: 1`), a push the user rejects, an
interrupted turn, the user's next message, a `failed in sandbox` run, a command the exec policy forbids,
the final answer written twice, and bookkeeping (turn context, token counts, task markers). A session that
session spawned (source subagent thread_spawn). The bare file: the earlier form with a header, items
without an envelope and state lines.
"""

import json

import pytest

from conftest import REPO, SHARED, events_of, rows, stage

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "codex"
SESSION = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
SPAWNED = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a6c"
BARE = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
SAMPLES = SHARED / "samples" / "coding-agents" / "codex-openprintkit"


@pytest.fixture(scope="module")
def con():
    con = stage([FIXTURES])
    return con


def test_a_rollout_is_a_trace_and_every_line_is_accounted(con):
    assert rows(con, "SELECT * FROM rejects") == []
    traces = {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces")}
    assert set(traces) == {SESSION, BARE, SPAWNED}
    t = traces[SESSION]
    assert (t["format"], t["source"], t["task"]) == ("codex", "codex/invoicer", "Fix the VAT rounding in invoices and run the tests.")
    assert json.loads(t["metadata"]) == {"cwd": "/home/dev/invoicer", "cli_version": "0.58.0", "originator": "codex_cli_rs",
                                         "git_branch": "fix/vat", "models": ["gpt-5-codex"],
                                         # where its commands ran, from the environment context and turn context
                                         "shell": "zsh", "sandbox": "workspace-write", "network": "restricted",
                                         "approval": "on-request"}
    assert traces[BARE]["task"] == "Add a --dry-run flag to the export command."
    assert [(a["records"], a["loaded"], a["unaccounted"]) for a in rows(con, "SELECT * FROM file_accounts ORDER BY records")] == [
        (6, 6, 0), (7, 7, 0), (27, 27, 0)]


def test_events_once_each_with_their_outcome(con):
    got = [(e["type"], e["tool_name"], e["status"], e["actor"]) for e in events_of(con, SESSION)]
    assert got == [
        ("workflow_step", None, None, "harness"),  # the environment context Codex writes in the user role
        ("user_message", None, None, "human"),  # once, though written twice
        ("tool_call", "shell", None, None), ("tool_result", "shell", "ok", None),
        ("tool_call", "apply_patch", None, None), ("tool_result", "apply_patch", "error", None),
        ("tool_call", "shell_command", None, None), ("tool_result", "shell_command", "error", None),
        ("tool_call", "shell_command", None, None), ("tool_result", "shell_command", "rejected", None),
        ("human_correction", "shell_command", None, "human"),  # the rejected push
        ("user_message", None, None, "human"),  # the interrupted turn, a turn of its own
        ("workflow_step", None, None, "harness"),  # Codex's note of it to the model
        ("user_message", None, None, "human"),  # what the person said next
        ("tool_call", "shell", None, None), ("tool_result", "shell", "error", None),  # failed in sandbox: it ran
        ("tool_call", "shell_command", None, None), ("tool_result", "shell_command", "denied", "harness"),  # forbidden
        ("final_answer", None, None, None),
    ]
    events = {e["event_id"]: e for e in events_of(con, SESSION)}
    assert json.loads(events["call_test1/output"]["metadata"]) == {"exit_code": 1}
    assert json.loads(events["call_test2/output"]["metadata"]) == {"exit_code": 2}
    assert events["call_rg/output"]["content"] == "src/vat.py:12: return round(amount * rate, 1)"  # the JSON output unwrapped
    assert json.loads(events["call_rg"]["metadata"]) == {"arguments": {"command": ["bash", "-lc", "rg -n vat src"]}}


def test_a_rejection_is_a_correction_and_an_interruption_a_turn_of_its_own(con):
    events = events_of(con, SESSION)
    fixes = [e for e in events if e["type"] == "human_correction"]
    # Codex records no words with a rejection: the correction has none, and the next message is its own turn
    assert [(f["content"], f["event_id"], f["metadata"]) for f in fixes] == [("", "call_push/correction", None)]
    (interrupted,) = [e for e in events if e["raw_type"] == "event_msg:turn_aborted"]
    assert (interrupted["content"], json.loads(interrupted["metadata"])) == ("interrupted", {"interruption": True})
    assert {d["detector"] for d in rows(con, "SELECT detector FROM detections WHERE trace_id = ?", [SESSION])} >= {
        "human_correction"}


def test_a_call_the_policy_forbids_is_denied_not_failed(con):
    (denied,) = [e for e in events_of(con, SESSION) if e["status"] == "denied"]
    assert (denied["event_id"], denied["success"], denied["actor"]) == ("call_rm1/output", False, "harness")
    assert denied["content"] == "`bash -lc 'rm -rf build'` rejected: policy forbids commands starting with `rm`"


def test_a_spawned_sessions_prompt_is_its_parents(con):
    said = [(e["type"], e["actor"], e["content"]) for e in events_of(con, SPAWNED) if e["type"] == "user_message"]
    assert said == [("user_message", "parent", "Find every call of round() in src/ and say which ones round money.")]


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


def test_each_line_is_read_from_its_one_parse(tmp_path):
    """The adapter parses a line once, envelope and payload together; the payload's own text is read only
    where nothing else says what a line is. Pinned here: each shape an output takes (a JSON string that
    wraps the exit code, a list of parts, an object, a number), arguments written as an object, a null
    payload, copies of a part with no text told apart by their payload, the working directory found in
    context spelled with \\u003c, and the early bare form."""
    def env(kind: str, payload, ts: str = "2026-02-11T15:00:00Z") -> str:
        return json.dumps({"timestamp": ts, "type": kind, "payload": payload})

    session = "0190a1b2-0000-7e5f-8a9b-00000000aaaa"
    search = {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "vat"}}
    lines = [
        env("session_meta", {"id": session, "cwd": "/home/dev/shop", "cli_version": "0.60.0",
                             "originator": "codex_cli_rs", "git": {"branch": "main"}}),
        env("event_msg", {"type": "user_message", "message": "Make the tests pass."}),
        env("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Make the tests pass."}]}),
        env("response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                              "arguments": {"command": ["bash", "-lc", "pytest -q"]}}),
        env("response_item", {"type": "function_call_output", "call_id": "c1",
                              "output": json.dumps({"output": "2 failed", "metadata": {"exit_code": 3}})}),
        env("response_item", {"type": "function_call", "name": "shell", "call_id": "c2",
                              "arguments": json.dumps({"command": ["ls"]})}),
        env("response_item", {"type": "function_call_output", "call_id": "c2",
                              "output": [{"type": "input_text", "text": "src tests"}]}),
        env("response_item", {"type": "custom_tool_call", "name": "apply_patch", "call_id": "c3", "input": "*** Begin Patch"}),
        env("response_item", {"type": "custom_tool_call_output", "call_id": "c3", "output": {"content": "no match", "success": False}}),
        env("response_item", {"type": "function_call", "name": "count", "call_id": "c4", "arguments": "{}"}),
        env("response_item", {"type": "function_call_output", "call_id": "c4", "output": 5}),
        env("response_item", search, "2026-02-11T15:01:00Z"),
        json.dumps({"timestamp": "2026-02-11T15:01:00Z", "type": "response_item", "payload": search}, indent=None,
                   separators=(" , ", " : ")),  # the same search again, spaced another way: a copy
        env("response_item", {"type": "new_kind_of_item", "detail": "x"}),
        env("event_msg", None),
        env("event_msg", {"type": "error", "message": "sandbox denied", "codex_error_info": "sandbox_error"}),
        env("event_msg", {"type": "stream_error", "message": "stream disconnected"}),
        env("response_item", {"type": "message", "role": "assistant", "phase": "final_answer",
                              "content": [{"type": "output_text", "text": "Fixed."}]}),
    ]
    (tmp_path / f"rollout-2026-02-11T15-00-00-{session}.jsonl").write_text("\n".join(lines) + "\n")
    # no session_meta: the id is the file's; the directory is in the context, `<` written as \u003c
    other = "0190a1b2-0000-7e5f-8a9b-00000000bbbb"
    context = env("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context><cwd>/srv/billing</cwd></environment_context>"}]})
    (tmp_path / f"rollout-2026-02-11T16-00-00-{other}.jsonl").write_text("\n".join([
        context.replace("<", "\\u003c"),
        env("response_item", {"type": "message", "role": "user", "content": "Rename the module."}),
        env("response_item", {"type": "message", "role": "assistant", "content": "Renamed."}),
    ]) + "\n")
    # the early bare form
    bare = "5e6f7a8b-0000-4e1f-a2b3-00000000cccc"
    (tmp_path / f"rollout-2025-08-20T10-00-00-{bare}.jsonl").write_text("\n".join(json.dumps(x) for x in [
        {"id": bare, "timestamp": "2025-08-20T10:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add a flag."}]},
        {"type": "function_call", "name": "shell", "call_id": "b1", "arguments": "{\"command\": [\"make\"]}"},
        {"type": "function_call_output", "call_id": "b1", "output": "failed in sandbox: denied"},
    ]) + "\n")

    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    assert con.execute("SELECT sum(unaccounted) FROM file_accounts").fetchone()[0] == 0
    traces = {t["trace_id"]: t for t in rows(con, "SELECT trace_id, source, task, metadata FROM traces")}
    assert set(traces) == {session, other, bare}
    assert (traces[session]["source"], traces[other]["source"]) == ("codex/shop", "codex/billing")
    assert json.loads(traces[session]["metadata"]) == {"cwd": "/home/dev/shop", "cli_version": "0.60.0",
                                                       "originator": "codex_cli_rs", "git_branch": "main"}
    assert (traces[other]["task"], traces[bare]["task"]) == ("Rename the module.", "Add a flag.")

    got = [(e["type"], e["event_id"], e["status"], e["content"], e["metadata"], e["actor"])
           for e in events_of(con, session)]
    assert got == [
        ("user_message", got[0][1], None, "Make the tests pass.", None, "human"),
        ("tool_call", "c1", None, "shell", '{"arguments":{"command":["bash","-lc","pytest -q"]}}', None),
        ("tool_result", "c1/output", "error", "2 failed", '{"exit_code":3}', None),
        ("tool_call", "c2", None, "shell", '{"arguments":{"command":["ls"]}}', None),
        ("tool_result", "c2/output", "ok", "src tests", None, None),
        ("tool_call", "c3", None, "apply_patch", '{"arguments":"*** Begin Patch"}', None),
        ("tool_result", "c3/output", "error", "no match", None, None),
        ("tool_call", "c4", None, "count", '{"arguments":{}}', None),
        ("tool_result", "c4/output", "ok", "5", None, None),
        ("unknown", got[9][1], None, None, None, None),
        ("error", got[10][1], "error", "sandbox denied", None, None),
        ("error", got[11][1], "error", "stream disconnected", None, "provider"),
        ("final_answer", got[12][1], None, "Fixed.", None, None),
        # a minute later; its copy is no second event
        ("tool_call", got[13][1], None, "web_search", '{"arguments":{"type":"search","query":"vat"}}', None),
    ]
    assert [(e["type"], e["status"], e["content"]) for e in events_of(con, bare)] == [
        ("user_message", None, "Add a flag."), ("tool_call", None, "shell"),
        ("tool_result", "error", "failed in sandbox: denied")]
