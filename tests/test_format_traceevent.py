"""The TraceEvent JSONL adapter (sql/adapters/traceevent.sql) on our own fixtures and on the real runs.

Fixtures in tests/fixtures/formats/traceevent/: a single agent retrying a failed tool, a supervisor whose
worker drops a flag, peers whose handoff drops a flag (run_id only on run_start), a debate with a critic
revision (spec field names), a run with no finish event and no run_id at all, and a file with bad lines
(and a replayed one). Runs split over files, files delivered twice and conflicting repeats are built from
them in a temporary folder.
"""

import json
import shutil

import duckdb
import pytest

from conftest import REPO, SHARED, events_of, read_jsonl, rows, stage, write_jsonl
from lessonweaver.adapters import load_adapters
from lessonweaver.config import Settings
from lessonweaver.pipeline import run_local

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "traceevent"
SAMPLES = SHARED / "samples" / "agent-arena"


@pytest.fixture(scope="module")
def con():
    return stage([FIXTURES])



def test_traces(con):
    found = rows(con, "SELECT trace_id, format, source, task, outcome, line FROM traces ORDER BY trace_id")
    assert [(t["trace_id"], t["source"], t["outcome"]) for t in found] == [
        ("nf-01", "agent-arena:single_agent", "incomplete"),
        ("run-debate-revised", "agent-arena:debate_critic", "success"),
        ("run-peer-lost", "agent-arena:peer_to_peer", "success"),
        ("run-single-retry", "agent-arena:single_agent", "success"),
        ("run-supervisor-lost", "agent-arena:supervisor_worker", "success"),
        ("run-with-bad-lines", "agent-arena:single_agent", "success"),
    ]
    assert {t["format"] for t in found} == {"traceevent"}
    assert {t["line"] for t in found} == {1}
    task = next(t["task"] for t in found if t["trace_id"] == "run-single-retry")
    assert task == "Find invoice INV-2231 for account ACC-19 and report its amount due."  # trimmed


def test_single_agent_events(con):
    evs = events_of(con, "run-single-retry")
    assert [e["seq"] for e in evs] == list(range(1, 12))
    assert [(e["event_id"], e["type"], e["raw_type"]) for e in evs[:6]] == [
        ("sa-01", "workflow_step", "run_start"),
        ("sa-02", "workflow_step", "agent_start"),
        ("sa-03", "model_call", "llm_call"),
        ("sa-04", "model_call", "llm_response"),
        ("sa-05", "tool_call", "tool_call"),
        ("sa-06", "tool_result", "tool_result"),
    ]
    failed, ok = evs[5], evs[9]
    assert (failed["tool_name"], failed["status"], failed["success"]) == ("fetch_invoice", "error", False)
    assert failed["content"].startswith("Error executing tool: GatewayTimeout")
    assert (ok["tool_name"], ok["status"], ok["success"]) == ("fetch_invoice", "success", True)
    assert json.loads(ok["content"])["amount_due"] == 310.5
    assert evs[4]["content"] == '{"invoice_id":"INV-2231"}'
    assert evs[3]["content"] == 'fetch_invoice({"invoice_id":"INV-2231"})'
    assert (evs[-1]["type"], evs[-1]["content"]) == ("final_answer", "Invoice INV-2231 has 310.50 EUR due.")
    assert json.loads(evs[5]["extra"])["tool_call_id"] == "tc-1"
    assert json.loads(evs[0]["metadata"]) == {"run_id": "run-single-retry"}


def test_parent_links_resolve_within_the_run(con):
    dangling = rows(con, """SELECT e.trace_id, e.event_id FROM events e
                            WHERE e.parent_id IS NOT NULL AND NOT EXISTS (
                                SELECT 1 FROM events p WHERE p.trace_id = e.trace_id AND p.event_id = e.parent_id)""")
    assert dangling == []
    roots = rows(con, "SELECT raw_type FROM events WHERE parent_id IS NULL")
    assert {r["raw_type"] for r in roots} == {"run_start"} and len(roots) == 6
    evs = {e["event_id"]: e for e in events_of(con, "run-supervisor-lost")}
    assert evs["sw-05"]["parent_id"] == "sw-04"  # worker's agent_start under its worker_start


def test_run_found_up_the_parent_chain(con):
    # only run_start carries metadata.run_id in this run
    evs = events_of(con, "run-peer-lost")
    assert len(evs) == 11
    handoff = next(e for e in evs if e["raw_type"] == "peer_handoff")
    assert handoff["type"] == "workflow_step"
    assert handoff["content"].startswith("HANDOFF: customer_id=C-11")
    assert json.loads(handoff["metadata"])["handoff"] == {
        "customer_id": "C-11", "tier": "gold", "name": "Byron, Ada", "status": "active"}
    assert json.loads(handoff["extra"])["to_agent"] == "orders_peer"


def test_workers_accept_spec_field_names(con):
    evs = events_of(con, "run-supervisor-lost")
    starts = [e for e in evs if e["raw_type"] == "worker_start"]
    finishes = [e for e in evs if e["raw_type"] == "worker_finish"]
    assert [e["content"] for e in starts] == ["Billing Worker: Get account ACC-7.", "Plans Worker: Upgrade ACC-7 to team."]
    assert [json.loads(e["metadata"])["worker"] for e in finishes] == ["Billing Worker", "Plans Worker"]
    assert {e["type"] for e in finishes} == {"assistant_message"}
    assert evs[-1]["raw_type"] == "supervisor_finish" and evs[-1]["type"] == "final_answer"


def test_debate_critic(con):
    evs = {e["raw_type"]: e for e in events_of(con, "run-debate-revised")}
    review = evs["critic_review"]
    assert review["type"] == "assistant_message"
    assert review["content"].startswith("The draft states 120.00 EUR")
    assert json.loads(review["extra"])["draft"] == "Order 9911 was refunded: 120.00 EUR."
    assert evs["revision_start"]["type"] == "workflow_step"
    assert evs["llm_call"]["content"] == "Order 9911 was refunded: 120.00 EUR."  # the spec's response field
    assert evs["revision_finish"]["type"] == "final_answer"


def test_no_finish_and_no_run_id(con):
    evs = events_of(con, "nf-01")  # the run is named by its run_start's event_id
    # nf-05 is written last but stamped between agent_start and llm_call
    assert [e["event_id"] for e in evs] == ["nf-01", "nf-02", "nf-05", "nf-03", "nf-04"]
    assert evs[2]["type"] == "workflow_step"
    error = evs[-1]
    assert (error["type"], error["content"]) == ("error", "QuotaExceeded: daily token quota used up")
    assert "Traceback" in json.loads(error["extra"])["traceback"]
    assert rows(con, "SELECT count(*) AS n FROM events WHERE content LIKE '%Traceback%'") == [{"n": 0}]
    assert rows(con, "SELECT started_at < ended_at AS ordered FROM traces WHERE trace_id = 'nf-01'") == [{"ordered": True}]


def test_bad_lines_are_rejected_with_reasons(con):
    found = rows(con, """SELECT j.line, j.reason FROM rejects j JOIN files f USING (file_id)
                         WHERE f.path LIKE '%bad_lines.jsonl' ORDER BY j.line""")
    assert [r["line"] for r in found] == [6, 7, 8, 9, 11]
    reasons = [r["reason"] for r in found]
    assert reasons[0] == "missing required field 'event_type'"
    assert reasons[1].startswith("no metadata.run_id and no parent_event_id")
    assert reasons[2].startswith("no metadata.run_id, and its parent_event_id chain reaches no event")
    assert reasons[3] == "field 'payload' must be an object"
    assert reasons[4].startswith("invalid JSON")
    assert len(events_of(con, "run-with-bad-lines")) == 5
    # line 10 replays line 3 exactly: linked to its run, not rejected and not a second event
    linked = rows(con, """SELECT r.line, k.trace_id FROM record_links k JOIN records r USING (file_id, record)
                          JOIN files f USING (file_id) WHERE f.path LIKE '%bad_lines.jsonl'""")
    assert linked == [{"line": 10, "trace_id": "run-with-bad-lines"}]


def test_every_record_is_accounted_for(con):
    lost = rows(con, """SELECT r.file_id, r.record FROM records r
                        WHERE NOT EXISTS (SELECT 1 FROM rejects j WHERE j.file_id = r.file_id AND j.record = r.record)
                          AND NOT EXISTS (SELECT 1 FROM record_traces t WHERE t.file_id = r.file_id AND t.record = r.record)""")
    assert lost == []


def test_detections(con):
    found = {(d["detector"], d["trace_id"], d["event_id"]): d
             for d in rows(con, "SELECT * FROM known_detections")}
    assert set(found) == {
        ("retry", "run-single-retry", "sa-06"),
        ("handoff_loss", "run-supervisor-lost", "sw-09"),
        ("handoff_loss", "run-peer-lost", "pp-06"),
        ("critic_revision", "run-debate-revised", "dc-07"),
        ("environment_error", "nf-01", "nf-04"),  # the daily token quota ran out: not the agent's doing
    }
    assert found["retry", "run-single-retry", "sa-06"]["evidence"] == (
        "fetch_invoice: Error executing tool: GatewayTimeout: billing service did not answer")
    assert found["handoff_loss", "run-peer-lost", "pp-06"]["evidence"].startswith("payment_overdue=true from get_customer")
    assert "fraud_review=true" in found["handoff_loss", "run-supervisor-lost", "sw-09"]["evidence"]


def test_match_is_specific():
    adapter = next(a for a in load_adapters() if a.format == "traceevent")
    docs = {
        "traceevent": {"event_id": "a", "event_type": "run_start", "payload": {}, "parent_event_id": None},
        "stream event": {"id": "a", "event_type": "step_start_dag", "data": {}, "parent_id": None},
        "lessonweaver trace": {"trace_id": "t", "source": "s", "task": "x", "outcome": "success", "events": []},
    }
    matched = {name: duckdb.execute(f"SELECT {adapter.match} FROM (SELECT ?::JSON AS doc)", [json.dumps(doc)]).fetchone()[0]
               for name, doc in docs.items()}
    assert matched == {"traceevent": True, "stream event": False, "lessonweaver trace": False}


def test_a_sensitive_line_quarantines_its_run(tmp_path):
    lines = [json.loads(line) for line in (FIXTURES / "single_agent_retry.jsonl").read_text().splitlines()]
    lines[5]["metadata"]["contains_pii"] = True  # one tool result of the run
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    con = stage([tmp_path])
    assert rows(con, "SELECT trace_id, reason FROM quarantine") == [
        {"trace_id": "run-single-retry", "reason": "tag:contains_pii"}]
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": 0}]




def test_a_run_split_across_two_files_is_one_trace(tmp_path):
    lines = read_jsonl(FIXTURES / "single_agent_retry.jsonl")
    # alternate lines in each file: only the timestamps give the run's order back
    write_jsonl(tmp_path / "a.jsonl", lines[0::2])
    write_jsonl(tmp_path / "b.jsonl", lines[1::2])
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    [trace] = rows(con, "SELECT trace_id, file, line, outcome, started_at, ended_at FROM traces")
    assert (trace["trace_id"], trace["outcome"], trace["line"]) == ("run-single-retry", "success", 1)
    assert trace["file"].endswith("a.jsonl")
    evs = events_of(con, "run-single-retry")
    assert [(e["seq"], e["event_id"]) for e in evs] == [(n, f"sa-{n:02d}") for n in range(1, 12)]
    assert (trace["started_at"], trace["ended_at"]) == (evs[0]["ts"], evs[-1]["ts"])
    assert [(d["detector"], d["event_id"]) for d in rows(con, "SELECT * FROM known_detections")] == [("retry", "sa-06")]


def test_the_same_file_twice_is_one_trace_and_every_record_loads(tmp_path):
    shutil.copy(FIXTURES / "single_agent_retry.jsonl", tmp_path / "run.jsonl")
    shutil.copy(FIXTURES / "single_agent_retry.jsonl", tmp_path / "run-copy.jsonl")
    con = stage([tmp_path])
    assert rows(con, "SELECT * FROM rejects") == []
    assert [t["trace_id"] for t in rows(con, "SELECT trace_id FROM traces")] == ["run-single-retry"]
    assert len(events_of(con, "run-single-retry")) == 11
    mapped = rows(con, """SELECT f.path, rt.trace_id FROM records r JOIN files f USING (file_id)
                          LEFT JOIN record_traces rt USING (file_id, record)""")
    assert len(mapped) == 22 and {m["trace_id"] for m in mapped} == {"run-single-retry"}
    # the file read first gives the events; every line of the other is linked
    assert rows(con, """SELECT count(DISTINCT e.file_id) AS event_files, count(DISTINCT k.file_id) AS link_files,
                               count(DISTINCT k.record) AS links, bool_or(e.file_id = k.file_id) AS shared
                        FROM events e, record_links k""") == [
        {"event_files": 1, "link_files": 1, "links": 11, "shared": False}]


def test_a_conflicting_repeat_is_rejected(tmp_path):
    lines = read_jsonl(FIXTURES / "single_agent_retry.jsonl")
    write_jsonl(tmp_path / "a.jsonl", lines)
    changed = json.loads(json.dumps(lines[5]))
    changed["payload"]["error"] = False  # sa-06 again, now claiming success
    write_jsonl(tmp_path / "b.jsonl", [lines[0], changed])
    con = stage([tmp_path])
    assert rows(con, "SELECT f.path, j.line, j.reason FROM rejects j JOIN files f USING (file_id)") == [
        {"path": str(tmp_path / "b.jsonl"), "line": 2,
         "reason": f"conflicting duplicate of event sa-06 of trace run-single-retry (first at {tmp_path / 'a.jsonl'} line 6)"}]
    evs = {e["event_id"]: e for e in events_of(con, "run-single-retry")}
    assert len(evs) == 11 and evs["sa-06"]["success"] is False  # the first delivery wins
    assert rows(con, "SELECT line FROM record_links JOIN records USING (file_id, record)") == [{"line": 1}]


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="the shared agent-arena samples are not here")
def test_real_agent_arena_runs():
    con = stage([SAMPLES])
    assert rows(con, "SELECT * FROM rejects") == []
    assert rows(con, "SELECT count(*) AS n FROM traces WHERE format = 'traceevent'") == [{"n": 15}]  # 15 run_ids
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": 323}]  # 323 lines
    assert rows(con, "SELECT count(*) AS n FROM events WHERE type = 'unknown'") == [{"n": 0}]
    outcomes = rows(con, "SELECT outcome, count(*) AS n FROM traces GROUP BY ALL ORDER BY outcome")
    assert outcomes == [{"outcome": "failure", "n": 2}, {"outcome": "incomplete", "n": 3}, {"outcome": "success", "n": 10}]

    def found(detector):
        return rows(con, "SELECT trace_id, evidence, severity FROM detections WHERE detector = ? ORDER BY trace_id",
                    [detector])

    # the only failed tool called again: get_customer_profile timing out, in one baseline run
    retries = found("retry")
    assert [d["trace_id"] for d in retries] == ["06ca02ba-01bc-43bf-b08c-e28f2f3c7e1d"]
    assert retries[0]["evidence"].startswith("get_customer_profile: Error executing tool")
    assert retries[0]["severity"] == "high"  # and it never succeeded
    assert len(found("critic_revision")) == 3
    losses = found("handoff_loss")
    assert [d["trace_id"] for d in losses] == ["507bc9f1-7787-4151-9cbf-bbc5038ab5ba",  # CRM worker's summary
                                               "9e7a6014-1ace-4db6-9350-59b2da366655"]  # crm_peer's handoff
    assert all(d["evidence"].startswith("credit_hold=true from get_customer_profile") for d in losses)


def test_each_field_is_judged_and_read_from_the_lines_one_parse(tmp_path):
    """The adapter reads a line's fields once (a typed parse: each field's own JSON text). A number is a
    usable id; a payload or metadata written as null is kept as that null; a repeat that is the same JSON
    written another way is the same line."""
    def line(event_id, event_type="agent_step", **fields) -> dict:
        return {"event_id": event_id, "event_type": event_type, "timestamp": "2026-03-01T10:00:00Z",
                "metadata": {"run_id": "r1"}, "payload": {}, **fields}

    lines = [
        line({"id": 1}), line("e2", event_type=None), line("e3", event_type=["run_start"]),
        line("e4", payload="text"), line("e5", metadata="r1"),
        line("e6", "run_start", payload={"task_prompt": "  Sum the column  "}),
        line(7, payload=None),
        line("e8", metadata=None, parent_event_id="e6"),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n"
                    # e6 again, the same JSON spaced as another writer would
                    + json.dumps(lines[5], separators=(" ,", " : ")) + "\n")
    con = stage([path])
    assert rows(con, "SELECT line, reason FROM rejects ORDER BY line") == [
        {"line": 1, "reason": "field 'event_id' must be a string"},
        {"line": 2, "reason": "missing required field 'event_type'"},
        {"line": 3, "reason": "field 'event_type' must be a string"},
        {"line": 4, "reason": "field 'payload' must be an object"},
        {"line": 5, "reason": "field 'metadata' must be an object"},
    ]
    assert rows(con, "SELECT line FROM record_links JOIN records USING (file_id, record)") == [{"line": 9}]
    found = {e["event_id"]: e for e in rows(con, "SELECT event_id, content, metadata, extra FROM events")}
    assert found["e6"]["content"] == "Sum the column"
    assert found["7"]["extra"] == "null" and found["7"]["content"] == "null"
    assert found["e8"]["metadata"] == "null"
    assert rows(con, "SELECT trace_id, task FROM traces") == [{"trace_id": "r1", "task": "Sum the column"}]


def test_a_rate_limited_tool_called_again_is_a_retry_of_the_environments_cause(tmp_path):
    """A tool refused on a rate limit and called again, which then worked: the environment failed (environment_error)
    and the agent retried (retry). Both findings are kept, and both are the environment's: the retry is of category
    environment and weaves into the environment's lesson for operators, not into a lesson for the agent."""
    def run(rid: str, minute: int) -> list[dict]:
        def line(n: int, kind: str, payload: dict, parent: str | None) -> dict:
            return {"event_id": f"{rid}-{n}", "parent_event_id": parent and f"{rid}-{parent}",
                    "timestamp": f"2026-05-12T09:{minute:02d}:{n:02d}.100000+00:00", "event_type": kind,
                    "payload": payload, "metadata": {"run_id": rid}}
        ask = "Which shipments of account AC-31 are delayed?"
        return [line(1, "run_start", {"architecture": "single_agent", "task_prompt": ask}, None),
                line(2, "llm_call", {"messages": [{"role": "user", "content": ask}], "provider": "openai",
                                     "model": "gpt-4o-mini", "response": "track_shipments"}, "1"),
                line(3, "tool_call", {"tool_name": "track_shipments", "tool_call_id": "t1", "arguments": {"account": "AC-31"}}, "2"),
                line(4, "tool_result", {"tool_call_id": "t1", "tool_name": "track_shipments", "error": True,
                                        "result": "Error executing tool: RateLimitError: 429 Too Many Requests"}, "3"),
                line(5, "llm_call", {"messages": [], "provider": "openai", "model": "gpt-4o-mini",
                                     "response": "track_shipments again"}, "1"),
                line(6, "tool_call", {"tool_name": "track_shipments", "tool_call_id": "t2", "arguments": {"account": "AC-31"}}, "5"),
                line(7, "tool_result", {"tool_call_id": "t2", "tool_name": "track_shipments", "error": False,
                                        "result": "[{\"shipment\": \"S-4\", \"delayed\": true}]"}, "6"),
                line(8, "agent_finish", {"output": "Shipment S-4 is delayed."}, "1")]

    folder = tmp_path / "in"
    folder.mkdir()
    write_jsonl(folder / "runs.jsonl", run("ship-1", 0) + run("ship-2", 5))
    db = tmp_path / "lw.duckdb"
    run_local(Settings(paths=(str(folder),), db=str(db), out=str(tmp_path / "out"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = rows(con, """SELECT detector, trace_id, event_id, severity, category, family, signature, lesson_id
                             FROM detections ORDER BY trace_id, detector""")
        lessons = rows(con, "SELECT detectors, category, trace_count, title, lesson FROM lessons")
    finally:
        con.close()
    assert [(d["detector"], d["trace_id"], d["event_id"], d["severity"], d["category"]) for d in found] == [
        ("environment_error", "ship-1", "ship-1-4", "low", "environment"),
        ("retry", "ship-1", "ship-1-4", "low", "environment"),
        ("environment_error", "ship-2", "ship-2-4", "low", "environment"),
        ("retry", "ship-2", "ship-2-4", "low", "environment"),
    ]
    # one cause: the rate limit of that tool, whichever detector saw it
    assert {(d["family"], d["signature"]) for d in found} == {("environment_error", "quota | track_shipments")}
    assert len({d["lesson_id"] for d in found}) == 1
    [lesson] = lessons
    assert (lesson["detectors"], lesson["category"], lesson["trace_count"]) == (["environment_error", "retry"], "environment", 2)
    assert lesson["title"] == "The environment failed the agent: quota at track_shipments"
    assert lesson["lesson"].startswith("Operators: raise the quota for track_shipments or add backoff")
