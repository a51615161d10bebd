"""Scheduling: `lessonweaver schedule` against a real `prefect server start`, a real process worker, a real run.

Also checks that flows/prefect.yaml is a valid deployment file and that `prefect deploy` registers it.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest
import yaml

from conftest import REPO
from lessonweaver.cli import main

BIN = Path(sys.executable).parent
PREFECT_FILE = REPO / "flows" / "prefect.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    """A long-running Prefect process in its own process group, so it and its children can be stopped."""
    with open(log, "wb") as fh:
        return subprocess.Popen(args, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def wait_healthy(url: str, server: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, "prefect server exited:\n" + log.read_text(errors="replace")[-3000:]
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError("prefect server did not become healthy:\n" + log.read_text(errors="replace")[-3000:])


def run(args: list[str], env: dict, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def test_prefect_yaml_is_a_valid_deployment_file():
    from prefect.cli.deploy._models import PrefectYamlModel
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.flows import load_flow_from_entrypoint

    raw = yaml.safe_load(PREFECT_FILE.read_text())
    model = PrefectYamlModel.model_validate(raw)  # what `prefect deploy` validates the file with
    [deployment] = model.deployments
    assert deployment.name == "nightly" and deployment.work_pool.name == "lessonweaver"
    [schedule] = raw["deployments"][0]["schedules"]
    assert CronSchedule(cron=schedule["cron"], timezone=schedule["timezone"]).cron == "0 2 * * *"
    flow = load_flow_from_entrypoint(str(REPO / deployment.entrypoint))
    assert flow.name == "lessonweaver-nightly"
    assert set(raw["deployments"][0]["parameters"]) <= set(flow.parameters.properties)


def test_schedule_without_a_server_is_one_clear_line(tmp_path: Path, monkeypatch, capsys):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    (tmp_path / "in").mkdir()
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        monkeypatch.delenv("PREFECT_API_URL", raising=False)
        assert main(["schedule", str(tmp_path / "in"), "--db", str(tmp_path / "lw.duckdb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "set PREFECT_API_URL" in err and "cannot schedule" in err


@pytest.mark.slow
def test_a_scheduled_deployment_runs_on_a_process_worker(tmp_path: Path):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    home = tmp_path / "prefect-home"
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    base.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_UI_ENABLED="false")
    client_env = {**base, "PREFECT_API_URL": api, "PREFECT_WORKER_QUERY_SECONDS": "2",
                  "PREFECT_LOGGING_LEVEL": "INFO"}
    shutil.copytree(REPO / "data", tmp_path / "in")
    server = worker = None
    try:
        server = start([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                       base, tmp_path / "server.log", tmp_path)
        wait_healthy(api, server, tmp_path / "server.log")

        # Relative paths, from tmp_path: the deployment must carry them absolute.
        done = run([str(BIN / "lessonweaver"), "schedule", "in", "--db", "db/lw.duckdb", "--out", "out",
                    "--cron", "15 3 * * 1", "--timezone", "Europe/Madrid", "--name", "test-nightly"],
                   client_env, tmp_path)
        assert done.returncode == 0, done.stderr
        assert "work pool:  lessonweaver (process, created)" in done.stdout

        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            deployment = client.read_deployment_by_name("lessonweaver-nightly/test-nightly")
            [schedule] = deployment.schedules
            assert (schedule.schedule.cron, schedule.schedule.timezone, schedule.active) == ("15 3 * * 1", "Europe/Madrid", True)
            assert deployment.work_pool_name == "lessonweaver"
            assert client.read_work_pool("lessonweaver").type == "process"
            assert deployment.parameters == {"paths": [str(tmp_path / "in")], "db": str(tmp_path / "db" / "lw.duckdb"),
                                             "out": str(tmp_path / "out"), "resolve_after": 7}
            assert deployment.entrypoint == "flows/nightly.py:nightly"

            worker = start([str(BIN / "prefect"), "worker", "start", "--pool", "lessonweaver", "--type", "process"],
                           client_env, tmp_path / "worker.log", tmp_path)
            flow_run = client.create_flow_run_from_deployment(deployment.id)
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                state = client.read_flow_run(flow_run.id).state
                if state is not None and state.is_final():
                    break
                assert worker.poll() is None, "worker exited:\n" + (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
                time.sleep(2)
            log = (tmp_path / "worker.log").read_text(errors="replace")
            assert state is not None and state.is_completed(), f"{state}\n{log[-4000:]}"
        stop(worker)
        worker = None

        assert (tmp_path / "out" / "lessons.md").is_file()
        con = duckdb.connect(str(tmp_path / "db" / "lw.duckdb"), read_only=True)
        try:
            assert con.execute("SELECT count(*), min(status) FROM runs").fetchone() == (1, "completed")
            assert con.execute("SELECT count(*) FROM lessons").fetchone()[0] > 0
        finally:
            con.close()

        # The same deployment from flows/prefect.yaml, as `prefect deploy` registers it from the project folder.
        deployed = run([str(BIN / "prefect"), "--no-prompt", "deploy", "--prefect-file", str(PREFECT_FILE),
                        "--name", "nightly"], client_env, REPO)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        with temporary_settings({PREFECT_API_URL: api}), get_client(sync_client=True) as client:
            from_yaml = client.read_deployment_by_name("lessonweaver-nightly/nightly")
            [schedule] = from_yaml.schedules
            assert (schedule.schedule.cron, schedule.schedule.timezone) == ("0 2 * * *", "UTC")
            assert from_yaml.work_pool_name == "lessonweaver"
            assert from_yaml.pull_steps == [{"prefect.deployments.steps.set_working_directory": {"directory": str(REPO)}}]
            assert from_yaml.parameters["paths"] == [str(REPO / "data")]
            assert from_yaml.parameters["db"] == str(REPO / "lessonweaver.duckdb")
            client.delete_deployment(from_yaml.id)
    finally:
        stop(worker)
        stop(server)
