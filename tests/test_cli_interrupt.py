"""Ctrl-C, as a terminal sends it (SIGINT to the whole process group), ends a run within seconds on both
paths: one line `lessonweaver: interrupted`, exit 130, no traceback, nothing left running, and the next
run gives what an uninterrupted run gives."""

import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, run_state

NIGHT = "2026-11-29"
STARTED_BOUND = 300  # seconds for the run to reach the moment the signal is sent (a busy machine included)
ENDED_BOUND = 30  # seconds after the signal by which the run must have ended: a hang, not a speed, is caught


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The demo data three times over (read in many small batches one at a time, see _argv: the run is
    still staging when the first batch is done); one folder, since the tables name the files."""
    folder = tmp_path_factory.mktemp("input")
    for i in range(3):
        shutil.copytree(REPO / "data", folder / f"copy-{i}")
    return folder


def _argv(folder: Path, db: Path, out: Path, *more: str) -> list[str]:
    exe = Path(sys.executable).with_name("lessonweaver")
    return [str(exe), "run", str(folder), "--db", str(db), "--out", str(out), "--night", NIGHT,
            "--workers", "1", "--batch-mb", "0.05", *more]


def _env(tmp_path: Path) -> dict[str, str]:
    """No PREFECT_API_URL, so the default path starts its temporary server; a Prefect home of its own; the
    progress lines the signal waits for (conftest quiets Prefect's)."""
    env = {**os.environ, "LESSONWEAVER_TENANT_SALT": "interrupt-test", "PREFECT_HOME": str(tmp_path / "prefect"),
           "PREFECT_LOGGING_LEVEL": "INFO"}
    env.pop("PREFECT_API_URL", None)
    return env


def _group_gone(pgid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _interrupt_at(argv: list[str], env: dict[str, str], moment: str) -> tuple[int, str]:
    """Start the run in a session of its own, send SIGINT to its process group when a stderr line holds
    `moment`, and return its exit code and stderr. Fails when it has not ended ENDED_BOUND s later."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()
    seen: list[str] = []

    def read() -> None:
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + STARTED_BOUND
        while True:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            assert line is not None, f"the run ended before '{moment}':\n{''.join(seen)}"
            seen.append(line)
            if moment in line:
                break
        os.killpg(proc.pid, signal.SIGINT)
        try:
            code = proc.wait(timeout=ENDED_BOUND)
        except subprocess.TimeoutExpired:
            while not lines.empty():
                seen.append(lines.get() or "")
            pytest.fail(f"still running {ENDED_BOUND} s after Ctrl-C:\n{''.join(seen)}")
        while (line := lines.get(timeout=10)) is not None:
            seen.append(line)
        assert _group_gone(proc.pid, 10), "a process of the run (Prefect's server?) outlived it"
        return code, "".join(seen)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


@pytest.fixture(scope="module")
def uninterrupted(folder, tmp_path_factory) -> dict:
    """What a run without Ctrl-C gives, in this process's way (the default path gives the same tables)."""
    where = tmp_path_factory.mktemp("whole")
    done = subprocess.run(_argv(folder, where / "lw.duckdb", where / "reports", "--no-prefect", "-q"),
                          capture_output=True, text=True, timeout=600, env=_env(where))
    assert done.returncode == 0, done.stderr
    return run_state(where / "lw.duckdb", where / "reports")


@pytest.mark.slow
@pytest.mark.parametrize("path, moment", [
    ("prefect", "Starting temporary server"),  # Ctrl-C while Prefect's server starts
    ("prefect", "staged"),  # Ctrl-C in the flow, the first batch staged and more to come
    ("no-prefect", "staged"),
], ids=["prefect-start-up", "prefect-staging", "no-prefect-staging"])
def test_ctrl_c_ends_the_run_within_seconds_and_the_rerun_recovers(uninterrupted, folder, path, moment, tmp_path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    more = ("--no-prefect",) if path == "no-prefect" else ()
    code, err = _interrupt_at(_argv(folder, db, out, *more), _env(tmp_path), moment)
    assert code == 130, err
    assert "lessonweaver: interrupted" in err.splitlines(), err
    assert "Traceback" not in err and "lessonweaver: failed" not in err, err
    again = subprocess.run(_argv(folder, db, out, "--no-prefect", "-q"), capture_output=True, text=True,
                           timeout=600, env=_env(tmp_path))
    assert again.returncode == 0, again.stderr
    assert run_state(db, out) == uninterrupted
