"""Every real sample in ../shared/samples/ loads, with the signals a person sees in them detected."""

import pytest

from conftest import SHARED, rows, stage

SAMPLES = SHARED / "samples"
pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")

# Files that are not traces, rejected as no known format, which is right: gdev-agent/harness_regression.jsonl
# is an eval-case set (samples/README.md says so), swe-agent/labels.json the SWE-bench harness's verdicts on
# the trajectories beside it (one JSON object). Everything else must load.
NOT_TRACES = [("gdev-agent/harness_regression.jsonl", 6), ("swe-agent/labels.json", 1)]


def test_every_sample_loads_in_one_run():
    con = stage([SAMPLES])
    rejected = rows(con, "SELECT f.path, count(*) AS n FROM rejects JOIN files f USING (file_id) GROUP BY 1 ORDER BY 1")
    assert [(r["path"].split("samples/")[1], r["n"]) for r in rejected] == NOT_TRACES
    assert rows(con, "SELECT reason FROM quarantine") == []
    by_format = dict(con.execute("SELECT format, count(*) FROM traces GROUP BY 1").fetchall())
    assert by_format == {"lessonweaver": 14, "traceevent": 15, "stream": 6, "otlp": 1, "agent_kernel": 1,
                         "chat": 46, "claude_code": 7, "codex": 3}
    formats = {"/".join(r["path"].split("samples/")[1].split("/")[:2 if "coding-agents" in r["path"] else 1]): r["format"]
               for r in rows(con, "SELECT path, format FROM files JOIN file_formats USING (file_id)")}
    assert formats == {"lessonweaver": "lessonweaver", "agent-arena": "traceevent", "stream": "stream",
                       "otlp": "otlp", "other": "agent_kernel", "tau-bench": "chat", "swe-agent": "chat",
                       "coding-agents/cc-session-share": "claude_code", "coding-agents/codex-openprintkit": "codex"}
    assert con.execute("SELECT count(*) FROM events WHERE type = 'unknown'").fetchone()[0] == 0


def test_the_signals_a_person_sees():
    con = stage([SAMPLES])
    found = [(r["detector"], r["evidence"]) for r in rows(con, "SELECT detector, evidence FROM detections")]
    detectors = {d for d, _ in found}
    assert {"retry", "critic_revision", "handoff_loss", "human_correction", "failed_evaluation",
            "tool_fallback", "unrecovered_error"} <= detectors
    # tool errors followed by a retry of the same tool: agent-arena, stream and agent-kernel
    retries = [e for d, e in found if d == "retry"]
    assert any("get_customer_profile" in e for e in retries)
    assert any("read_file" in e for e in retries)
    assert any("Migration failed" in e for e in retries)
    assert sum(1 for d, _ in found if d == "critic_revision") == 3
    assert all("credit_hold" in e for d, e in found if d == "handoff_loss")
    assert sum(1 for d, _ in found if d == "handoff_loss") == 2
    assert ("human_correction", "The agent should cite the retrieved source.") in found
