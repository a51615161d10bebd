"""The same run on a real two-worker Dask cluster gives the same tables and lessons as one process."""

from pathlib import Path

import duckdb
import pytest

from conftest import REPO
from flows.nightly import nightly, task_runner

TABLES = {
    "traces": "SELECT trace_id, format, source, task, outcome, tenant, file, line, metadata, extra, content_hash FROM traces",
    "events": "SELECT * FROM events",
    "detections": "SELECT detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id FROM detections",
    "lessons": "SELECT * EXCLUDE (first_seen, last_seen) FROM lessons",
    "quarantine": "SELECT trace_id, file, line, reason FROM quarantine",
    "rejects": "SELECT file, line, record, reason FROM rejects",
    "ingested_files": "SELECT path, sha256, format, records, loaded, quarantined, rejected, note FROM ingested_files",
}


def state(db: Path, out: Path) -> dict:
    con = duckdb.connect(str(db), read_only=True)
    try:
        tables = {name: sorted(map(repr, con.execute(q).fetchall())) for name, q in TABLES.items()}
    finally:
        con.close()
    lessons = sorted((out / "lessons.jsonl").read_text().splitlines())
    return {**tables, "lessons.jsonl": [line.split('"first_seen"')[0] for line in lessons]}


@pytest.mark.slow
def test_dask_cluster_matches_a_single_process(prefect_server, tmp_path: Path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("LESSONWEAVER_TENANT_SALT", "dask-test")  # both databases hash tenants alike
    args = dict(paths=[str(REPO / "data")], batch_mb=1)  # ~20 small files: many one-file batches
    single = nightly(db=str(tmp_path / "one.duckdb"), out=str(tmp_path / "one"), **args)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        runner = task_runner("dask", dask_address=cluster.scheduler_address)
        spread = nightly.with_options(task_runner=runner)(
            db=str(tmp_path / "dask.duckdb"), out=str(tmp_path / "dask"), work_dir=str(tmp_path), **args)
    assert spread["status"] == single["status"] == "completed"
    assert state(tmp_path / "dask.duckdb", tmp_path / "dask") == state(tmp_path / "one.duckdb", tmp_path / "one")
