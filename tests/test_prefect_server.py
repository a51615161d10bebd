"""The default (Prefect) path pays Prefect's start-up once: the first run starts Prefect's API in the
background, later runs reuse it, and the summary says which and how long start-up took. The server
outlives a run (and a Ctrl-C of it), stops itself once unused for LESSONWEAVER_PREFECT_IDLE seconds, and
stops on SIGTERM. Real runs of the installed command, a real server; every server a test starts is
stopped by the test (its keeper's pid, from the state file)."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO

INPUT = REPO / "data" / "support-bot"
GONE_BOUND = 120  # seconds within which a stopped or idle server must be gone: a hang, not a speed


def env(home: Path, idle: str) -> dict[str, str]:
    found = {**os.environ, "PREFECT_HOME": str(home), "LESSONWEAVER_PREFECT_IDLE": idle}
    found.pop("PREFECT_API_URL", None)
    return found


def run(tmp_path: Path, home: Path, idle: str, given: Path = INPUT) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lessonweaver")
    return subprocess.run([str(exe), "run", str(given), "--db", str(tmp_path / "lw.duckdb"), "--out",
                           str(tmp_path / "reports"), "-q"], capture_output=True, text=True, timeout=600,
                          env=env(home, idle))


def prefect_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("prefect:")]
    return line


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def flow_runs(url: str) -> int:
    ask = urllib.request.Request(f"{url}/flow_runs/count", data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(ask, timeout=10) as r:
        return json.loads(r.read())


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def gone(home: Path, state: dict) -> bool:
    """Whether the server and its keeper ended and the state naming them went, within GONE_BOUND."""
    deadline = time.monotonic() + GONE_BOUND
    while time.monotonic() < deadline:
        if not alive(state["pid"]) and not answers(state["url"]) and not (home / "lessonweaver-server.json").exists():
            return True
        time.sleep(0.5)
    return False


@pytest.fixture
def home(tmp_path: Path):
    """A Prefect home of the test's own; whatever server was started in it is stopped at the end."""
    folder = tmp_path / "prefect"
    yield folder
    state = folder / "lessonweaver-server.json"
    if state.exists():
        pid = json.loads(state.read_text())["pid"]
        if alive(pid):
            os.kill(pid, signal.SIGTERM)


@pytest.mark.slow
def test_the_first_run_starts_the_server_and_the_next_reuses_it(tmp_path: Path, home: Path):
    given = Path(shutil.copytree(INPUT, tmp_path / "input"))
    first = prefect_line(run(tmp_path, home, "600", given))
    m = re.fullmatch(r"prefect: +start-up [\d.]+ s: a background server started at (http://127\.0\.0\.1:\d+/api); "
                     r"later runs reuse it \(it stops after 10 min unused; LESSONWEAVER_PREFECT_IDLE\)", first)
    assert m, first
    url = m[1]
    state = json.loads((home / "lessonweaver-server.json").read_text())
    assert state["url"] == url and alive(state["pid"]) and answers(url)  # it outlived the run
    touched = next(p for p in given.rglob("*") if p.is_file())
    os.utime(touched, (time.time(), time.time() + 5))  # a file to read again: the run is a flow again
    again = run(tmp_path, home, "600", given)
    assert re.fullmatch(rf"prefect: +start-up [\d.]+ s: the background server at {re.escape(url)}, already running",
                        prefect_line(again)), again.stdout
    assert flow_runs(url) == 2  # both runs are flow runs in its history
    os.kill(state["pid"], signal.SIGTERM)
    assert gone(home, state), "SIGTERM did not stop the server"


def test_a_run_with_nothing_to_read_does_not_start_prefect(tmp_path: Path, home: Path):
    """Nothing new under the inputs, over lessons and reports made from what is stored: the run is recorded
    in this process, and Prefect is neither started nor loaded (no home of its own is made)."""
    exe = Path(sys.executable).with_name("lessonweaver")
    subprocess.run([str(exe), "run", str(INPUT), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "reports"),
                    "-q", "--no-prefect"], check=True, capture_output=True, env=env(home, "600"))
    done = run(tmp_path, home, "600")
    assert prefect_line(done) == "prefect:    not started: nothing new to read, so the run was recorded in-process"
    assert "nothing new" in done.stdout and "in-process" in done.stdout
    assert not home.exists()


@pytest.mark.slow
def test_an_unused_server_stops_itself(tmp_path: Path, home: Path):
    prefect_line(run(tmp_path, home, "3"))
    state = json.loads((home / "lessonweaver-server.json").read_text())
    assert gone(home, state), "the server outlived its idle time"
    # the next run with something to read starts one again
    assert "a background server started" in prefect_line(run(tmp_path / "next", home, "3"))


def test_a_wrong_idle_time_is_one_line_before_prefect_loads(tmp_path: Path, home: Path):
    done = run(tmp_path, home, "soon")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("lessonweaver: error: LESSONWEAVER_PREFECT_IDLE must be a whole number of seconds "
                           "(0: a temporary server for each run), not 'soon'\n")
    assert not home.exists()


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["starting Prefect's server in the background", "staged"],
                         ids=["server-start-up", "staging"])
def test_ctrl_c_ends_the_run_and_leaves_the_server_for_the_next(tmp_path: Path, home: Path, moment: str):
    """SIGINT to the run's process group, while the server starts or while the flow stages: the run ends
    within seconds with exit 130 (tests/test_cli_interrupt.py's bound), and the server, in a session of its
    own, serves the next run."""
    from test_cli_interrupt import _argv, _interrupt_at

    folder = tmp_path / "input"
    for i in range(2):
        shutil.copytree(REPO / "data", folder / f"copy-{i}")
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    code, err = _interrupt_at(_argv(folder, db, out), {**env(home, "600"), "PREFECT_LOGGING_LEVEL": "INFO"}, moment)
    assert code == 130 and "lessonweaver: interrupted" in err.splitlines(), err
    assert "Traceback" not in err and "lessonweaver: failed" not in err, err
    done = subprocess.run(_argv(folder, db, out, "-q"), capture_output=True, text=True, timeout=600, env=env(home, "600"))
    assert "the background server at http://127.0.0.1:" in prefect_line(done)
