"""The same run on a real two-worker Dask cluster gives the same tables and lessons as one process,
through Prefect (prefect-dask) and without it (dask.distributed directly)."""

from pathlib import Path

import pytest

from conftest import REPO, run_state
from flows.nightly import nightly
from lessonweaver import options, pipeline


@pytest.mark.slow
def test_dask_cluster_matches_a_single_process(prefect_server, tmp_path: Path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setenv("LESSONWEAVER_TENANT_SALT", "dask-test")  # every database hashes tenants alike
    args = dict(paths=[str(REPO / "data")], batch_mb=1)  # ~20 small files: many one-file batches
    single = nightly(db=str(tmp_path / "one.duckdb"), out=str(tmp_path / "one"), **args)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        spread = nightly(db=str(tmp_path / "dask.duckdb"), out=str(tmp_path / "dask"), work_dir=str(tmp_path),
                         runner="dask", dask_address=cluster.scheduler_address, **args)
        local = pipeline.run_local(options.to_settings(
            dict(db=str(tmp_path / "local.duckdb"), out=str(tmp_path / "local"), work_dir=str(tmp_path),
                 runner="dask", dask_address=cluster.scheduler_address, **args)))
    assert spread.status == single.status == local.status == "completed"
    expected = run_state(tmp_path / "one.duckdb", tmp_path / "one")
    assert run_state(tmp_path / "dask.duckdb", tmp_path / "dask") == expected
    assert run_state(tmp_path / "local.duckdb", tmp_path / "local") == expected
