"""A trace whose records land in different batches (event-per-line formats gather a trace across files)
is staged again as a whole: the result equals staging all its files in one batch."""

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
    assert "merge" in parted["timings"] and "merge" not in whole["timings"]
    assert tables(tmp_path / "parts.duckdb") == tables(tmp_path / "whole.duckdb")
    assert parted["traces_conflicting"] == 0 and parted["records_rejected"] == whole["records_rejected"]
    assert parted["records"] == parted["records_loaded"] + parted["records_quarantined"] + parted["records_rejected"]
