"""The peer project (lessonweaver 0.4.1 on PyPI, dgenio/lessonweaver: pure Python, one process) over the same
trace files, through its own Python API, for CPU and peak memory beside ours (issue #46).

    .venv/bin/python benchmarks/peer.py /tmp/lessonweaver-bench/lessonweaver-300000-seed7-8files-diverse

The peer is installed into a virtualenv of its own (`--venv`, made on first use with pip from the package
index: it has the same import name as ours). A driver run there reads every line of every `.jsonl` file,
imports it with the peer's `DictTraceImporter`, scrubs it with `TraceSanitizer` (its `--sanitize`),
detects with `LessonDetector` and clusters all candidates with `LessonClusterer`, as its CLI does for one
bundle. Printed: the machine and date, traces read and refused, candidates per kind, clusters, and the
driver's wall time, CPU (user + system) and peak RSS, measured from here on the child process.
"""

import argparse
import datetime as dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEER = "lessonweaver==0.4.1"

# Runs inside the peer's virtualenv: its package, never ours.
DRIVER = r'''
import collections, json, sys
from lessonweaver.clustering import LessonClusterer
from lessonweaver.detection import LessonDetector
from lessonweaver.importers import DictTraceImporter
from lessonweaver.sanitization import TraceSanitizer

importer, sanitizer, detector = DictTraceImporter(), TraceSanitizer(), LessonDetector()
read = refused = 0
candidates, kinds = [], collections.Counter()
for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            read += 1
            try:
                bundle = importer.import_trace(json.loads(line))
            except ValueError:
                refused += 1
                continue
            for candidate in detector.detect(sanitizer.sanitize(bundle)):
                candidates.append(candidate)
                kinds[candidate.summary] += 1  # one fixed summary per rule of the peer's
clusters = LessonClusterer().cluster(candidates)
print(json.dumps({"read": read, "refused": refused, "candidates": len(candidates),
                  "kinds": dict(kinds.most_common()), "clusters": len(clusters)}))
'''


def peer_python(venv: Path) -> Path:
    """The peer's interpreter, installing it into `venv` on first use."""
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"peer: installing {PEER} into {venv}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", PEER], check=True)
    return python


def measure(python: Path, files: list[Path]) -> dict:
    """Run the driver once; what it printed, with its wall time, CPU and peak RSS."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(DRIVER)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run([str(python), handle.name, *map(str, files)], capture_output=True, text=True,
                              cwd=tempfile.gettempdir())  # not this checkout: its package would shadow the peer's
    finally:
        os.unlink(handle.name)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"peer: the driver failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out.update(wall=wall, cpu=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
               peak_mb=after.ru_maxrss / 1024)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", type=Path, help="a folder of lessonweaver-format .jsonl files (benchmarks/generate.py)")
    p.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "lessonweaver-peer-0.4.1",
                   help="where the peer is installed (default: %(default)s)")
    args = p.parse_args()
    files = sorted(args.corpus.glob("*.jsonl"))
    if not files:
        print(f"peer: no .jsonl files in {args.corpus}", file=sys.stderr)
        return 2
    r = measure(peer_python(args.venv), files)
    size = sum(f.stat().st_size for f in files) / 1e6
    print(f"{platform.machine()}, {os.cpu_count()} cores, {dt.datetime.now():%Y-%m-%d %H:%M}: {PEER} over "
          f"{len(files)} files, {size:,.0f} MB")
    print(f"traces {r['read']:,} read, {r['refused']:,} refused by its validation; {r['candidates']:,} candidates "
          f"in {r['clusters']:,} clusters")
    print("candidates: " + ", ".join(f"{k} {v:,}" for k, v in r["kinds"].items()))
    print(f"wall {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, peak RSS {r['peak_mb']:,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
