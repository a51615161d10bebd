"""What a run costs before it does any work: start-up, and a re-run that finds nothing new.

Runs the installed `lessonweaver` command as a user types it, on the demo data in data/, through Prefect
(the background server the first run starts and the re-run reuses; and a temporary server per run,
LESSONWEAVER_PREFECT_IDLE=0) and with --no-prefect, and times a read-only command's start-up beside them.
A re-run with nothing new is recorded in-process on every path (Prefect is not started for it); a re-run
after one input file was touched (read again, its content known) shows what a run through the reused
server costs.
Medians of --repeat runs, every value shown. The background server is stopped at the end.

    .venv/bin/python benchmarks/startup.py [--repeat 3]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXE = Path(sys.executable).with_name("lessonweaver")


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([str(EXE), *args], capture_output=True, text=True, env=env, cwd=REPO)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"lessonweaver {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return seconds


def stop_background_server(home: Path) -> None:
    """Stop the server the first run left for later ones (its keeper's pid is in the state file)."""
    state = home / "lessonweaver-server.json"
    if state.exists():
        try:
            os.kill(json.loads(state.read_text())["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass


def measure(repeat: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    for _ in range(repeat):
        work = Path(tempfile.mkdtemp(prefix="lessonweaver-startup-"))
        env = {**os.environ, "PREFECT_HOME": str(work / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        data = Path(shutil.copytree(REPO / "data", work / "data"))
        touched = next(p for p in sorted(data.rglob("*")) if p.is_file() and p.name != "README.md")
        try:
            for label, extra, idle in (("through Prefect", [], "3600"), ("a temporary Prefect server", [], "0"),
                                       ("--no-prefect", ["--no-prefect"], "0")):
                db = work / label.strip("-").replace(" ", "-") / "lw.duckdb"
                args = ["run", str(data), "--db", str(db), "--out", str(db.parent / "out"), "-q", *extra]
                run_env = {**env, "LESSONWEAVER_PREFECT_IDLE": idle}
                found.setdefault(f"first run on data/, {label}", []).append(timed(args, run_env))
                found.setdefault(f"re-run, nothing new, {label}", []).append(timed(args, run_env))
                os.utime(touched)
                found.setdefault(f"re-run, one file touched, {label}", []).append(timed(args, run_env))
            found.setdefault("lessonweaver sql (read-only, one query)", []).append(
                timed(["sql", "--db", str(db), "SELECT count(*) FROM lessons"], env))
            found.setdefault("lessonweaver --help", []).append(timed(["--help"], env))
        finally:
            stop_background_server(work / "prefect-home")
            shutil.rmtree(work, ignore_errors=True)
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="runs of each kind (default: 3)")
    args = p.parse_args()
    print(f"lessonweaver start-up on {os.cpu_count()} cores, wall seconds, median of {args.repeat}:")
    for label, seconds in measure(args.repeat).items():
        values = ", ".join(f"{s:.2f}" for s in seconds)
        print(f"  {label:<56} {statistics.median(seconds):6.2f}   ({values})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
