"""Kill the run at each crash point, run again, and get what an uninterrupted run gives."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_state
from lessonweaver.crashpoints import POINTS


def run_cli(db: Path, out: Path, crash_at: str | None = None) -> subprocess.CompletedProcess:
    from prefect.settings import PREFECT_API_URL

    # A fixed tenant salt: each new database otherwise makes its own, and tenant hashes would differ.
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "LESSONWEAVER_TENANT_SALT": "crash-test"}
    env.pop("LESSONWEAVER_CRASH_AT", None)
    if crash_at:
        env["LESSONWEAVER_CRASH_AT"] = crash_at
    exe = Path(sys.executable).with_name("lessonweaver")
    return subprocess.run([str(exe), "run", str(REPO / "data"), "--db", str(db), "--out", str(out), "-q"],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def uninterrupted(prefect_server, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("clean")
    done = run_cli(folder / "lw.duckdb", folder / "reports")
    assert done.returncode == 0, done.stderr
    return run_state(folder / "lw.duckdb", folder / "reports")


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_a_crash_then_a_rerun_equals_an_uninterrupted_run(uninterrupted, point: str, tmp_path: Path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    crashed = run_cli(db, out, crash_at=point)
    assert crashed.returncode == 86, crashed.stderr
    again = run_cli(db, out)
    assert again.returncode == 0, again.stderr
    assert run_state(db, out) == uninterrupted
    assert not list(out.glob(".pending-*"))
