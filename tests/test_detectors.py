"""Every detector against its own fixtures: tests/fixtures/detectors/<id>/{positive,negative}/*.json.

A fixture holds `traces` (lessonweaver trace objects), or `records` (raw records of any supported
format, written one per line to a file named by `file`, default `records.jsonl`; a `file` ending in
`.json` gets the records as one JSON array, or the single record as a document). A positive case also
has `expect`: detections that must be found, each a trace_id with optionally an event_id, a piece of
the evidence and a severity; `count`, when present, is the exact number of findings. A negative case
must yield no detection from its detector at all.
"""

import json
from pathlib import Path

import pytest

from conftest import REPO, rows, stage, write_traces
from lessonweaver.detectors import load_detectors

FIXTURES = REPO / "tests" / "fixtures" / "detectors"
CASES = sorted(FIXTURES.glob("*/*/*.json"))


def test_every_detector_has_positive_and_negative_fixtures():
    for d in load_detectors():
        for kind in ("positive", "negative"):
            assert list((FIXTURES / d.id / kind).glob("*.json")), f"{d.id} has no {kind} fixture"


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parts[-3]}/{p.parts[-2]}/{p.stem}")
def test_detector_fixture(case: Path, tmp_path: Path):
    detector, kind = case.parts[-3], case.parts[-2]
    spec = json.loads(case.read_text(encoding="utf-8"))
    if "traces" in spec:
        path = write_traces(tmp_path, "traces.jsonl", spec["traces"])
    else:
        path = write_traces(tmp_path, spec.get("file", "records.jsonl"), spec["records"])
    con = stage([path], only=detector)
    assert rows(con, "SELECT * FROM rejects") == [], "fixture records must all load"
    found = rows(con, "SELECT trace_id, event_id, evidence, severity, problem, lesson FROM detections")
    if kind == "negative":
        assert found == [], f"{case.name}: expected nothing, found {found}"
        return
    assert found, f"{case.name}: nothing detected"
    for want in spec["expect"]:
        matches = [
            f for f in found
            if f["trace_id"] == want["trace_id"]
            and ("event_id" not in want or f["event_id"] == want["event_id"])
            and want.get("evidence", "") in (f["evidence"] or "")
            and ("severity" not in want or f["severity"] == want["severity"])
        ]
        assert matches, f"{case.name}: no detection like {want} in {found}"
    if "count" in spec:
        assert len(found) == spec["count"], found
    assert all(f["evidence"] and f["lesson"] for f in found)
