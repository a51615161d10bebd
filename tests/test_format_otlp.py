"""The otlp and agent_kernel adapters, through the real read, adapt, screen and detect code.

Fixtures in tests/fixtures/formats/otlp/ and agent_kernel/ are our own; the last tests run the real samples
in ../shared/samples/ when they are there. Traces split over files, files delivered twice and conflicting
repeats are built from the fixtures in a temporary folder.
"""

import copy
import json
import shutil

import pytest

from conftest import REPO, SHARED, rows, stage, write_traces

FORMATS = REPO / "tests" / "fixtures" / "formats"
OTLP = FORMATS / "otlp"
AGENT_KERNEL = FORMATS / "agent_kernel"
# The detectors the mappings are written for; others may come and go.
CORE_DETECTORS = ("human_correction", "failed_evaluation", "retry", "tool_fallback", "unrecovered_error",
                  "flagged", "outcome_label")


def events(con, trace_id: str) -> list[dict]:
    return rows(con, "SELECT * FROM events WHERE trace_id = ? ORDER BY seq", [trace_id])


def detections(con) -> set[tuple]:
    found = rows(con, "SELECT detector, trace_id, event_id, severity FROM detections WHERE list_contains(?, detector)",
                 [list(CORE_DETECTORS)])
    return {(d["detector"], d["trace_id"], d["event_id"], d["severity"]) for d in found}


def rejects(con) -> list[tuple]:
    return [(r["line"], r["reason"]) for r in rows(con, "SELECT line, reason FROM rejects ORDER BY line")]


def test_every_record_is_loaded_or_rejected():
    con = stage([OTLP, AGENT_KERNEL])
    unaccounted = rows(con, """SELECT file_id, record FROM records
                               EXCEPT SELECT file_id, record FROM record_traces
                               EXCEPT SELECT file_id, record FROM rejects""")
    assert unaccounted == []


def test_export_document_maps_spans_in_time_order():
    con = stage([OTLP / "export_pr_review.json"])
    assert rejects(con) == []
    trace_id = "5b8efff798038103d269b633813fc60c"
    [trace] = rows(con, "SELECT * FROM traces")
    assert (trace["trace_id"], trace["format"], trace["source"], trace["task"], trace["outcome"]) == (
        trace_id, "otlp", "pr-reviewer", "Review a pull request", "success")
    assert trace["tenant"] and trace["tenant"] != "acme"  # hashed by the privacy screen
    assert str(trace["started_at"]) == "2026-01-01 00:00:00" and str(trace["ended_at"]) == "2026-01-01 00:00:10"
    # resource attributes, flattened: bool, array and kvlist values become JSON
    meta = json.loads(trace["metadata"])
    assert meta["agent.sandboxed"] is True
    assert meta["agent.languages"] == ["python", "go"]
    assert meta["agent.limits"] == {"max_steps": 12, "mode": "strict"}
    assert json.loads(trace["extra"]) == {"schemaUrl": "https://opentelemetry.io/schemas/1.30.0"}

    evs = events(con, trace_id)
    # spans are listed out of order and across two scopes; events follow start (or event) time
    assert [(e["event_id"], e["type"], e["raw_type"], e["tool_name"], e["status"], e["success"]) for e in evs] == [
        ("a1", "workflow_step", "invoke_agent", None, "ok", True),
        ("b2", "model_call", "LLM", None, "unset", True),
        ("c3", "tool_call", "execute_tool", "fetch_diff", "error", False),
        ("c3/status", "error", "status:2", "fetch_diff", "error", False),
        ("d4", "tool_call", "TOOL", "local_git_diff", "ok", True),
        ("e5", "model_call", "chat", None, "unset", True),
        ("e5/events/0", "evaluation_result", "gen_ai.evaluation.result", None, "failed", False),
        ("b2/events/0", "human_correction", "human_feedback", None, None, None),
    ]
    assert [e["seq"] for e in evs] == list(range(1, 9))
    assert [e["parent_id"] for e in evs] == [None, "a1", "a1", "c3", "a1", "a1", "e5", "b2"]
    assert all(a["ts"] <= b["ts"] for a, b in zip(evs, evs[1:]))
    by_id = {e["event_id"]: e for e in evs}
    assert by_id["c3/status"]["content"] == "GitHub API returned 502"
    assert by_id["b2/events/0"]["content"].startswith("Run the test suite before approving")
    assert by_id["e5/events/0"]["content"] == (
        "test_coverage_check: fail - The approval never mentions the failing billing tests.")
    assert json.loads(by_id["e5"]["metadata"]) == {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "claude-sonnet",
        "gen_ai.request.temperature": 0.2, "gen_ai.usage.output_tokens": 256}
    extra = json.loads(by_id["c3"]["extra"])
    assert extra["status"] == {"code": 2, "message": "GitHub API returned 502"}
    assert extra["scope"] == {"name": "pr-reviewer.tracing", "version": "0.3.1"}

    assert detections(con) == {
        ("human_correction", trace_id, "b2/events/0", "high"),
        ("failed_evaluation", trace_id, "e5/events/0", "critical"),  # the run claimed success
        ("tool_fallback", trace_id, "c3/status", "medium"),
    }


def test_span_lines_make_one_trace_per_trace_id():
    con = stage([OTLP / "spans.jsonl"])
    assert rejects(con) == [(4, "missing required field 'traceId'"), (7, "invalid JSON (unexpected end of input)")]
    traces = {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces")}
    # no task attribute: the root's user input (OpenInference input.value) is the task, else the root's name
    assert {tid: (t["source"], t["task"], t["outcome"], t["line"]) for tid, t in traces.items()} == {
        "refund-7f3a": ("support-bot", "Can I get a refund for order 1182?", "success", 1),
        "deploy-91b0": ("deploy-bot", "deploy_service", "failed", 2),
    }

    refund = events(con, "refund-7f3a")
    assert [(e["event_id"], e["type"], e["tool_name"], e["success"]) for e in refund] == [
        ("r1", "workflow_step", None, True),
        ("r2", "tool_call", "lookup_order", False),
        ("r2/events/0", "error", "lookup_order", False),  # the exception event; no extra status error
        ("r3", "tool_call", "lookup_order", True),
    ]
    exception = refund[2]
    assert exception["content"] == "TimeoutError: orders-db did not answer within 5s"
    assert "stacktrace" not in exception["metadata"]
    assert json.loads(exception["extra"])["exception.stacktrace"].startswith("Traceback")

    deploy = events(con, "deploy-91b0")
    assert [(e["event_id"], e["type"], e["status"]) for e in deploy] == [
        ("s1", "workflow_step", "error"),
        ("s2", "model_call", "unset"),
        ("s3", "evaluation_result", "failed"),  # score 0.1, no label
        ("s1/status", "error", "error"),  # the root's error comes at its end, after its children
    ]
    assert deploy[3]["content"] == "Rollout aborted: health checks failing."

    assert detections(con) == {
        ("retry", "refund-7f3a", "r2/events/0", "medium"),
        ("failed_evaluation", "deploy-91b0", "s3", "high"),
        ("unrecovered_error", "deploy-91b0", "s1/status", "high"),
    }


def test_exports_as_json_lines_join_a_trace_split_over_lines():
    con = stage([OTLP / "exports.jsonl"])
    assert rejects(con) == [
        (2, "field 'resourceSpans' must be a list"),
        (4, "resourceSpans[0].scopeSpans[0].spans[1]: missing required field 'traceId'"),
    ]
    [trace] = rows(con, "SELECT trace_id, source, task, outcome FROM traces")
    assert trace == {"trace_id": "trip-42", "source": "travel-agent", "task": "plan_trip", "outcome": "success"}
    # no timestamps: file order, a span before its span events
    assert [(e["seq"], e["event_id"], e["type"], e["tool_name"]) for e in events(con, "trip-42")] == [
        (1, "p1", "workflow_step", None),
        (2, "p2", "tool_call", "search_flights"),  # from instrumentationLibrarySpans, the pre-1.0 name
        (3, "p3", "workflow_step", None),
        (4, "p3/events/0", "human_correction", None),
    ]
    assert detections(con) == {("human_correction", "trip-42", "p3/events/0", "high")}
    [found] = rows(con, "SELECT evidence FROM detections WHERE detector = 'human_correction'")
    assert found["evidence"] == "Book the hotel near the venue, not the one at the airport."


def test_sensitive_attributes_quarantine_and_bad_span_events_reject(tmp_path):
    def span(trace_id: str, **fields) -> dict:
        return {"traceId": trace_id, "spanId": "s1", "name": "step", **fields}

    def attr(key: str, value: str) -> dict:
        return {"key": key, "value": {"stringValue": value}}

    path = write_traces(tmp_path, "spans.jsonl", [
        span("by-resource", resource={"attributes": [attr("data_classification", "restricted")]}),
        span("by-span", attributes=[attr("sensitivity", "high")]),
        span("bad-event", events=[{"name": "ok"}, "not an event"]),
        span("clean"),
    ])
    con = stage([path])
    assert {q["trace_id"]: q["reason"] for q in rows(con, "SELECT * FROM quarantine")} == {
        "by-resource": "tag:data_classification", "by-span": "tag:sensitivity"}
    assert rejects(con) == [(3, "events[1] is not an object")]
    assert [t["trace_id"] for t in rows(con, "SELECT trace_id FROM traces")] == ["clean"]


PR_REVIEW = "5b8efff798038103d269b633813fc60c"
PR_REVIEW_EVENTS = ["a1", "b2", "c3", "c3/status", "d4", "e5", "e5/events/0", "b2/events/0"]


def test_a_trace_split_across_two_files_is_one_trace(tmp_path):
    export = json.loads((OTLP / "export_pr_review.json").read_text())
    # the first file holds the root's children only (second scope), the second the root and the failed tool
    children, root = copy.deepcopy(export), copy.deepcopy(export)
    del children["resourceSpans"][0]["scopeSpans"][0]
    del root["resourceSpans"][0]["scopeSpans"][1]
    write_traces(tmp_path, "a.json", [children])
    write_traces(tmp_path, "b.json", [root])
    con = stage([tmp_path])
    assert rejects(con) == []
    [trace] = rows(con, "SELECT * FROM traces")
    assert (trace["trace_id"], trace["source"], trace["task"], trace["outcome"], trace["line"]) == (
        PR_REVIEW, "pr-reviewer", "Review a pull request", "success", 1)
    assert trace["file"].endswith("a.json")
    assert str(trace["started_at"]) == "2026-01-01 00:00:00" and str(trace["ended_at"]) == "2026-01-01 00:00:10"
    assert [(e["seq"], e["event_id"]) for e in events(con, PR_REVIEW)] == list(enumerate(PR_REVIEW_EVENTS, start=1))
    assert detections(con) == {
        ("human_correction", PR_REVIEW, "b2/events/0", "high"),
        ("failed_evaluation", PR_REVIEW, "e5/events/0", "critical"),
        ("tool_fallback", PR_REVIEW, "c3/status", "medium"),
    }


def test_the_same_file_twice_is_one_trace_and_every_record_loads(tmp_path):
    # the good lines of spans.jsonl: two traces, one span per line
    good = [line for line in (OTLP / "spans.jsonl").read_text().splitlines()
            if '"traceId"' in line and line.endswith("}")]
    (tmp_path / "spans.jsonl").write_text("\n".join(good) + "\n", encoding="utf-8")
    shutil.copy(tmp_path / "spans.jsonl", tmp_path / "spans-copy.jsonl")
    con = stage([tmp_path])
    assert rejects(con) == []
    assert sorted(t["trace_id"] for t in rows(con, "SELECT trace_id FROM traces")) == ["deploy-91b0", "refund-7f3a"]
    assert [e["event_id"] for e in events(con, "refund-7f3a")] == ["r1", "r2", "r2/events/0", "r3"]
    mapped = rows(con, """SELECT r.file_id, r.record, rt.trace_id FROM records r
                          LEFT JOIN record_traces rt USING (file_id, record)""")
    assert len(mapped) == 2 * len(good) == 12 and all(m["trace_id"] for m in mapped)
    # the file read first gives the events; every line of the other is linked
    assert rows(con, """SELECT count(DISTINCT e.file_id) AS event_files, count(DISTINCT k.file_id) AS link_files,
                               count(DISTINCT k.record) AS links, bool_or(e.file_id = k.file_id) AS shared
                        FROM events e, record_links k""") == [
        {"event_files": 1, "link_files": 1, "links": 6, "shared": False}]


def test_a_conflicting_repeat_rejects_its_record(tmp_path):
    export = json.loads((OTLP / "export_pr_review.json").read_text())
    changed = copy.deepcopy(export)
    changed["resourceSpans"][0]["scopeSpans"][1]["spans"][2]["status"] = {"code": 2}  # d4 again, now failed
    first = write_traces(tmp_path, "a.json", [export])
    second = write_traces(tmp_path, "b.json", [changed])
    con = stage([tmp_path])
    assert rows(con, "SELECT f.path, j.line, j.reason FROM rejects j JOIN files f USING (file_id)") == [
        {"path": str(second), "line": 1,
         "reason": f"resourceSpans[0].scopeSpans[1].spans[2]: conflicting duplicate of event d4 of trace {PR_REVIEW}"
                   f" (first at {first} line 1)"}]
    # the record is rejected whole, and the first delivery stands
    assert [e["event_id"] for e in events(con, PR_REVIEW)] == PR_REVIEW_EVENTS
    assert rows(con, "SELECT * FROM record_links") == []


def test_agent_kernel_action_traces():
    con = stage([AGENT_KERNEL])
    assert rejects(con) == [(3, "action 1: missing required field 'type'")]
    traces = {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces")}
    assert {tid: (t["format"], t["source"], t["task"], t["outcome"]) for tid, t in traces.items()} == {
        "ak-backup-01": ("agent_kernel", "agent-kernel", "Rotate the nightly database backups", "partial"),
        "ak-cache-02": ("agent_kernel", "agent-kernel", "Warm the product cache", "failed"),
    }
    assert traces["ak-backup-01"]["tenant"].startswith("tenant-")
    assert json.loads(traces["ak-backup-01"]["extra"]) == {"agent_version": "0.9"}

    backup = events(con, "ak-backup-01")
    assert [(e["event_id"], e["type"], e["raw_type"], e["tool_name"], e["success"]) for e in backup] == [
        ("s1", "tool_call", "tool_call", "s3_list", True),
        ("s2", "tool_call", "tool_call", "s3_delete", False),
        ("s3", "tool_call", "tool_call", "gcs_delete", True),
        ("s4", "final_answer", "final", None, True),
    ]
    assert backup[1]["content"] == "AccessDenied on the archive bucket."
    assert json.loads(backup[2]["extra"]) == {"attempt": 1}
    # actions carry timestamps here: they decide the order
    assert [e["event_id"] for e in events(con, "ak-cache-02")] == ["w0", "w1", "w2", "w3"]

    assert detections(con) == {
        ("tool_fallback", "ak-backup-01", "s2", "medium"),
        ("retry", "ak-cache-02", "w2", "high"),  # the retries ran out,
        ("unrecovered_error", "ak-cache-02", "w3", "high"),
    }


@pytest.mark.parametrize("folder", ["otlp", "other"])
def test_real_samples_load_whole(folder: str):
    path = SHARED / "samples" / folder
    if not path.is_dir():
        pytest.skip(f"{path} not present")
    con = stage([path])
    assert rejects(con) == []
    assert len(rows(con, "SELECT trace_id FROM traces")) == 1


def test_real_samples_detections():
    paths = [SHARED / "samples" / "otlp" / "minimal_agent_trace.json",
             SHARED / "samples" / "other" / "sample_agent_kernel_actiontrace.json"]
    if not all(p.is_file() for p in paths):
        pytest.skip("the shared samples are not present")
    con = stage(paths)
    assert {t["trace_id"]: t["format"] for t in rows(con, "SELECT trace_id, format FROM traces")} == {
        "trace-otel-minimal": "otlp", "ak-deploy-001": "agent_kernel"}
    found = rows(con, "SELECT detector, trace_id, event_id, evidence FROM detections WHERE list_contains(?, detector)",
                 [list(CORE_DETECTORS)])
    assert {(d["detector"], d["trace_id"], d["event_id"]) for d in found} == {
        ("human_correction", "trace-otel-minimal", "span-llm/events/0"),
        ("retry", "ak-deploy-001", "a3"),
    }
    correction = next(d for d in found if d["detector"] == "human_correction")
    assert correction["evidence"] == "The agent should cite the retrieved source."
    assert [(e["event_id"], e["type"], e["tool_name"]) for e in events(con, "trace-otel-minimal")] == [
        ("span-llm", "model_call", None),
        ("span-llm/events/0", "human_correction", None),
        ("span-tool", "tool_call", "github.search"),
    ]


def test_each_thing_wrong_with_a_span_is_named_from_its_one_parse(tmp_path):
    """The adapter reads a span's fields once (a typed parse: each field's own JSON text) and judges them
    from that text: a JSON null is as good as missing, a number is a usable id, and an event that is null
    is no object."""
    def span(**fields) -> dict:
        return {"traceId": "t-ok", "spanId": "s1", "name": "step", **fields}

    lines = [
        span(traceId=None),
        span(traceId={"hex": "ab"}),
        span(traceId="  "),
        {"traceId": "t1", "name": "no span id"},
        span(spanId=["s1"]),
        span(spanId=""),
        span(attributes="model=gpt"),
        span(events={"name": "one"}),
        span(events=[{"name": "one"}, None]),
        span(traceId=1234, spanId=5, attributes={"k": "v"}, events=[]),
    ]
    path = tmp_path / "spans.jsonl"
    lines.append({"resourceSpans": [{"scopeSpans": [{"spans": [span(), "a span"]}]}]})
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    con = stage([path])
    assert rejects(con) == [
        (1, "missing required field 'traceId'"), (2, "field 'traceId' must be a string"),
        (3, "field 'traceId' is empty"), (4, "missing required field 'spanId'"),
        (5, "field 'spanId' must be a string"), (6, "field 'spanId' is empty"),
        (7, "field 'attributes' must be a list"), (8, "field 'events' must be a list"),
        (9, "events[1] is not an object"), (11, "resourceSpans[0].scopeSpans[0].spans[1]: span is not an object")]
    assert [(t["trace_id"], t["line"]) for t in rows(con, "SELECT trace_id, line FROM traces")] == [("1234", 10)]
