"""A run watched on a terminal shows a progress bar on stderr (batches, megabytes, time left); a run whose
stderr is a file or a pipe writes the log lines alone."""

import os
import pty
import select
import subprocess
import sys

from conftest import REPO


ARGS = [sys.executable, "-m", "lessonweaver.cli", "run", "data/", "--no-prefect", "--batch-mb", "0.02", "--db"]
ENV = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}


def options(tmp_path) -> list[str]:
    return [str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out")]


def test_a_terminal_gets_a_bar(tmp_path):
    leader, follower = pty.openpty()
    proc = subprocess.Popen(ARGS + options(tmp_path), cwd=REPO, stdout=subprocess.PIPE, stderr=follower, text=True,
                            env=ENV)
    os.close(follower)
    shown = b""
    while True:  # read as it comes: a terminal's buffer is small, and a full one stops the writer
        ready, _, _ = select.select([leader], [], [], 1.0)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the writer has gone
            break
        shown += chunk
        if not ready and proc.poll() is not None:
            break
    os.close(leader)
    stdout = proc.stdout.read()
    assert proc.wait(timeout=60) == 0
    text = shown.decode("utf-8", "replace")
    assert "staging" in text and "rendering" in text
    assert " batches, " in text and " MB" in text and "left" in text
    assert "21 files found" in text  # the log lines are printed above the bar
    assert "completed" in stdout


def test_a_pipe_gets_log_lines(tmp_path):
    done = subprocess.run(ARGS + options(tmp_path), cwd=REPO, capture_output=True, text=True, timeout=300, env=ENV)
    assert done.returncode == 0
    assert "21 files found" in done.stderr and "staged" in done.stderr
    assert "\x1b[" not in done.stderr and "batches, " not in done.stderr


def test_the_log_says_how_the_memory_limit_is_shared(tmp_path):
    env = {**ENV, "LESSONWEAVER_MEMORY_LIMIT": "1000MiB"}
    done = subprocess.run(ARGS + options(tmp_path) + ["--workers", "2"], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    # two batches at once get half the limit each, and so does the load after them (config.database_memory_limit)
    assert "staging 2 at a time, each with " in done.stderr and " and 500MiB of memory" in done.stderr
    assert "weaving lessons, within 500MiB of memory" in done.stderr
    # one batch (no --batch-mb): it has the cores and the limit to itself
    alone = subprocess.run(ARGS[:-3] + ["--db"] + options(tmp_path / "alone") + ["--workers", "2"], cwd=REPO,
                           capture_output=True, text=True, timeout=300, env=env)
    assert alone.returncode == 0, alone.stderr
    assert "staging 1 at a time, each with " in alone.stderr and " and 1000MiB of memory" in alone.stderr
