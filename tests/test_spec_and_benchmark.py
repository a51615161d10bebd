"""The format spec's own examples, the real sample traces, and the public labelled benchmark."""

import json
from pathlib import Path

import pytest

from conftest import REPO, SHARED, rows, stage, write_traces

SAMPLES = SHARED / "samples" / "lessonweaver"
BENCHMARK = SHARED / "benchmarks" / "lessonweaver-v1" / "corpus.json"


def test_spec_examples():
    con = stage([REPO / "tests" / "fixtures" / "spec" / "examples.jsonl"])
    found = rows(con, "SELECT trace_id, detector, event_id, evidence, problem FROM known_detections ORDER BY trace_id")
    by_trace = {}
    for f in found:
        by_trace.setdefault(f["trace_id"], []).append(f)
    (hc,) = by_trace.pop("trace-gh-pr-review-001")
    assert (hc["detector"], hc["event_id"]) == ("human_correction", "e3")
    assert hc["evidence"] == "You did not inspect changed files/diff before reviewing."
    (fe,) = by_trace.pop("trace-chatbot-policy-001")
    assert (fe["detector"], fe["event_id"]) == ("failed_evaluation", "p3")
    assert "silent failure" in fe["problem"]
    assert by_trace == {}, "the workflow example must yield nothing"


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_real_samples_all_load():
    con = stage([SAMPLES])
    assert rows(con, "SELECT * FROM rejects") == []
    n_files = len(list(SAMPLES.glob("*.json")))
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == n_files
    tools = {r["tool_name"] for r in rows(con, "SELECT DISTINCT tool_name FROM events WHERE tool_name IS NOT NULL")}
    assert {"get_pr_diff", "policy_search", "get_repo_issues", "get_cached_issues"} <= tools
    meta = con.execute("""SELECT metadata->>'policy_version' FROM events
                          WHERE trace_id = 'trace-chatbot-policy-001' AND event_id = 'p2'""").fetchone()[0]
    assert meta == "2024-09"


def _benchmark_traces() -> list[tuple[dict, dict]]:
    corpus = json.loads(BENCHMARK.read_text(encoding="utf-8"))
    out = []
    for case in corpus["cases"]:
        trace = case.get("trace")
        if trace is None:
            trace = json.loads((SAMPLES / Path(case["trace_path"]).name).read_text(encoding="utf-8"))
        out.append((case, trace))
    return out


@pytest.mark.skipif(not BENCHMARK.is_file(), reason="shared benchmark not present")
def test_benchmark_cases_all_load(tmp_path):
    """Every case of the public benchmark loads as one trace. Its precision and recall are figures, not
    assertions: `make eval` prints them (benchmarks/eval.py), and the README carries them."""
    cases = _benchmark_traces()
    con = stage([write_traces(tmp_path, "bench.jsonl", [t for _, t in cases])])
    assert rows(con, "SELECT * FROM rejects") == []
    assert {r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces")} == {t["trace_id"] for _, t in cases}
