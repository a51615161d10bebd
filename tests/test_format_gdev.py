"""gdev-agent-trace-v1 (`gdev`): our own fixture traces, and traces built from gdev-agent's harness regression set.

The harness set (../shared/samples/gdev-agent) is not traces: each eval case lists the events its route must
emit. The last tests build one synthetic trace per case from that list and check it loads cleanly.
Runs split over files, files delivered twice and conflicting repeats are built from our fixtures in a
temporary folder.
"""

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, SHARED, read_jsonl, rows, stage, write_traces

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "gdev"
HARNESS = SHARED / "samples" / "gdev-agent" / "harness_regression.jsonl"


@pytest.fixture(scope="module")
def con():
    return stage([FIXTURES])


def test_every_record_is_loaded_or_rejected(con):
    assert {r["format"] for r in rows(con, "SELECT DISTINCT format FROM traces")} == {"gdev"}
    unaccounted = rows(con, """SELECT file_id, record FROM records
                               ANTI JOIN record_traces USING (file_id, record)
                               ANTI JOIN rejects USING (file_id, record)""")
    assert unaccounted == []
    rejects = rows(con, """SELECT f.path, j.line, j.reason FROM rejects j JOIN files f USING (file_id)
                           ORDER BY j.line""")
    assert [(Path(r["path"]).name, r["line"], r["reason"]) for r in rejects] == [
        ("bad_lines.jsonl", 2, "missing required field 'span_id'"),
        ("bad_lines.jsonl", 4, "field 'event_type' must be a string"),
        ("bad_lines.jsonl", 5, "invalid JSON (unexpected end of input)"),
    ]
    # line 6 repeats line 1 exactly: a redelivery, linked to its run
    assert rows(con, "SELECT r.line, k.trace_id FROM record_links k JOIN records r USING (file_id, record)") == [
        {"line": 6, "trace_id": "req_bad_01"}]
    assert rows(con, "SELECT * FROM quarantine") == []


def test_traces(con):
    found = {r["trace_id"]: (r["source"], r["task"], r["outcome"])
             for r in rows(con, "SELECT trace_id, source, task, outcome FROM traces")}
    assert found == {
        "req_auto_01": ("gdev-agent", "auto_execute", "success"),
        "req_review_01": ("gdev-agent", "human_review", "corrected_by_human"),
        "req_review_02": ("gdev-agent", "human_review", "success"),
        "req_review_03": ("gdev-agent", "human_review", "corrected_by_human"),
        "eval_gdpr_01": ("gdev-agent/eval", "human_review", "success"),
        "eval_faq_02": ("gdev-agent/eval", "auto_execute", "success"),
        "req_retry_01": ("gdev-agent", "auto_execute", "success"),
        "req_retry_02": ("gdev-agent", "auto_execute", "success"),
        "req_dead_01": ("gdev-agent", "auto_execute", "failed"),
        "req_gap_01": ("gdev-agent/eval", "human_review", "success"),
        "req_bad_01": ("gdev-agent", "support triage", "success"),
    }
    span = rows(con, "SELECT started_at, ended_at FROM traces WHERE trace_id = 'req_review_01'")[0]
    assert (str(span["started_at"]), str(span["ended_at"])) == ("2026-07-03 09:00:00", "2026-07-03 09:41:30")


def test_tenant_comes_from_the_tenant_hash(con):
    tenant = {r["trace_id"]: r["tenant"] for r in rows(con, "SELECT trace_id, tenant FROM traces")}
    assert tenant["req_gap_01"] is None
    assert tenant["req_auto_01"] == tenant["req_retry_01"] == tenant["req_retry_02"] is not None
    assert tenant["req_review_01"] == tenant["req_review_02"] != tenant["req_auto_01"]
    assert not any(t and t.startswith("tnt_h_") for t in tenant.values()), "the screen re-hashes tenant ids"


def test_event_types_order_and_content(con):
    auto = rows(con, "SELECT raw_type, type, tool_name FROM events WHERE trace_id = 'req_auto_01' ORDER BY seq")
    # the dedup line comes after the input guard in the file but happened before it (+02:00 offset)
    assert [(r["raw_type"], r["type"], r["tool_name"]) for r in auto] == [
        ("webhook_received", "user_message", None),
        ("dedup_checked", "workflow_step", None),
        ("input_guard", "workflow_step", None),
        ("model_tool_loop", "model_call", None),
        ("policy_decision", "workflow_step", None),
        ("output_guard", "workflow_step", None),
        ("tool_call", "tool_call", "faq_lookup"),
        ("action_executed", "tool_call", "create_ticket_and_reply"),
    ]
    typed = {(r["trace_id"], r["event_id"]): r for r in rows(
        con, "SELECT trace_id, event_id, type, status, success, tool_name, parent_id, content FROM events")}
    rejected = typed["req_review_01", "sp-08"]
    assert (rejected["type"], rejected["parent_id"]) == ("human_correction", "sp-07")
    assert rejected["content"].startswith("approval rejected: Duplicate-charge refunds go to the billing queue")
    assert typed["req_review_02", "sp-08"]["type"] == "workflow_step"  # approved, no corrections
    assert typed["req_review_03", "sp-08"]["content"].startswith("approved with corrections: Set urgency")
    mismatch = typed["eval_gdpr_01", "sp-08"]
    assert (mismatch["type"], mismatch["status"], mismatch["success"]) == ("evaluation_result", "failed", False)
    assert typed["eval_faq_02", "sp-08"]["status"] == "passed"
    # an error under a tool span carries that tool; an action after a logged call of its tool is its result
    assert (typed["req_retry_01", "sp-08"]["type"], typed["req_retry_01", "sp-08"]["tool_name"]) == (
        "error", "create_ticket_and_reply")
    assert typed["req_retry_01", "sp-10"]["type"] == "tool_result"
    assert typed["req_retry_02", "sp-07"]["content"] == "send_reply failed: messenger_503"


def test_extra_keeps_what_has_no_column(con):
    extra = {(r["trace_id"], r["event_id"]): json.loads(r["extra"]) for r in rows(
        con, "SELECT trace_id, event_id, extra FROM events")}
    policy = extra["req_auto_01", "sp-05"]
    assert policy["route"] == "auto_execute" and policy["risk_level"] == "low"
    assert not {"run_id", "span_id", "parent_span_id", "event_type", "timestamp", "status"} & policy.keys()
    assert extra["req_review_01", "sp-08"]["reviewer"] == "reviewer_ops_a"
    # the status column of an eval holds the verdict; the status as written stays in extra
    assert extra["eval_gdpr_01", "sp-08"]["status"] == "completed"


def test_detections(con):
    found = {(r["detector"], r["trace_id"], r["event_id"])
             for r in rows(con, "SELECT detector, trace_id, event_id FROM known_detections")}
    assert found == {
        ("human_correction", "req_review_01", "sp-08"),
        ("human_correction", "req_review_03", "sp-08"),
        ("failed_evaluation", "eval_gdpr_01", "sp-08"),
        ("failed_evaluation", "req_gap_01", "sp-06"),
        ("retry", "req_retry_01", "sp-08"),
        ("retry", "req_retry_02", "sp-07"),
        ("unrecovered_error", "req_dead_01", "sp-08"),
        ("incomplete_trace", "req_gap_01", "sp-03"),
        ("incomplete_trace", "req_gap_01", "sp-04"),
        ("incomplete_trace", "req_gap_01", "sp-05"),
        ("incomplete_trace", "req_gap_01", "sp-06"),
    }
    evidence = {(r["detector"], r["trace_id"]): r for r in rows(
        con, "SELECT detector, trace_id, evidence, severity FROM detections")}
    silent = evidence["failed_evaluation", "eval_gdpr_01"]
    assert silent["severity"] == "critical"
    assert "harness-policy-gdpr-007: expected route human_review, actual route auto_execute" in silent["evidence"]
    assert evidence["retry", "req_retry_01"]["evidence"].startswith("create_ticket_and_reply: ticketing_timeout")
    gate = sorted(r["evidence"].split(":")[0] for r in rows(
        con, "SELECT evidence FROM detections WHERE detector = 'incomplete_trace'"))
    # the write and tenant rules both point at the action: five rules, four events
    assert len(gate) == 5
    assert gate == ["eval failure", "human review", "model/tool event", "tenant-sensitive route", "write path"]


def test_a_run_split_across_two_files_is_one_trace(tmp_path):
    run = [e for e in read_jsonl(FIXTURES / "tool_retry.jsonl") if e["run_id"] == "req_retry_01"]
    # alternate lines in each file: the failed call and its error, the retry and its result are split up
    write_traces(tmp_path, "a.jsonl", run[0::2])
    write_traces(tmp_path, "b.jsonl", run[1::2])
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    [trace] = rows(con, "SELECT trace_id, outcome, file, line, started_at, ended_at FROM traces")
    assert (trace["trace_id"], trace["outcome"], trace["line"]) == ("req_retry_01", "success", 1)
    assert trace["file"].endswith("a.jsonl")
    assert (str(trace["started_at"]), str(trace["ended_at"])) == ("2026-07-06 09:00:00", "2026-07-06 09:00:15")
    evs = rows(con, "SELECT seq, event_id, type, tool_name FROM events ORDER BY seq")
    assert [(e["seq"], e["event_id"]) for e in evs] == [(n, f"sp-{n:02d}") for n in range(1, 11)]
    # parent spans are found in the other file: the error carries its call's tool, the action is a result
    assert (evs[7]["type"], evs[7]["tool_name"]) == ("error", "create_ticket_and_reply")
    assert evs[9]["type"] == "tool_result"
    assert [(d["detector"], d["event_id"]) for d in rows(con, "SELECT * FROM known_detections")] == [("retry", "sp-08")]


def test_the_same_file_twice_is_one_trace_and_every_record_loads(tmp_path):
    shutil.copy(FIXTURES / "auto_execute.jsonl", tmp_path / "run.jsonl")
    shutil.copy(FIXTURES / "auto_execute.jsonl", tmp_path / "run-copy.jsonl")
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    assert [t["trace_id"] for t in rows(con, "SELECT trace_id FROM traces")] == ["req_auto_01"]
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": 8}]
    mapped = rows(con, "SELECT rt.trace_id FROM records r LEFT JOIN record_traces rt USING (file_id, record)")
    assert len(mapped) == 16 and {m["trace_id"] for m in mapped} == {"req_auto_01"}
    # the file read first gives the events; every line of the other is linked
    assert rows(con, """SELECT count(DISTINCT e.file_id) AS event_files, count(DISTINCT k.file_id) AS link_files,
                               count(DISTINCT k.record) AS links, bool_or(e.file_id = k.file_id) AS shared
                        FROM events e, record_links k""") == [
        {"event_files": 1, "link_files": 1, "links": 8, "shared": False}]


def test_a_conflicting_repeat_is_rejected(tmp_path):
    run = read_jsonl(FIXTURES / "auto_execute.jsonl")
    first = write_traces(tmp_path, "a.jsonl", run)
    changed = dict(run[6], permission_decision="denied")  # sp-07 again, with another decision
    second = write_traces(tmp_path, "b.jsonl", [run[0], changed])
    con = stage([tmp_path])
    assert rows(con, "SELECT f.path, j.line, j.reason FROM rejects j JOIN files f USING (file_id)") == [
        {"path": str(second), "line": 2,
         "reason": f"conflicting duplicate of event sp-07 of trace req_auto_01 (first at {first} line 7)"}]
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": 8}]
    assert "permission allowed" in rows(con, "SELECT content FROM events WHERE event_id = 'sp-07'")[0]["content"]
    assert rows(con, "SELECT line FROM record_links JOIN records USING (file_id, record)") == [{"line": 1}]


# Minimum fields per event type, as the spec's table lists them, on top of the stable fields.
def _minimum(event_type: str, case: dict) -> dict:
    route = case["expected_route"]
    return {
        "webhook_received": {"source": "harness"},
        "dedup_checked": {"status": "miss"},
        "input_guard": ({"status": "blocked", "blocked_reason": case["expected_guard_behavior"]}
                        if route == "input_rejected" else {"status": "allowed"}),
        "model_tool_loop": {"model": "demo-model", "prompt_version": "triage-v1", "tool_turns": 1},
        "tool_call": {"tool_name": "faq_lookup", "permission_decision": "allowed", "tool_input_ref": "ref:in-1"},
        # route: the decision the eval case checks, so the trace's task can name it
        "policy_decision": {"risk_level": case["risk_expectation"], "confidence": 0.5,
                            "risky": route != "auto_execute", "risk_reason": case["expected_guard_behavior"],
                            "route": route, "approval_state": "pending" if route == "human_review" else "not_required"},
        "output_guard": {"status": "block" if route == "output_guarded" else "allow", "redaction_events": []},
        "approval_pending": {"pending_id": "pend-1", "expires_at": "2026-08-02T00:00:00Z",
                             "reviewer_target": "support_agent", "approval_state": "pending"},
        "approval_decision": {"status": "approved", "reviewer": "reviewer-1", "corrections": []},
        "action_executed": {"tool_name": "create_ticket_and_reply", "observation_ref": "audit:1"},
        "eval_case_result": {"case_id": case["id"], "expected_route": route, "actual_route": route,
                             "threshold_impact": "none"},
        "error": {"error_code": case["expected_guard_behavior"], "fallback_route": route},
    }[event_type]


def _synthetic_trace(case: dict) -> list[dict]:
    events = []
    for n, event_type in enumerate(case["expected_trace_events"], start=1):
        event = {"schema_version": "gdev-agent-trace-v1", "run_id": f"run-{case['id']}", "span_id": f"span-{n}",
                 "parent_span_id": None if n == 1 else "span-1", "timestamp": f"2026-08-01T12:00:{n:02d}Z",
                 "tenant_id_hash": "tenant-hash-1", "message_id": f"msg-{case['id']}", "event_type": event_type,
                 "component": "app.agent", "cost_usd": 0.0, "latency_ms": 1.0}
        event.update(_minimum(event_type, case))
        events.append(event)
    return events


def _harness_cases() -> list[dict]:
    return [json.loads(line) for line in HARNESS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.skipif(not HARNESS.is_file(), reason="shared gdev-agent samples not present")
def test_harness_regression_routes_load(tmp_path):
    cases = _harness_cases()
    path = write_traces(tmp_path, "harness_traces.jsonl", [e for c in cases for e in _synthetic_trace(c)])
    con = stage([path])
    assert rows(con, "SELECT * FROM rejects") == []
    traces = {r["trace_id"]: r for r in rows(con, "SELECT trace_id, format, task, outcome FROM traces")}
    assert len(traces) == len(cases)
    for case in cases:
        trace = traces[f"run-{case['id']}"]
        events = rows(con, "SELECT raw_type, type FROM events WHERE trace_id = ? ORDER BY seq", [trace["trace_id"]])
        assert [e["raw_type"] for e in events] == case["expected_trace_events"], case["id"]
        assert "unknown" not in {e["type"] for e in events}
        assert trace["format"] == "gdev"
        has_policy = "policy_decision" in case["expected_trace_events"]
        assert trace["task"] == (case["expected_route"] if has_policy else "support triage"), case["id"]
        pending = "approval_pending" in case["expected_trace_events"]
        assert trace["outcome"] == ("pending" if pending else "success"), case["id"]
    found = {(r["detector"], r["trace_id"]) for r in rows(con, "SELECT detector, trace_id FROM known_detections")}
    # the only finding: the tenant-boundary error ends its trace, and no detector reads its fallback route
    assert found == {("unrecovered_error", "run-harness-tenant-boundary-001")}


@pytest.mark.skipif(not HARNESS.is_file(), reason="shared gdev-agent samples not present")
def test_harness_file_itself_is_not_read_as_traces():
    con = stage([HARNESS])
    assert rows(con, "SELECT * FROM traces") == []
    assert "gdev" not in {r["format"] for r in rows(con, "SELECT format FROM file_formats")}


def test_each_field_is_judged_and_read_from_the_lines_one_parse(tmp_path):
    """The adapter reads a line's fields once (a typed parse: each field's own JSON text). A JSON null is as
    good as missing, a number is a usable id; corrections are read however written; a repeat that is the
    same JSON written another way is the same line."""
    def line(span: str, event_type: str = "webhook_received", **fields) -> dict:
        return {"schema_version": "gdev-agent-trace-v1", "run_id": "r-ok", "span_id": span,
                "event_type": event_type, "timestamp": "2026-01-02T03:04:05Z", **fields}

    lines = [
        line("a", run_id=None), line("b", run_id=["r"]), line("c", run_id=" "),
        line("d", span_id=None), line("e", span_id={"id": 1}), line("f", span_id=""),
        line("g", event_type=None), line("h", event_type=7), line("i", event_type="  "),
        line("j", parent_span_id=["a"]),
        line("s1", source="mail", metadata={"queue": "billing"}),
        line("s2", "approval_decision", parent_span_id="s1", decision="approved", corrections=["Set urgency", 3, " "]),
        line("s3", "approval_decision", parent_span_id="s1", decision="approved", corrections="Use the EU queue"),
        line("s4", "approval_decision", parent_span_id="s1", decision="approved", corrections={"route": "eu"}),
        line("s5", "output_guard", status="allow", redaction_events=[{"k": 1}, {"k": 2}], metadata="plain"),
        line(7, run_id=42, status=None),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n"
                    # s1 again, the same JSON with its keys spaced and ordered as another writer would
                    + json.dumps(lines[10], indent=None, separators=(" ,", " : ")) + "\n")
    con = stage([path])
    assert rows(con, "SELECT line, reason FROM rejects ORDER BY line") == [
        {"line": 1, "reason": "missing required field 'run_id'"},
        {"line": 2, "reason": "field 'run_id' must be a string"},
        {"line": 3, "reason": "field 'run_id' is empty"},
        {"line": 4, "reason": "missing required field 'span_id'"},
        {"line": 5, "reason": "field 'span_id' must be a string"},
        {"line": 6, "reason": "field 'span_id' is empty"},
        {"line": 7, "reason": "missing required field 'event_type'"},
        {"line": 8, "reason": "field 'event_type' must be a string"},
        {"line": 9, "reason": "field 'event_type' is empty"},
        {"line": 10, "reason": "field 'parent_span_id' must be a string"},
    ]
    assert rows(con, "SELECT line FROM record_links JOIN records USING (file_id, record)") == [{"line": 17}]
    found = {e["event_id"]: e for e in rows(con, "SELECT trace_id, event_id, type, content, metadata, extra FROM events")}
    assert found["s2"]["content"] == "approved with corrections: Set urgency; 3"
    assert found["s3"]["content"] == "approved with corrections: Use the EU queue"
    assert found["s4"]["content"] == 'approved with corrections: {"route":"eu"}'
    assert found["s5"]["content"] == "output guard allow, 2 redaction events"
    assert json.loads(found["s1"]["metadata"]) == {"queue": "billing"} and "metadata" not in json.loads(found["s1"]["extra"])
    assert found["s5"]["metadata"] is None and json.loads(found["s5"]["extra"])["metadata"] == "plain"
    assert found["7"]["trace_id"] == "42"


def test_a_run_complete_by_the_gate_is_finished(tmp_path):
    """The format has no finish event: a run whose events pass the spec's completeness gate ends on its write,
    and gdev-agent logs `action_executed` once the action ran, with its result reference. That line carries its
    own outcome (executed, unless an error code says otherwise), so no detector reads the run as cut off."""
    def line(n: int, event_type: str, **fields) -> dict:
        return {"schema_version": "gdev-agent-trace-v1", "run_id": "req_gate_ok", "span_id": f"g{n}",
                "parent_span_id": None if n == 1 else "g1", "timestamp": f"2026-09-04T08:15:{n:02d}Z",
                "tenant_id_hash": "tnt_h_31d0", "message_id": "msg-3120", "event_type": event_type,
                "component": "app.agent", "status": None, "model": None, "prompt_version": None, "tool_name": None,
                "tool_input_ref": None, "observation_ref": None, "permission_decision": None, "risk_level": None,
                "confidence": None, "approval_state": "not_required", "redaction_events": [], "cost_usd": 0.0,
                "latency_ms": 2.5, "error_code": None, "evidence_refs": [], **fields}

    run = [line(1, "webhook_received", source="web_form", status="accepted"),
           line(2, "dedup_checked", status="miss"),
           line(3, "input_guard", status="allowed", permission_decision="allowed"),
           line(4, "model_tool_loop", model="support-model-m", prompt_version="triage-v9", tool_turns=2,
                cost_usd=0.004, latency_ms=850.0),
           line(5, "policy_decision", risk_level="low", confidence=0.94, risky=False, route="auto_execute"),
           line(6, "output_guard", status="allow"),
           # the spec's minimum for a write: tool, result reference, cost, latency (no status)
           line(7, "action_executed", tool_name="send_reply", observation_ref="audit:reply-3120", latency_ms=64.0),
           # a write that failed says so by its error code, and stays a failure
           line(8, "action_executed", tool_name="close_ticket", error_code="ticketing_409", latency_ms=30.0)]
    con = stage([write_traces(tmp_path, "gate_ok.jsonl", run[:7])])
    assert rows(con, "SELECT * FROM rejects") == []
    assert rows(con, "SELECT outcome FROM traces") == [{"outcome": "success"}]
    assert rows(con, "SELECT detector, evidence FROM detections") == []
    assert rows(con, "SELECT type, success FROM events WHERE event_id = 'g7'") == [{"type": "tool_call", "success": True}]

    failed = stage([write_traces(tmp_path / "failed", "gate_failed.jsonl", run)])
    assert rows(failed, "SELECT event_id, success FROM events WHERE event_id IN ('g7', 'g8') ORDER BY seq") == [
        {"event_id": "g7", "success": True}, {"event_id": "g8", "success": False}]
