"""Splitting work without changing results: a trace whose records land in different batches (event-per-line
formats gather a trace across files) is staged again as a whole, and a file larger than a batch, one
trace per line, is staged in parts. Either way the result equals staging everything in one batch."""

import json
from pathlib import Path

import pytest

from flows.nightly import nightly
from lessonweaver import store

DATA = Path(__file__).parent.parent / "data"
TABLES = {
    "traces": "SELECT * EXCLUDE (file, line, run_id, loaded_at) FROM traces ORDER BY trace_id",
    "events": "SELECT * FROM events ORDER BY trace_id, seq",
    "detections": "SELECT * EXCLUDE (run_id, detected_at) FROM detections ORDER BY ALL",
    "lessons": "SELECT * EXCLUDE (first_seen, last_seen) FROM lessons ORDER BY lesson_id",
    "files": "SELECT sum(records), sum(loaded), sum(quarantined), sum(rejected) FROM ingested_files",
    "rejects": "SELECT reason, count(*) FROM rejects GROUP BY ALL ORDER BY ALL",
}


def tables(db: Path) -> dict[str, list]:
    con = store.connect(str(db), read_only=True)
    try:
        return {name: con.execute(query).fetchall() for name, query in TABLES.items()}
    finally:
        con.close()


def split(source: Path, folder: Path, parts: int) -> None:
    """Cut a JSON Lines file into `parts` files of consecutive lines."""
    lines = source.read_text().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(parts):
        (folder / f"{source.stem}-{i}.jsonl").write_text("".join(lines[i * size:(i + 1) * size]))


@pytest.mark.parametrize("sample", ["arena-agents/debate-critic-run.jsonl", "chat-stream/tool-retry.jsonl",
                                    "triage-service/incomplete-runs.jsonl"])
def test_split_trace_equals_whole(prefect_server, tmp_path, sample):
    split(DATA / sample, tmp_path / "in", 3)
    whole = nightly(paths=[str(tmp_path / "in")], db=str(tmp_path / "whole.duckdb"), out=str(tmp_path / "o1"))
    # A tiny batch size puts each file in a batch of its own.
    parted = nightly(paths=[str(tmp_path / "in")], db=str(tmp_path / "parts.duckdb"), out=str(tmp_path / "o2"),
                     batch_mb=0.0001)
    assert "merge" in parted.timings and "merge" not in whole.timings
    assert tables(tmp_path / "parts.duckdb") == tables(tmp_path / "whole.duckdb")
    assert parted.traces_conflicting == 0 and parted.records_rejected == whole.records_rejected
    assert parted.records == parted.records_loaded + parted.records_quarantined + parted.records_rejected


def test_large_file_is_staged_in_parts(prefect_server, tmp_path):
    lines = (DATA / "support-bot" / "conversations.jsonl").read_text().splitlines()
    traces = [json.loads(line) for line in lines if line.strip()]
    body = []
    for i in range(40):
        for t in traces:
            body.append(json.dumps({**t, "trace_id": f"{t['trace_id']}-{i}"}))
        body.append("{not json")  # a bad line in every part: its line number must be the file's
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "big.jsonl").write_text("\n".join(body) + "\n")
    size_mb = (folder / "big.jsonl").stat().st_size / 1024 / 1024
    whole = nightly(paths=[str(folder)], db=str(tmp_path / "whole.duckdb"), out=str(tmp_path / "o1"))
    parted = nightly(paths=[str(folder)], db=str(tmp_path / "parts.duckdb"), out=str(tmp_path / "o2"),
                     batch_mb=size_mb / 7)
    assert tables(tmp_path / "parts.duckdb") == tables(tmp_path / "whole.duckdb")
    for db in ("whole", "parts"):
        con = store.connect(str(tmp_path / f"{db}.duckdb"), read_only=True)
        assert con.execute("SELECT count(*), sum(records), sum(loaded), sum(rejected) FROM ingested_files").fetchall() == [
            (1, len(body), len(body) - 40, 40)]
        bad_lines = [r[0] for r in con.execute("SELECT line FROM rejects ORDER BY line").fetchall()]
        assert bad_lines == [(i + 1) * (len(traces) + 1) for i in range(40)]
        lines_of = dict(con.execute("SELECT trace_id, line FROM traces").fetchall())
        assert lines_of[f"{traces[0]['trace_id']}-39"] == 39 * (len(traces) + 1) + 1
        con.close()
    assert parted.files_read == whole.files_read == 1
    # The same file again, unchanged: skipped whole, though it was read in parts.
    again = nightly(paths=[str(folder)], db=str(tmp_path / "parts.duckdb"), out=str(tmp_path / "o2"),
                    batch_mb=size_mb / 7)
    assert (again.files_skipped, again.records) == (1, 0)


def test_event_per_line_file_is_not_cut(tmp_path):
    """Only files of one whole trace per line are cut: an event-per-line file stays whole."""
    from lessonweaver import adapters, discover

    known = adapters.load_adapters()
    event_file = DATA / "arena-agents" / "debate-critic-run.jsonl"
    trace_file = DATA / "support-bot" / "conversations.jsonl"
    assert not adapters.one_trace_per_line(str(event_file), known)
    assert adapters.one_trace_per_line(str(trace_file), known)
    files = discover.discover([str(event_file), str(trace_file)])
    split = discover.split_large(files, 1000, lambda f: adapters.one_trace_per_line(f.path, known))
    assert [f.is_part for f in split if f.path == str(event_file)] == [False]
    parts = [f for f in split if f.path == str(trace_file)]
    assert len(parts) > 2 and all(p.end - p.start <= 1000 + 4000 for p in parts)
    assert b"".join(trace_file.read_bytes()[p.start:p.end] for p in parts) == trace_file.read_bytes()
