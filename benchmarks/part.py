"""Where one batch's time goes: the first part of a file, staged step by step, against its typed parse.

    .venv/bin/python benchmarks/part.py FILE [--bytes 64MB] [--repeat 3]

A run cuts a large one-trace-per-line file into parts of the batch size (64 MB) and stages each in its own
in-memory DuckDB with its share of the threads (one on two cores with two workers). This takes the first
such part of FILE, times the typed parse of its bytes (the bare scan of benchmarks/run.py, on the same
threads) and then every step of staging it (batch.stage_in and the Parquet outputs), each detector
alone on what was staged, and a few single passes any design pays (FLOOR). Every figure is also given
as a multiple of the typed parse, the yardstick of issue #18. Medians of --repeat passes; progress on stderr, the report on stdout.
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, not only the installed ones

from benchmarks.run import SCAN_QUERIES, sniff
from lessonweaver import adapters, batch, detectors, discover, queries
from lessonweaver.config import Settings, batch_threads, memory_bytes
from lessonweaver.words import plural


def first_part(path: str, max_bytes: int) -> discover.InputFile:
    """The first part a run would stage of `path` (the whole file when it is small or not line-split)."""
    files = discover.discover([path])
    known = adapters.load_adapters()
    parts = discover.split_large(files, max_bytes, lambda f: adapters.one_trace_per_line(f.path, known))
    return parts[0]


def part_bytes(part: discover.InputFile) -> bytes:
    with open(part.path, "rb") as fh:
        fh.seek(part.start)
        return fh.read((part.end or part.size) - part.start)


def typed_parse(path: str, fmt: str, threads: int) -> tuple[float, int]:
    """The bare scan of one file on `threads` threads: (seconds, events)."""
    con = duckdb.connect(config={"threads": threads})
    try:
        sql = SCAN_QUERIES[fmt].format(files="['" + path.replace("'", "''") + "']")
        started = time.perf_counter()
        events = con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]
        return time.perf_counter() - started, events
    finally:
        con.close()


# Passes over the staged part that any design of the same product pays: the floor under the steps above.
FLOOR = {
    "write the events as Parquet": "COPY events TO '{folder}/floor-events.parquet' (FORMAT parquet)",
    "one ordered pass over the events": "SELECT count(*) FROM (SELECT lag(type) OVER (PARTITION BY trace_id "
                                        "ORDER BY seq) AS before FROM events) WHERE before = 'error'",
    "one regular expression over all content": "SELECT count(*) FROM events "
                                               "WHERE regexp_matches(content, '(?i)\\b(wrong|instead|not what)\\b')",
}


def stage_steps(part: discover.InputFile, settings: Settings, found: list[detectors.Detector]) -> dict[str, float]:
    """One staging of the part as a batch stages it, timed per step; then each detector again, alone."""
    steps: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="lw-part-") as folder:
        con = batch.connect_staging(settings, str(Path(folder) / "spill"))
        try:
            batch.stage_in(con, [part], settings, detector_list=found,
                           on_step=lambda name, seconds: steps.__setitem__(name, seconds))
            started = time.perf_counter()
            batch.write_outputs(con, folder)
            steps["write"] = time.perf_counter() - started
            for name, sql in FLOOR.items():
                started = time.perf_counter()
                con.execute(sql.format(folder=Path(folder).as_posix())).fetchall()
                steps[f"floor: {name}"] = time.perf_counter() - started
            # what the detectors read beside the events, each as detectors.detect builds it
            from lessonweaver import privacy
            for name, build in (("exposures", lambda: queries.execute(con, "facts/exposures.sql")),
                                ("exposures of kept", lambda: privacy.exposures_of_kept(con)),
                                ("facts", lambda: queries.execute(con, "facts/facts.sql")),
                                ("turns", lambda: queries.execute(con, "facts/turns.sql"))):
                started = time.perf_counter()
                build()
                steps[f"detect: the {name}"] = time.perf_counter() - started
            for d in found:
                con.execute(detectors.DETECTIONS_TABLE.format(kind="TEMP", table="again"))
                started = time.perf_counter()
                detectors.run_detector(con, d, into="again")
                steps[f"detect: {d.id}"] = time.perf_counter() - started
            counts = con.execute("SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM events), "
                                 "(SELECT count(*) FROM detections)").fetchone()
        finally:
            con.close()
    steps["_traces"], steps["_events"], steps["_detections"] = counts
    return steps


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", help="a trace file; its first part is measured")
    ap.add_argument("--bytes", default="64MiB", help="the part size, as a run's batch size (default 64MiB)")
    ap.add_argument("--repeat", type=int, default=3, help="passes; the report gives medians (default 3)")
    args = ap.parse_args()
    try:
        size = memory_bytes(args.bytes)
    except ValueError as exc:
        ap.error(str(exc).replace("memory limit", "--bytes"))
    if not Path(args.file).is_file():
        ap.error(f"no such file: {args.file}")
    fmt = sniff(args.file)
    if fmt not in SCAN_QUERIES:
        ap.error(f"{args.file}: not a format the bare scan reads ({', '.join(SCAN_QUERIES)})")
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    settings = Settings(batch_bytes=size)
    threads = batch_threads(settings)
    part = first_part(args.file, size)
    found = detectors.load_detectors()
    passes: list[dict[str, float]] = []
    with tempfile.NamedTemporaryFile(suffix=Path(args.file).suffix or ".jsonl") as copy:
        copy.write(part_bytes(part))
        copy.flush()
        for n in range(args.repeat):
            parse, events = typed_parse(copy.name, fmt, threads)
            parse_all, _ = typed_parse(copy.name, fmt, settings.threads)
            steps = stage_steps(part, settings, found)
            steps["_parse"], steps["_parse_all"], steps["_scanned"] = parse, parse_all, events
            passes.append(steps)
            staged = sum(v for k, v in steps.items() if k[0] != "_" and ":" not in k)
            print(f"pass {n + 1} of {args.repeat}: staged in {staged:.2f} s", file=sys.stderr)
    print(report(args.file, part, passes, threads, settings.threads))
    return 0


def report(path: str, part: discover.InputFile, passes: list[dict[str, float]], threads: int, cores: int) -> str:
    med = {k: statistics.median(p[k] for p in passes) for k in passes[0]}
    parse = med["_parse"]
    size = ((part.end or part.size) - part.start) / 1e6
    one = plural(threads, "thread")
    lines = [
        f"part:         {path}, bytes {part.start:,} to {part.end or part.size:,} ({size:.1f} MB)",
        f"staged:       {int(med['_traces']):,} traces, {int(med['_events']):,} events, "
        f"{int(med['_detections']):,} detections; the typed parse counts {int(med['_scanned']):,} events",
        f"typed parse:  {parse:.2f} s on {one} (as one batch gets); "
        f"{med['_parse_all']:.2f} s on {cores}",
        f"medians of {plural(len(passes), 'pass', 'passes')}, seconds and multiples of the typed parse on {one}:",
    ]
    steps = [k for k in passes[0] if k[0] != "_" and ":" not in k]
    total = sum(med[k] for k in steps)
    for k in steps:
        lines.append(f"  {k:<14} {med[k]:6.2f} s {med[k] / parse:6.1f}x")
    lines.append(f"  {'staging':<14} {total:6.2f} s {total / parse:6.1f}x")
    lines.append("each detector again, alone on the staged part, largest first:")
    alone = sorted((k for k in passes[0] if k.startswith("detect: ")), key=lambda k: -med[k])
    for k in alone:
        lines.append(f"  {k.removeprefix('detect: '):<20} {med[k]:6.2f} s {med[k] / parse:6.1f}x")
    lines.append("single passes alone on the staged part (the floor under the steps above):")
    for k in (k for k in passes[0] if k.startswith("floor: ")):
        lines.append(f"  {k.removeprefix('floor: '):<40} {med[k]:6.2f} s {med[k] / parse:6.1f}x")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
