"""What the privacy scan costs: stage a corpus with and without it, in the same invocation.

    python benchmarks/scan_cost.py CORPUS_DIR [--repeat 3]

Staging is the per-file work of a run (read, adapt, screen, detect) in one in-memory DuckDB; the scan
(secret and PII patterns plus validators, and redaction) is the only difference between the two
timings. Prints the median of each and their ratio.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

from lessonweaver import adapters, detectors, discover, privacy, read
from lessonweaver.batch import connect_staging
from lessonweaver.config import Settings


def stage_once(files: list, scan: bool) -> tuple[float, dict]:
    con = connect_staging(Settings())
    started = time.perf_counter()
    read.read_files(con, files)
    if scan:
        privacy.scan(con)
    else:
        con.execute("CREATE OR REPLACE TABLE record_findings (file_id BIGINT, record BIGINT, category VARCHAR, kind VARCHAR)")
    adapters.adapt(con, adapters.load_adapters())
    privacy.screen(con)
    detectors.detect(con, detectors.load_detectors())
    elapsed = time.perf_counter() - started
    counts = dict(zip(("traces", "quarantined", "redacted_records"), con.execute(
        "SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM quarantine), "
        "(SELECT count(DISTINCT (file_id, record)) FROM record_findings WHERE category = 'pii')").fetchone()))
    con.close()
    return elapsed, counts


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("corpus", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    files = discover.discover([str(args.corpus)])
    megabytes = sum(f.size for f in files) / 1e6
    timings: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(args.repeat):
        for scan in (False, True):
            elapsed, counts = stage_once(files, scan)
            timings[scan].append(elapsed)
            if scan:
                last = counts
    without, with_scan = statistics.median(timings[False]), statistics.median(timings[True])
    print(f"corpus: {len(files)} files, {megabytes:.0f} MB, {last['traces']} traces loaded, "
          f"{last['quarantined']} quarantined, {last['redacted_records']} records with PII")
    print(f"staging without scan: {without:.2f} s (median of {args.repeat})")
    print(f"staging with scan:    {with_scan:.2f} s (median of {args.repeat})")
    print(f"scan adds {100 * (with_scan / without - 1):.0f}% ({with_scan / without:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
