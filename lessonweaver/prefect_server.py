"""The Prefect API a run through Prefect reports to, with its start-up paid once rather than on every run.

Prefect's temporary server takes 15-20 s to start, on every run. So, unless PREFECT_API_URL (or the active
Prefect profile) names a server, lessonweaver starts Prefect's API in the background on the first run and
later runs reuse it: the same uvicorn process of Prefect's API as its temporary server (Prefect's database
in PREFECT_HOME keeps every run's history), in a session of its own so that a terminal's Ctrl-C does not
reach it. A small keeper process (this module run as a program) owns it and stops it once no run has used
it for LESSONWEAVER_PREFECT_IDLE seconds (default DEFAULT_IDLE); 0 goes back to a temporary server for
each run, stopped when the run ends.

Files in PREFECT_HOME: `lessonweaver-server.json` (its address, the keeper's pid, Prefect's version), a lock
held while one run checks or starts it (two runs at once start one server), and a lease each run holds
(shared) while it reports to the server: the keeper stops the server only when it can take the lease
alone, so a run longer than the idle time is never cut off.
"""

import argparse
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

DEFAULT_IDLE = 3600  # seconds without a run before the background server stops
STATE, LOCK, LEASE, LOG = ("lessonweaver-server.json", "lessonweaver-server.lock", "lessonweaver-server.lease",
                           "lessonweaver-server.log")


@dataclass(frozen=True)
class Api:
    """The API a run reports to, and what it took to have it."""
    url: str
    how: str  # 'named' (PREFECT_API_URL), 'reused', 'started' (kept for later runs) or 'temporary'
    seconds: float  # start-up: starting or reaching the server

    def describe(self, idle: int) -> str:
        """One line for the run's summary: which server, and how long start-up took."""
        if self.how == "named":
            return f"the server PREFECT_API_URL names, {self.url}"
        if self.how == "reused":
            return f"start-up {self.seconds:.1f} s: the background server at {self.url}, already running"
        if self.how == "started":
            return (f"start-up {self.seconds:.1f} s: a background server started at {self.url}; later runs "
                    f"reuse it (it stops after {_duration(idle)} unused; LESSONWEAVER_PREFECT_IDLE)")
        return (f"start-up {self.seconds:.1f} s: a temporary server, stopped with the run "
                "(LESSONWEAVER_PREFECT_IDLE=0)")


def _duration(seconds: int) -> str:
    return f"{seconds // 3600} h" if seconds % 3600 == 0 else f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def idle_seconds() -> int:
    """LESSONWEAVER_PREFECT_IDLE, checked: a whole number of seconds, 0 for a temporary server per run."""
    given = os.environ.get("LESSONWEAVER_PREFECT_IDLE", "").strip()
    if not given:
        return DEFAULT_IDLE
    if not given.isdigit():
        raise ValueError(f"LESSONWEAVER_PREFECT_IDLE must be a whole number of seconds (0: a temporary server "
                         f"for each run), not '{given}'")
    return int(given)


def home() -> Path:
    from prefect.settings import PREFECT_HOME

    folder = Path(PREFECT_HOME.value())
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as answer:  # noqa: S310 - our own 127.0.0.1 URL
            return answer.status == 200
    except (OSError, ValueError):
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_state(folder: Path) -> dict | None:
    try:
        return json.loads((folder / STATE).read_text())
    except (OSError, ValueError):
        return None


def _wait_healthy(url: str, pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if healthy(url, 1.0):
            return True
        if not _alive(pid):
            return False
        time.sleep(0.2)
    return False


def _start(folder: Path, idle: int) -> dict:
    """Start the keeper (and through it the server) in a session of its own; the state is written at once,
    so a run that comes while it starts waits for it instead of starting another."""
    import prefect

    port = _free_port()
    with open(folder / LOG, "ab") as log:
        keeper = subprocess.Popen(
            [sys.executable, "-m", "lessonweaver.prefect_server", "--port", str(port), "--idle", str(idle),
             "--home", str(folder)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
            env={**os.environ, "PREFECT_HOME": str(folder)})
    state = {"url": f"http://127.0.0.1:{port}/api", "pid": keeper.pid, "version": prefect.__version__}
    (folder / STATE).write_text(json.dumps(state))
    return state


@contextmanager
def api(log_line: "object | None" = None) -> Iterator[Api]:
    """The API for this run, set as Prefect's for the code inside: the one configured, else the background
    server (reused, or started), else (LESSONWEAVER_PREFECT_IDLE=0) a temporary one. `log_line` is called
    with a line before a start-up a person would otherwise wait on in silence."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, temporary_settings

    began = time.monotonic()
    if PREFECT_API_URL.value():
        yield Api(PREFECT_API_URL.value(), "named", 0.0)
        return
    idle = idle_seconds()
    if idle == 0:
        temporary_server()
        yield Api("", "temporary", time.monotonic() - began)
        return
    import prefect

    folder = home()
    with open(folder / LEASE, "a+") as lease:
        fcntl.flock(lease, fcntl.LOCK_SH)  # held while this run reports: the keeper leaves the server up
        os.utime(folder / LEASE)
        with open(folder / LOCK, "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            state = _read_state(folder)
            how = "reused"
            usable = (state is not None and state.get("version") == prefect.__version__ and _alive(state["pid"])
                      and _wait_healthy(state["url"], state["pid"], PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()))
            if not usable:
                if state is not None and _alive(state["pid"]):
                    os.kill(state["pid"], signal.SIGTERM)  # of another Prefect version, or not answering
                state, how = _start(folder, idle), "started"
                if log_line:  # once it is a process of its own: a Ctrl-C from here on leaves it to the next run
                    log_line("starting Prefect's server in the background; later runs reuse it")
                if not _wait_healthy(state["url"], state["pid"], PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()):
                    raise RuntimeError(f"Prefect's server did not start within "
                                       f"{PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()} s "
                                       f"(its log: {folder / LOG})")
            fcntl.flock(lock, fcntl.LOCK_UN)
        with temporary_settings(updates={PREFECT_API_URL: state["url"]}):
            yield Api(state["url"], how, time.monotonic() - began)


def temporary_server() -> None:
    """Start Prefect's temporary server now, when no PREFECT_API_URL names a server, so that a Ctrl-C stops
    the flow first and the server last.

    Prefect starts it as a child in our process group, where a terminal's Ctrl-C reached it too: it stopped
    while the interrupted flow was still reporting its end, and Prefect's clients retried the gone server for
    minutes. Started here from a thread that blocks SIGINT, the server inherits the block and sees no Ctrl-C;
    this process alone handles it, and Prefect stops the server (SIGTERM) as the process exits, after its log
    and event clients have flushed. The flow finds this server running and uses it. The thread keeps a
    Ctrl-C during start-up prompt: the server is then stopped as soon as it is a process."""
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ALLOW_EPHEMERAL_MODE

    if PREFECT_API_URL.value() or not PREFECT_SERVER_ALLOW_EPHEMERAL_MODE.value():
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # the one Prefect's clients use when no PREFECT_API_URL is set
    failed: list[BaseException] = []
    done = threading.Event()

    def start() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            server.start()
        except BaseException as exc:  # handed to the main thread
            failed.append(exc)
        finally:
            done.set()

    # Waits on an event, with a timeout: an untimed wait may not wake for a Ctrl-C, and one on Thread.join
    # that a Ctrl-C breaks marks the thread as ended while it runs (Python 3.11), which aborts the exit.
    threading.Thread(target=start, name="prefect-server-start", daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        deadline = time.monotonic() + 5
        while server.server_process is None and not done.is_set() and time.monotonic() < deadline:
            time.sleep(0.05)
        server.stop()
        done.wait(5)  # it ends on finding the server gone: no thread of ours left running as the process exits
        raise
    if failed:
        raise failed[0]


# The keeper: this module run as a program, in the server's session.

def keep(port: int, idle: int, folder: Path) -> int:
    """Run Prefect's API on `port` (as Prefect runs its temporary server) until it has been unused for
    `idle` seconds, or until SIGTERM; then stop it and remove the state that names it."""
    import prefect

    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent), "--factory",
         "prefect.server.api.server:create_app", "--host", "127.0.0.1", "--port", str(port), "--log-level",
         "error", "--lifespan", "on"],
        env={**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"})
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    check = max(0.5, min(30.0, idle / 4))
    last_used = time.time()
    try:
        with open(folder / LEASE, "a+") as lease:
            while server.poll() is None and not stopping.wait(check):
                try:
                    fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    last_used = time.time()  # a run holds the lease
                    continue
                try:
                    last_used = max(last_used, os.stat(folder / LEASE).st_mtime)
                    if time.time() - last_used >= idle:  # stopped with the lease held: no run starts on it meanwhile
                        _forget(folder, port)
                        _stop(server)
                finally:
                    fcntl.flock(lease, fcntl.LOCK_UN)
    finally:
        _stop(server)
        _forget(folder, port)
    return 0


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _forget(folder: Path, port: int) -> None:
    """Remove the state, if it still names this server (a newer one may have replaced it)."""
    state = _read_state(folder)
    if state and state.get("url") == f"http://127.0.0.1:{port}/api":
        (folder / STATE).unlink(missing_ok=True)


if __name__ == "__main__":
    args = argparse.ArgumentParser(description="Keep Prefect's API running while lessonweaver runs use it.")
    args.add_argument("--port", type=int, required=True)
    args.add_argument("--idle", type=int, required=True)
    args.add_argument("--home", type=Path, required=True)
    given = args.parse_args()
    sys.exit(keep(given.port, given.idle, given.home))
