"""The same run on a real two-worker Dask cluster gives the same tables and lessons as one process."""

from pathlib import Path

import pytest

from conftest import REPO, run_state
from flows.nightly import nightly, task_runner


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
    assert run_state(tmp_path / "dask.duckdb", tmp_path / "dask") == run_state(tmp_path / "one.duckdb", tmp_path / "one")
