"""The nightly flow publishes its summary and top lessons as Prefect artifacts: read back from the API."""

import itertools
import json
from pathlib import Path

import duckdb
import pytest

from conftest import write_traces
from flows.nightly import nightly
from lessonweaver.artifacts import SUMMARY_KEY, TOP_LESSON_COLUMNS, TOP_LESSONS, TOP_LESSONS_KEY

MARKER = "QUARANTINED-MARKER-51d2e"
# Words with no digits (lw_normalise folds numbers), so each correction is its own lesson.
WORDS = ["".join(p) for p in itertools.product("bcdfg", "aeiou", "klmnp")]


def correction(tid: str, i: int, task: str = "Triage a ticket", where: str = "") -> dict:
    words = " ".join(WORDS[i * 5:(i + 1) * 5])
    return {"trace_id": tid, "source": "agent-x", "task": task, "outcome": "corrected_by_human", "events": [
        {"id": "e1", "type": "assistant_message", "content": "Closed the ticket."},
        {"id": "e2", "type": "human_correction", "content": f"Wrong call{where}: {words}."}]}


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    traces = [correction(f"c{i}", i) for i in range(23)]
    # The same problem three times: the highest-priority lesson.
    traces += [correction(f"r{i}", 23) for i in range(3)]
    # Twice, the second-highest: a title that carries a URL and a path, scrubbed as in the reports.
    traces += [correction(f"leaky{i}", 24, where=" at https://build.example.com/job/7 for /srv/app/releases/v2")
               for i in range(2)]
    traces.append({**correction("q-hidden-7f3", 0), "metadata": {"contains_secret": True},
                   "task": f"Rotate {MARKER}"})
    write_traces(folder, "night.jsonl", traces)
    return folder


def read_artifacts(key: str, flow_run_id) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        return client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=[key]), flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))


def test_a_run_publishes_its_summary_and_top_lessons(prefect_server, inputs: Path, tmp_path: Path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    state = nightly(paths=[str(inputs)], db=str(db), out=str(out), night="2026-11-20", return_state=True)
    run = state.result()
    flow_run_id = state.state_details.flow_run_id

    [summary] = read_artifacts(SUMMARY_KEY, flow_run_id)
    assert summary.type == "markdown"
    text = summary.data
    assert f"Run `{run.run_id}`" in text and "night 2026-11-20" in text
    assert "| loaded | 28 |" in text and "| quarantined | 1 |" in text and "| rejected | 0 |" in text
    assert "| human_correction | 28 |" in text
    assert "25 new, 0 regressed, 0 resolved, 0 recurring, 0 open; 25 total." in text
    for path in run.written:
        assert f"- `{path}`" in text
    assert MARKER not in text

    [table] = read_artifacts(TOP_LESSONS_KEY, flow_run_id)
    assert table.type == "table"
    rows = json.loads(table.data)
    assert len(rows) == TOP_LESSONS
    assert all(tuple(r) == TOP_LESSON_COLUMNS for r in rows)
    con = duckdb.connect(str(db), read_only=True)
    try:
        expected = con.execute("SELECT lesson_id FROM lessons ORDER BY priority DESC, occurrences DESC, lesson_id "
                               f"LIMIT {TOP_LESSONS}").fetchall()
    finally:
        con.close()
    assert [r["lesson_id"] for r in rows] == [e[0] for e in expected]
    assert [(r["occurrences"], r["traces"]) for r in rows[:3]] == [(3, 3), (2, 2), (1, 1)]
    assert [r["priority"] for r in rows] == sorted((r["priority"] for r in rows), reverse=True)
    assert all(r["status"] == "new" and r["severity"] == "high" for r in rows)
    title = rows[1]["title"]
    assert "example.com" not in title and "/srv/app" not in title
    assert "<URL>" in title and "<PATH>" in title
    assert MARKER not in table.data


def test_each_night_is_a_new_version_under_the_same_keys(prefect_server, inputs: Path, tmp_path: Path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    first = nightly(paths=[str(inputs)], db=str(db), out=str(out), night="2026-11-20", return_state=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    second = nightly(paths=[str(empty)], db=str(db), out=str(out), night="2026-11-21", return_state=True)
    for state in (first, second):
        flow_run_id = state.state_details.flow_run_id
        assert len(read_artifacts(SUMMARY_KEY, flow_run_id)) == 1
        assert len(read_artifacts(TOP_LESSONS_KEY, flow_run_id)) == 1
    [summary] = read_artifacts(SUMMARY_KEY, second.state_details.flow_run_id)
    # Nothing was seen on the second night: every lesson is open (not recurring: none was seen again), none is new.
    assert "0 new, 0 regressed, 0 resolved, 0 recurring, 25 open; 25 total." in summary.data
    assert "**Detections this run:** 0" in summary.data
