"""The agent_kernel adapter on what weaver-kernel itself writes (tests/fixtures/formats/weaver_kernel/,
made by running the library: see its README): the export envelope, the hash-chained audit log, bare
traces from `weaver-kernel audit export`; and on records it must refuse."""

import json
from pathlib import Path

import pytest

from conftest import REPO, rows, stage, write_jsonl

WEAVER = REPO / "tests" / "fixtures" / "formats" / "weaver_kernel"


def envelope(name: str) -> list[dict]:
    return json.loads((WEAVER / name).read_text())["traces"]


@pytest.fixture(scope="module")
def con():
    con = stage([WEAVER])
    return con


def test_every_record_loads_or_is_quarantined(con):
    assert rows(con, "SELECT * FROM rejects") == []
    accounts = rows(con, "SELECT path, records, loaded, quarantined, rejected, unaccounted FROM file_accounts ORDER BY path")
    assert {Path(a["path"]).name: (a["records"], a["loaded"] + a["quarantined"], a["unaccounted"]) for a in accounts} == {
        "audit_direct.jsonl": (5, 5, 0), "audit_support.jsonl": (8, 8, 0), "cli_audit_export_failed.jsonl": (2, 2, 0),
        "envelope_direct.json": (1, 1, 0), "envelope_support.json": (1, 1, 0)}


def test_an_action_is_a_trace_and_its_copies_are_one(con):
    """The same 13 actions are in the envelopes, the audit logs and the CLI export: 13 traces."""
    actions = {t["action_id"]: t for t in envelope("envelope_support.json") + envelope("envelope_direct.json")}
    stored = {r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces UNION ALL SELECT trace_id FROM quarantine")}
    assert stored == set(actions)
    for r in rows(con, "SELECT trace_id, source, task, outcome, format FROM traces"):
        a = actions[r["trace_id"]]
        assert r["source"] == a["principal_id"] and r["format"] == "agent_kernel"
        assert r["task"].endswith(a["capability_id"])
        assert r["outcome"] == ("corrected_by_human" if a["correction"] else a["status"])


def test_sensitivity_other_than_none_quarantines(con):
    sensitive = {t["action_id"] for t in envelope("envelope_support.json") + envelope("envelope_direct.json")
                 if t["sensitivity"] != "NONE"}
    assert len(sensitive) == 6  # PII, PCI, SECRETS and MEMORY traces
    assert {r["trace_id"]: r["reason"] for r in rows(con, "SELECT trace_id, reason FROM quarantine")} == \
        dict.fromkeys(sensitive, "tag:sensitivity")


def test_events_call_result_error_correction(con):
    events = {(r["trace_id"], r["seq"]): r for r in rows(con, "SELECT * FROM events")}
    deny = next(t for t in envelope("envelope_support.json") if t["event_type"] == "deny")
    call, result = events[deny["action_id"], 1], events[deny["action_id"], 2]
    assert (call["type"], call["raw_type"], call["tool_name"]) == ("tool_call", "deny", "accounts.close_account")
    assert (result["type"], result["status"], result["success"]) == ("error", "failed", False)
    assert result["content"].startswith("denied (missing_role): DESTRUCTIVE capabilities require")
    corrected = next(t for t in envelope("envelope_support.json")
                     if t["correction"] and t["sensitivity"] == "NONE")
    assert (events[corrected["action_id"], 2]["type"], events[corrected["action_id"], 2]["success"]) == ("tool_result", True)
    fix = events[corrected["action_id"], 3]
    assert (fix["type"], fix["content"]) == ("human_correction", corrected["correction"]["note"])
    assert json.loads(fix["metadata"]) == {"corrected_by": corrected["correction"]["corrected_by"]}
    assert json.loads(events[corrected["action_id"], 1]["metadata"])["args"] == corrected["args"]


def test_detections(con):
    found = {(r["detector"], r["trace_id"]) for r in rows(con, "SELECT detector, trace_id FROM detections")}
    corrected = {t["action_id"] for t in envelope("envelope_support.json") + envelope("envelope_direct.json")
                 if t["correction"] and t["sensitivity"] == "NONE"}
    assert {t for d, t in found if d == "human_correction"} == corrected
    failed = {t["action_id"] for t in envelope("envelope_support.json") + envelope("envelope_direct.json")
              if t["status"] == "failed" and t["sensitivity"] == "NONE"}
    assert failed <= {t for d, t in found if d == "unrecovered_error"}


def test_times_are_utc(con):
    times = {r["trace_id"]: r["started_at"] for r in rows(con, "SELECT trace_id, started_at FROM traces")}
    support = envelope("envelope_support.json")[0]
    assert times[support["action_id"]].isoformat() == support["invoked_at"].replace("+00:00", "")
    naive = [t for t in envelope("envelope_direct.json") if t["sensitivity"] == "NONE"][0]
    assert times[naive["action_id"]].isoformat() == naive["invoked_at"].replace("+00:00", "")


def test_records_it_cannot_use_are_rejected_with_a_reason(tmp_path: Path):
    good = envelope("envelope_direct.json")[0]
    records = [
        {"schema": "weaver_kernel.action_trace_export", "version": "1", "traces": {"not": "a list"}},
        {"schema": "weaver_kernel.action_trace_export", "version": "1", "traces": [good, {**good, "action_id": ""}]},
        {"seq": 0, "prev_hash": "0" * 64, "record_hash": "ab", "trace": {**good, "action_id": 7}},
        {**good, "capability_id": None, "action_id": "bare-1"},
        {**good, "action_id": "bare-2", "correction": "fixed"},
    ]
    con = stage([write_jsonl(tmp_path / "bad.jsonl", records)])
    assert [(r["line"], r["reason"]) for r in rows(con, "SELECT line, reason FROM rejects ORDER BY line")] == [
        (1, "field 'traces' must be a list"),
        (2, "traces[1]: field 'action_id' is empty"),
        (3, "trace: field 'action_id' must be a string"),
        (4, "missing required field 'capability_id'"),
        (5, "field 'correction' must be an object"),
    ]
    assert rows(con, "SELECT count(*) AS n FROM traces") == [{"n": 0}]
