"""What each detector and each fact costs, in CPU seconds, on every shared folder of real traces.

    .venv/bin/python benchmarks/costs.py [--shared ../shared] [--repeat 3]

Each folder under ../shared/samples and ../shared/benchmarks (as benchmarks/findings.py reads them) is run
whole into a database of its own; then, over what it stored, the facts (exposures, facts, turns) and every
detector are run again one at a time, as a batch runs them, and timed: CPU (user and system time of this
process, DuckDB's threads included) and wall, medians of --repeat passes. The report gives, per part, the
CPU over all folders, its share of the detection step, and the folder where it costs most. A change that
adds a detector or a fact says in its commit what this prints for it. Progress on stderr, the report on
stdout.
"""

import argparse
import datetime as dt
import logging
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, not only the installed ones

from benchmarks.findings import NOT_TRACES, corpora  # noqa: E402
from lessonweaver import detectors, eventstore, privacy  # noqa: E402
from lessonweaver.config import Settings  # noqa: E402
from lessonweaver.pipeline import run_local  # noqa: E402
from lessonweaver.queries import execute, query  # noqa: E402

# the steps before the detectors, in the order detectors.detect runs them
FACTS = {"facts/exposures.sql": lambda con: execute(con, "facts/exposures.sql"),
         "exposures of kept traces": privacy.exposures_of_kept,
         "facts/facts.sql": lambda con: execute(con, "facts/facts.sql"),
         "facts/turns.sql": lambda con: execute(con, "facts/turns.sql")}


def cpu() -> float:
    """CPU seconds of this process so far, every thread's."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def timed(step) -> tuple[float, float]:
    """(CPU, wall) seconds of one call."""
    c, w = cpu(), time.perf_counter()
    step()
    return cpu() - c, time.perf_counter() - w


def stored(folder: Path, work: Path) -> Path:
    """The folder run whole into a database of its own, as findings.py runs it."""
    files = [str(p) for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in NOT_TRACES]
    db = work / f"{folder.parent.name}-{folder.name}.duckdb"
    run_local(Settings(paths=tuple(files), db=str(db), out=str(work / "reports" / folder.name), workers=1))
    return db


def costs(db: Path, found: list[detectors.Detector], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (CPU, wall) of every fact file and detector over what the database stored."""
    con = duckdb.connect(str(db))
    try:
        eventstore.attach(con, str(db))
        con.execute(query("macros.sql").replace("CREATE OR REPLACE MACRO", "CREATE OR REPLACE TEMP MACRO"))
        con.execute(detectors.DETECTIONS_TABLE.format(kind="TEMP", table="timed_detections"))
        passes: dict[str, list[tuple[float, float]]] = {}
        for _ in range(repeat):
            for name, step in FACTS.items():
                passes.setdefault(name, []).append(timed(lambda step=step: step(con)))
            for d in found:
                passes.setdefault(d.id, []).append(timed(lambda d=d: detectors.run_detector(con, d, "timed_detections")))
            con.execute("DROP TABLE facts")
        return {part: (statistics.median(c for c, _ in p), statistics.median(w for _, w in p)) for part, p in passes.items()}
    finally:
        con.close()


def report(per_folder: dict[str, dict[str, tuple[float, float]]], repeat: int) -> str:
    parts = list(next(iter(per_folder.values())))
    total = {p: sum(f[p][0] for f in per_folder.values()) for p in parts}
    wall = {p: sum(f[p][1] for f in per_folder.values()) for p in parts}
    step = sum(total.values()) or 1e-9
    lines = [f"lessonweaver detection cost on {len(per_folder)} shared folders, {dt.date.today()}, "
             f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"duckdb {duckdb.__version__}; medians of {repeat}",
             "",
             "| part | CPU s | wall s | share of detection CPU | costliest folder (CPU s) |",
             "|---|---|---|---|---|"]
    for p in sorted(parts, key=lambda p: -total[p]):
        worst = max(per_folder, key=lambda f: per_folder[f][p][0])
        lines.append(f"| {p} | {total[p]:.3f} | {wall[p]:.3f} | {100 * total[p] / step:.1f}% | "
                     f"{worst} ({per_folder[worst][p][0]:.3f}) |")
    lines.append(f"| all | {step:.3f} | {sum(wall.values()):.3f} | 100% | |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="the shared reference folder")
    p.add_argument("--repeat", type=int, default=3, help="timed passes per folder (default: 3)")
    args = p.parse_args()
    folders = corpora(args.shared)
    if not folders:
        print(f"no shared folders under {args.shared}", file=sys.stderr)
        return 2
    logging.getLogger("lessonweaver").setLevel(logging.WARNING)
    found = detectors.load_detectors()
    per_folder = {}
    with tempfile.TemporaryDirectory(prefix="lw-costs-") as work:
        for folder in folders:
            name = f"{folder.parent.name}/{folder.name}"
            print(f"{name}: running, then timing {len(found)} detectors and {len(FACTS)} fact files", file=sys.stderr)
            per_folder[name] = costs(stored(folder, Path(work)), found, args.repeat)
    print(report(per_folder, args.repeat))
    return 0


if __name__ == "__main__":
    sys.exit(main())
