"""Secrets under sensitive key names, in the structured fields of every format, never reach a byte of the
database, a report or a log; and the audit fails closed per trace, not per night.

Each format gets one clean trace and traces that carry a made-up secret only in a structured field:
an object key, an OTLP attribute, a header map or list, tool arguments written as a JSON string, a stream
payload, an environment dump, a shell command. The values match no vendor key pattern, so only the key
says they are secrets.
"""

import json
import re
from pathlib import Path

import pytest

from conftest import leaks, rows, stage, write_jsonl
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


def kept_or_held(con, clean: str, held: int, mode: str) -> None:
    """With secrets quarantined, only the clean trace is stored and the others are held for a secret; with
    secrets redacted, every trace is stored, each but the clean one marked with the kinds redacted, and no
    planted value is left in any stored text."""
    reasons = [r["reason"] for r in rows(con, "SELECT reason FROM quarantine")]
    stored = {r["trace_id"]: r["redacted"] for r in rows(con, "SELECT trace_id, redacted FROM traces")}
    if mode == "quarantine":
        assert list(stored) == [clean]
        assert len(reasons) == held and all(r.startswith("secret:") for r in reasons), reasons
        return
    assert reasons == [] and len(stored) == held + 1 and stored[clean] is None
    assert all(kinds for t, kinds in stored.items() if t != clean), stored
    texts = " ".join(r[0] or "" for r in con.execute(
        "SELECT concat_ws(' ', content, CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)) FROM events "
        "UNION ALL SELECT concat_ws(' ', CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)) FROM traces").fetchall())
    assert "[SECRET:" in texts and [v for v in planted_values() if v in texts] == []


@pytest.mark.parametrize("mode", ["redact", "quarantine"])
@pytest.mark.parametrize("fmt", SESSION_FILES)
def test_a_secret_in_a_session_is_redacted_or_quarantines_the_session(fmt: str, mode: str, tmp_path: Path):
    for name, records in SESSION_FILES[fmt]:
        write_jsonl(tmp_path / name, records)
    con = stage([tmp_path], secrets=mode)
    assert rows(con, "SELECT reason FROM rejects") == []
    assert {r["format"] for r in rows(con, "SELECT format FROM traces")} == {fmt}
    kept_or_held(con, SESSION_FILES[fmt][0][0].removesuffix(".jsonl"), len(SESSION_FILES[fmt]) - 1, mode)


@pytest.mark.parametrize("mode", ["redact", "quarantine"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_secret_under_a_sensitive_key_is_redacted_or_quarantines_its_trace(fmt: str, mode: str, tmp_path: Path):
    make, clean = FORMATS[fmt]
    records = make()
    path = write_jsonl(tmp_path / f"{fmt}.jsonl", records)
    con = stage([path], secrets=mode)
    assert rows(con, "SELECT reason FROM rejects") == []
    assert {r["format"] for r in rows(con, "SELECT format FROM traces")} == {fmt}
    traces = con.execute("SELECT count(*) FROM traces").fetchone()[0] + con.execute(
        "SELECT count(*) FROM quarantine").fetchone()[0]
    kept_or_held(con, clean, traces - 1, mode)


@pytest.mark.parametrize("mode", ["redact", "quarantine"])
def test_no_planted_value_reaches_the_database_a_report_or_a_log(prefect_server, tmp_path: Path, capfd, mode: str):
    folder = tmp_path / "in"
    folder.mkdir()
    for fmt, (make, _) in FORMATS.items():
        write_jsonl(folder / f"{fmt}.jsonl", make())
    for fmt, files in SESSION_FILES.items():
        for name, records in files:
            write_jsonl(folder / name, records)
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    assert main(["run", str(folder), "--db", str(db), "--out", str(out), "--secrets", mode]) == 0
    printed = capfd.readouterr()
    assert "completed" in printed.out and "secret:" in printed.out
    assert ("redacted" in printed.out) == (mode == "redact")
    values = planted_values()
    # the database, its event files (Parquet, read row by row) and the reports
    assert [(v, leaks(db, out, v)) for v in values if leaks(db, out, v)] == []
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


KEY = "sk-proj-" + "Vb7Qm2Xc9Lp4Rt8Wn3Ky6Hd1Fs5Gj0Za"  # made up, in the shape of an OpenAI project key


def test_one_secret_repeated_across_events_and_sessions_is_one_marker(tmp_path: Path):
    """The person pastes a key into a Claude Code session, the agent passes it in nested tool arguments and
    the tool prints it back; a Codex session passes it inside JSON-encoded arguments. Every mention becomes
    the same marker, in both sessions; the person's paste is theirs, the agent's call is a finding."""
    cc = claude_code_records("cc-repeat", "curl -s https://api.example.org/v1/models")
    cc[0]["message"]["content"] = f"Use my key {KEY} for the model list."
    cc[1]["message"]["content"][0]["input"] = {"command": "python fetch.py", "config": {"auth": {"headers": {"X-Key": KEY}}}}
    cc[2]["message"]["content"][0]["content"] = f"loaded key {KEY}\n200 OK"
    cx = codex_records("cx-repeat", {"command": ["bash", "-lc", "python fetch.py"], "env": {"MODEL_KEY": KEY}})
    write_jsonl(tmp_path / "cc-repeat.jsonl", cc)
    write_jsonl(tmp_path / "cx-repeat.jsonl", cx)
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM quarantine") == []
    texts = {r["trace_id"]: r["t"] for r in rows(
        con, "SELECT trace_id, string_agg(concat_ws(' ', content, CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)), ' ') AS t "
             "FROM events GROUP BY trace_id")}
    markers = {t: re.findall(r"\[SECRET:[a-z_]+#[0-9a-f]{8}\]", text) for t, text in texts.items()}
    assert len(markers["cc-repeat"]) >= 3 and len(markers["cx-repeat"]) >= 1
    assert {m for ms in markers.values() for m in ms} == {markers["cc-repeat"][0]}
    assert markers["cc-repeat"][0].startswith("[SECRET:openai_key#")
    assert not any(KEY in t or KEY[8:] in t for t in texts.values())
    found = rows(con, "SELECT trace_id, event_id, evidence FROM detections WHERE detector = 'secret_exposed' ORDER BY ALL")
    assert {f["trace_id"] for f in found} == {"cc-repeat", "cx-repeat"}
    assert all(f["event_id"] != "cc-repeat-1" and KEY not in f["evidence"] for f in found)


def test_a_tagged_trace_stays_quarantined_whatever_it_holds(tmp_path: Path):
    records = lessonweaver_records()[:2]
    records[1] = {**records[1], "trace_id": "lw-tagged", "metadata": {"sensitivity": "restricted", "db_password": secret("lw", 1)}}
    con = stage([write_jsonl(tmp_path / "t.jsonl", records)])
    assert rows(con, "SELECT trace_id, reason FROM quarantine") == [{"trace_id": "lw-tagged", "reason": "tag:sensitivity"}]
    assert [r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces")] == ["lw-clean"]


def test_opaque_blobs_are_neither_scanned_nor_stored(tmp_path: Path):
    """Codex keeps a model's reasoning as `encrypted_content` (base64 that may hold `sk-` and forty letters by
    chance) and sessions carry images as base64: not text. They are set aside before the scan."""
    blob = "gAAAAA" + "sk-" + "Qw3rTy9UiOp4AsDfGhJkLzXcVbNm1234567890" * 8
    image = "iVBORw0KGgo" + "A1b2C3d4E5f6G7h8" * 40
    cx = codex_records("cx-blob", {"command": ["bash", "-lc", "make"]})
    cx.insert(2, {"timestamp": "2026-02-11T14:00:01Z", "type": "response_item",
                  "payload": {"type": "reasoning", "summary": [], "encrypted_content": blob}})
    cc = claude_code_records("cc-image", "ls")
    cc[0]["message"]["content"] = [{"type": "text", "text": "What is on this screenshot?"},
                                   {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}]
    write_jsonl(tmp_path / "cx-blob.jsonl", cx)
    write_jsonl(tmp_path / "cc-image.jsonl", cc)
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM quarantine") == [] and rows(con, "SELECT * FROM record_findings") == []
    assert rows(con, "SELECT trace_id FROM traces WHERE redacted IS NOT NULL") == []
    stored = " ".join(r[0] or "" for r in con.execute(
        "SELECT concat_ws(' ', content, CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)) FROM events").fetchall())
    stored += " ".join(r[0] for r in con.execute("SELECT CAST(doc AS VARCHAR) FROM records").fetchall())
    assert blob[:40] not in stored and image[:40] not in stored and "[opaque]" in stored


def test_a_long_keyed_value_is_redacted_whole(tmp_path: Path):
    """A cookie or token longer than any fixed bound (here 600 characters) under a sensitive key is one
    marker: no tail of it stays behind the marker."""
    tail = "".join(f"{n:03d}Zq" for n in range(120))  # 600 characters, no run, no stop word
    records = claude_code_records("cc-long", "curl -s https://shop.example.org/cart")
    records[2]["message"]["content"][0]["content"] = f'{{"set-cookie": "session_id={tail}; Path=/"}}\n200 OK'
    write_jsonl(tmp_path / "cc-long.jsonl", records)
    con = stage([tmp_path])
    text = " ".join(r[0] or "" for r in con.execute("SELECT content FROM events").fetchall())
    assert rows(con, "SELECT * FROM quarantine") == [] and "[SECRET:" in text
    assert tail[-40:] not in text and tail[:40] not in text
