"""Secrets under sensitive key names, in the structured fields of every format, never reach a byte of the
database, a report or a log; and the audit fails closed per trace, not per night.

Each format gets one clean trace and traces that carry a made-up secret only in a structured field:
an object key, an OTLP attribute, a header map or list, tool arguments written as a JSON string, a stream
payload, an environment dump, a shell command. The values match no vendor key pattern, so only the key
says they are secrets.
"""

import json
from pathlib import Path

import pytest

from conftest import rows, stage, write_jsonl
from lessonweaver.cli import main


def secret(fmt: str, n: int) -> str:
    return f"hunter2-Prod-7741-{fmt}{n}"


def lessonweaver_records() -> list[dict]:
    def trace(tid: str, meta: dict | None = None, event_meta: dict | None = None, content: str = "ok") -> dict:
        return {"trace_id": tid, "source": "ops-agent", "task": "Restart the billing worker", "outcome": "success",
                "metadata": meta or {},
                "events": [{"id": "e1", "type": "tool_call", "content": content, "status": "success",
                            "metadata": event_meta or {}},
                           {"id": "e2", "type": "human_correction", "content": "Drain the queue first."}]}
    return [
        trace("lw-clean"),
        trace("lw-meta", meta={"db_password": secret("lw", 1)}),
        trace("lw-header", event_meta={"headers": {"Authorization": "Bearer " + secret("lw", 2)}}),
        trace("lw-args", event_meta={"arguments": json.dumps({"apiKey": secret("lw", 3)})}),
        trace("lw-env", content="export OPENAI_API_KEY=" + secret("lw", 4) + " && ./restart.sh"),
        trace("lw-flag", content="psql --password " + secret("lw", 5) + " -c 'select 1'"),
    ]


def traceevent_records() -> list[dict]:
    def run(rid: str, payload: dict) -> list[dict]:
        meta = {"run_id": rid}
        return [
            {"event_id": f"{rid}-1", "timestamp": "2026-03-02T09:00:00+00:00", "event_type": "run_start",
             "payload": {"architecture": "single_agent", "task_prompt": "Find invoice INV-22"}, "metadata": meta},
            {"event_id": f"{rid}-2", "timestamp": "2026-03-02T09:00:01+00:00", "event_type": "tool_call",
             "payload": {"tool_name": "fetch_invoice", "tool_call_id": "tc-1", **payload}, "metadata": meta},
            {"event_id": f"{rid}-3", "timestamp": "2026-03-02T09:00:02+00:00", "event_type": "run_end",
             "payload": {"final_output": "Done."}, "metadata": meta},
        ]
    return (run("te-clean", {"arguments": {"invoice_id": "INV-22"}})
            + run("te-args", {"arguments": {"invoice_id": "INV-22", "password": secret("te", 1)}})
            + run("te-headers", {"arguments": {"headers": [{"name": "X-Api-Key", "value": secret("te", 2)}]}}))


def stream_records() -> list[dict]:
    def task(tid: str, params: dict) -> list[dict]:
        return [
            {"type": "trace_event", "event_id": f"{tid}-1", "event_type": "user_message", "task_id": tid,
             "timestamp": 1767261600.1, "data": {"message": "Summarise the sales sheet"}},
            {"type": "trace_event", "event_id": f"{tid}-2", "event_type": "tool_execution_start", "task_id": tid,
             "timestamp": 1767261600.2, "data": {"tool_name": "open_sheet", "tool_call_id": "c1", "tool_params": params}},
            {"type": "trace_event", "event_id": f"{tid}-3", "event_type": "tool_execution_end", "task_id": tid,
             "timestamp": 1767261600.3, "data": {"tool_name": "open_sheet", "tool_call_id": "c1", "result": "ok"}},
        ]
    return (task("st-clean", {"tab": "March"}) + task("st-secret", {"tab": "March", "client_secret": secret("st", 1)})
            + task("st-tuple", {"headers": [["X-Auth-Token", secret("st", 2)]]}))


def gdev_records() -> list[dict]:
    def run(rid: str, extra: dict) -> list[dict]:
        base = {"schema_version": "gdev-agent-trace-v1", "run_id": rid, "tenant_id_hash": "tnt_h_5e0c",
                "message_id": "msg-1", "component": "app.agent", "timestamp": "2026-07-06T09:00:00Z"}
        return [base | {"span_id": "sp-01", "event_type": "webhook_received", "source": "telegram", "status": "accepted"},
                base | {"span_id": "sp-02", "parent_span_id": "sp-01", "event_type": "model_tool_loop", "status": "ok",
                        "model": "m", "prompt_version": "v1", **extra}]
    return run("gd-clean", {}) + run("gd-cookie", {"request_headers": {"Set-Cookie": "sid=" + secret("gd", 1)}})


def otlp_records() -> list[dict]:
    def attr(key: str, value: str) -> dict:
        return {"key": key, "value": {"stringValue": value}}

    def span(tid: str, attrs: list, resource: list | None = None, event_attrs: list | None = None) -> dict:
        return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", "orders-agent"), *(resource or [])]},
                                   "scopeSpans": [{"scope": {"name": "ai"}, "spans": [{
                                       "traceId": tid, "spanId": "a1b2c3d4e5f60718", "name": "ai.generateText",
                                       "startTimeUnixNano": "1767229200000000000", "endTimeUnixNano": "1767229201000000000",
                                       "attributes": [attr("gen_ai.request.model", "gpt-4o"), *attrs],
                                       "events": [{"name": "log", "timeUnixNano": "1767229200500000000",
                                                   "attributes": event_attrs or []}],
                                       "status": {"code": 1}}]}]}]}
    return [
        span("00000000000000000000000000000c1e", []),
        span("00000000000000000000000000000a01", [attr("db.password", secret("ot", 1))]),
        span("00000000000000000000000000000a02", [attr("ai.request.headers.authorization", "Bearer " + secret("ot", 2))]),
        span("00000000000000000000000000000a03", [], resource=[attr("deployment.api_key", secret("ot", 3))]),
        span("00000000000000000000000000000a04", [], event_attrs=[attr("http.request.header.cookie", "session=" + secret("ot", 4))]),
    ]


def agent_kernel_records() -> list[dict]:
    def action(aid: str, args: dict, correction: dict | None = None) -> dict:
        return {"action_id": aid, "capability_id": "storage.rotate_backups", "principal_id": "ops-agent-2",
                "token_id": "tok-1", "invoked_at": "2026-03-14T09:00:00+00:00", "response_mode": "summary",
                "driver_id": "s3", "handle_id": None, "sensitivity": "NONE", "status": "succeeded",
                "event_type": "invoke", "reason_code": None, "error": None, "args": args,
                "result_summary": {"fact_count": 1, "row_count": 0, "warning_count": 0, "has_handle": False},
                "correction": correction}
    audit = {"seq": 0, "prev_hash": "0" * 64, "record_hash": "1a06",
             "trace": action("ak-audit", {"bucket": "b", "headers": {"X-Amz-Security-Token": secret("ak", 2)}})}
    return [action("ak-clean", {"bucket": "nightly"}), action("ak-args", {"bucket": "b", "access_key": secret("ak", 1)}),
            audit, action("ak-note", {"bucket": "b"}, {"corrected_by": "ops", "note": "use --password " + secret("ak", 3)})]


def chat_records() -> list[dict]:
    def conversation(cid: str, arguments: dict, tool_use_input: dict) -> dict:
        return {"id": cid, "messages": [
            {"role": "user", "content": "Reset the staging database."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "db_reset", "arguments": json.dumps(arguments)}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "notify", "input": tool_use_input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "sent"}]}]}
    return [conversation("ch-clean", {"env": "staging"}, {"channel": "ops"}),
            conversation("ch-args", {"env": "staging", "password": secret("ch", 1)}, {"channel": "ops"}),
            conversation("ch-input", {"env": "staging"}, {"channel": "ops", "webhook_token": secret("ch", 2)})]


def claude_code_records(session: str, command: str) -> list[dict]:
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/app", "sessionId": session, "version": "2.1.30"}
    return [
        {**base, "type": "user", "uuid": f"{session}-1", "parentUuid": None, "timestamp": "2026-02-10T09:00:00Z",
         "message": {"role": "user", "content": "Restart the worker."}},
        {**base, "type": "assistant", "uuid": f"{session}-2", "parentUuid": f"{session}-1", "timestamp": "2026-02-10T09:00:05Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "m",
                     "content": [{"type": "tool_use", "id": f"toolu_{session}", "name": "Bash", "input": {"command": command}}]}},
        {**base, "type": "user", "uuid": f"{session}-3", "parentUuid": f"{session}-2", "timestamp": "2026-02-10T09:00:09Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{session}", "content": "ok"}]}},
    ]


def codex_records(session: str, arguments: dict) -> list[dict]:
    return [
        {"timestamp": "2026-02-11T14:00:00Z", "type": "session_meta", "payload": {"id": session, "cwd": "/home/dev/app", "cli_version": "0.58.0"}},
        {"timestamp": "2026-02-11T14:00:01Z", "type": "event_msg", "payload": {"type": "user_message", "message": "Deploy it."}},
        {"timestamp": "2026-02-11T14:00:02Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": json.dumps(arguments), "call_id": "call_1"}},
        {"timestamp": "2026-02-11T14:00:03Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "call_1", "output": "Exit code: 0\nOutput:\nok"}},
    ]


# Session formats keep a trace per file: each planted session is a file of its own.
SESSION_FILES = {
    "claude_code": [("cc-clean.jsonl", claude_code_records("cc-clean", "systemctl restart worker")),
                    ("cc-env.jsonl", claude_code_records("cc-env", f"export OPENAI_API_KEY={secret('cc', 1)} && ./run")),
                    ("cc-flag.jsonl", claude_code_records("cc-flag", f"mysql --password {secret('cc', 2)} -e 'select 1'"))],
    "codex": [("cx-clean.jsonl", codex_records("cx-clean", {"command": ["bash", "-lc", "make deploy"]})),
              ("cx-args.jsonl", codex_records("cx-args", {"command": ["bash", "-lc", "make deploy"],
                                                          "env": {"DEPLOY_TOKEN": secret("cx", 1)}}))],
}


FORMATS = {
    "lessonweaver": (lessonweaver_records, "lw-clean"),
    "traceevent": (traceevent_records, "te-clean"),
    "stream": (stream_records, "st-clean"),
    "gdev": (gdev_records, "gd-clean"),
    "otlp": (otlp_records, "00000000000000000000000000000c1e"),
    "agent_kernel": (agent_kernel_records, "ak-clean"),
    "chat": (chat_records, "ch-clean"),
}


def planted_values() -> list[str]:
    return [secret(fmt, n) for fmt in ("lw", "te", "st", "gd", "ot", "ak", "ch", "cc", "cx") for n in range(1, 6)]


@pytest.mark.parametrize("fmt", SESSION_FILES)
def test_a_secret_in_a_session_quarantines_the_session(fmt: str, tmp_path: Path):
    for name, records in SESSION_FILES[fmt]:
        write_jsonl(tmp_path / name, records)
    con = stage([tmp_path])
    assert rows(con, "SELECT reason FROM rejects") == []
    assert {r["format"] for r in rows(con, "SELECT format FROM traces")} == {fmt}
    clean = SESSION_FILES[fmt][0][0].removesuffix(".jsonl")
    assert [r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces")] == [clean]
    reasons = [r["reason"] for r in rows(con, "SELECT reason FROM quarantine")]
    assert len(reasons) == len(SESSION_FILES[fmt]) - 1 and all(r.startswith("secret:") for r in reasons), reasons


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_secret_under_a_sensitive_key_quarantines_its_trace(fmt: str, tmp_path: Path):
    make, clean = FORMATS[fmt]
    path = write_jsonl(tmp_path / f"{fmt}.jsonl", make())
    con = stage([path])
    assert rows(con, "SELECT reason FROM rejects") == []
    assert {r["format"] for r in rows(con, "SELECT format FROM traces")} == {fmt}
    assert [r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces")] == [clean]
    reasons = [r["reason"] for r in rows(con, "SELECT reason FROM quarantine")]
    assert reasons and all(r.startswith("secret:") for r in reasons), reasons


def test_no_planted_value_reaches_the_database_a_report_or_a_log(prefect_server, tmp_path: Path, capfd):
    folder = tmp_path / "in"
    folder.mkdir()
    for fmt, (make, _) in FORMATS.items():
        write_jsonl(folder / f"{fmt}.jsonl", make())
    for fmt, files in SESSION_FILES.items():
        for name, records in files:
            write_jsonl(folder / name, records)
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    assert main(["run", str(folder), "--db", str(db), "--out", str(out)]) == 0
    printed = capfd.readouterr()
    assert "completed" in printed.out and "secret:" in printed.out
    values = planted_values()
    for f in [*out.iterdir(), *tmp_path.glob("lw.duckdb*")]:
        data = f.read_bytes()
        assert [v for v in values if v.encode() in data] == [], f.name
    assert [v for v in values if v in printed.out + printed.err] == []
    assert main(["audit", "--db", str(db), "--out", str(out)]) == 0


def test_the_staged_audit_quarantines_what_only_adapting_reveals(prefect_server, tmp_path: Path, capfd):
    """A token written with a JSON escape (`ghp\\u005f…`) is not seen in the raw record; the adapter
    decodes it, and the audit of the batch's output quarantines that trace alone before anything is
    written. The night publishes its reports and exits 0."""
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    escaped = json.dumps(token).replace("_", "\\u005f")
    good = lessonweaver_records()[0]
    hidden = {**good, "trace_id": "lw-escaped"}
    lines = [json.dumps(good), json.dumps(hidden).replace('"Drain the queue first."',
                                                         '"Use ' + escaped[1:-1] + ' to push."')]
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "t.jsonl").write_text("\n".join(lines) + "\n")
    assert token.encode() not in (folder / "t.jsonl").read_bytes()
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    assert main(["run", str(folder), "--db", str(db), "--out", str(out)]) == 0
    printed = capfd.readouterr().out
    assert "audit:secret:github_token" in printed and "kept 1 of them out" in printed
    assert (out / "lessons.md").exists()
    for f in [*out.iterdir(), *tmp_path.glob("lw.duckdb*")]:
        assert token.encode() not in f.read_bytes(), f.name
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT trace_id, reason FROM quarantine").fetchall() == [("lw-escaped", "audit:secret:github_token")]
    assert con.execute("SELECT records, loaded, quarantined FROM ingested_files").fetchall() == [(2, 1, 1)]
    con.close()


def test_a_report_finding_quarantines_its_trace_and_the_reports_are_rendered_again(prefect_server, tmp_path: Path, capfd):
    """A template of the user's makes something sensitive out of harmless evidence (it upper-cases a
    string into the shape of an AWS key). The audit of the rendered reports finds it, the trace it came
    from is quarantined after the load (its rows removed, its record counted as quarantined), and the
    reports are rendered again without it and published: the run completes."""
    shaped = "akia2bcd3efg4hij5klm"  # lower case: no key; upper case: the shape of an AWS access key
    records = lessonweaver_records()[:1]
    records.append({**records[0], "trace_id": "lw-shaped", "task": "Rotate the keys",
                    "events": [{"id": "e1", "type": "human_correction", "content": f"Rotate {shaped} first."}]})
    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "t.jsonl", records)
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "shout.txt.j2").write_text("{% for l in lessons %}{{ l.evidence | upper }}\n{% endfor %}")
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    assert main(["run", str(folder), "--db", str(db), "--out", str(out), "--templates", str(templates)]) == 0
    printed = capfd.readouterr()
    assert "audit:secret:aws_access_key" in printed.out
    assert shaped.upper() not in (out / "shout.txt").read_text()
    assert "DRAIN THE QUEUE FIRST." in (out / "shout.txt").read_text()
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT trace_id, reason FROM quarantine").fetchall() == [
            ("lw-shaped", "audit:secret:aws_access_key")]
        assert con.execute("SELECT count(*) FROM detections WHERE trace_id = 'lw-shaped'").fetchone()[0] == 0
        assert con.execute("SELECT records, loaded, quarantined FROM ingested_files").fetchall() == [(2, 1, 1)]
        assert con.execute("SELECT status, traces_loaded, traces_quarantined, records_loaded, records_quarantined "
                           "FROM runs").fetchall() == [("completed", 1, 1, 1, 1)]
        assert all("lw-shaped" not in ids for (ids,) in con.execute("SELECT example_trace_ids FROM lessons").fetchall())
    finally:
        con.close()
