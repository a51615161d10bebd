"""Benchmark a whole `lessonweaver run` against a bare DuckDB scan of the same files and a pure-Python baseline.

    make bench [ARGS="--traces 50000 --repeat 5"]
    .venv/bin/python benchmarks/run.py [--corpus DIR] [--traces N] [--seed S] [--mix FMT=W,...] [--repeat R]
    .venv/bin/python benchmarks/run.py --sizes 30000,100000,300000

Generates the corpus (benchmarks/generate.py) when its folder is missing or empty, then measures in this one
invocation, each --repeat times, reporting medians:
  bare scan  read_json of the files, events unnested (or, for one-event-per-line formats, the lines) and
             counted by type, in DuckDB in this process: the floor any DuckDB tool pays. The lessonweaver
             format's columns are typed explicitly (type detection with union_by_name is 2-4x slower and
             would hide how far a run is from the limit); other formats are read with union_by_name;
  full run   `lessonweaver run` as a subprocess into a fresh database, start-up included: wall seconds,
             the flow's per-stage seconds (its summary's "time:" line), CPU seconds and peak memory;
  baseline   benchmarks/baseline.py (json module, a loop per trace) over the lessonweaver-format files.
Progress goes to stderr, the report to stdout. --sizes measures the full run and the bare scan at several
corpus sizes made of files of the same size (--traces-per-file), to show whether memory stays flat as the
input grows. --breakdown adds one in-process pass that splits the flow's stages into their steps (read,
scan, adapt, screen, detect, write; load, weave, audit). --run-args passes options to `lessonweaver run`.
"""

import argparse
import datetime as dt
import gzip
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, not only the installed ones

from benchmarks.generate import FORMATS, LENGTHS, Diversity, generate
from lessonweaver import discover

BIN = Path(sys.executable).parent
DEFAULT_ROOT = Path(tempfile.gettempdir()) / "lessonweaver-bench"
DETECTORS = ("human_correction", "failed_evaluation", "retry")

# Per format: what one bare-scan row is, and its event type. The lessonweaver format nests events in a trace.
SCAN_QUERIES = {
    # The fastest honest read of the lessonweaver format: its columns typed, not detected (issue #18).
    "lessonweaver": "SELECT e.type AS type FROM (SELECT unnest(events) AS e FROM read_json({files}, "
                    "format = 'newline_delimited', columns = {{trace_id: 'VARCHAR', source: 'VARCHAR', "
                    "task: 'VARCHAR', outcome: 'VARCHAR', metadata: 'JSON', events: 'STRUCT(id VARCHAR, "
                    "type VARCHAR, content VARCHAR, status VARCHAR, success BOOLEAN, metadata JSON)[]'}}))",
    "traceevent": "SELECT event_type AS type FROM read_json({files}, union_by_name = true)",
    "stream": "SELECT event_type AS type FROM read_json({files}, union_by_name = true)",
    "gdev": "SELECT event_type AS type FROM read_json({files}, union_by_name = true)",
    "otlp": "SELECT name AS type FROM read_json({files}, union_by_name = true)",  # a span's name is its kind of work
    "otlp-export": """SELECT s.name AS type FROM (SELECT unnest(ss.spans) AS s FROM (SELECT unnest(rs.scopeSpans) AS ss
                      FROM (SELECT unnest(resourceSpans) AS rs FROM read_json({files}, union_by_name = true))))""",
}


DIVERSE = Diversity(tasks=100, tenants=50, sources=5, evidence=True)  # --diverse, as the generator's --diverse


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_mix(text: str) -> dict[str, float]:
    return {k.strip(): float(v) for k, v in (part.split("=") for part in text.split(","))}


def corpus_dir(root: Path | None, mix: str, traces: int, seed: int, files: int, max_words: int = LENGTHS[-1],
               diverse: bool = False) -> Path:
    slug = "-".join(k if len(parse_mix(mix)) == 1 else f"{k}{v:g}" for k, v in parse_mix(mix).items())
    words = "" if max_words == LENGTHS[-1] else f"-words{max_words}"
    return (root or DEFAULT_ROOT) / f"{slug}-{traces}-seed{seed}-{files}files{words}{'-diverse' if diverse else ''}"


def ensure_corpus(folder: Path, traces: int, seed: int, files: int, mix: str, max_words: int = LENGTHS[-1],
                  diverse: bool = False) -> None:
    """Generate into `folder` when it is missing or empty; a half-written corpus never looks finished."""
    if folder.is_dir() and any(folder.iterdir()):
        log(f"corpus: {folder} (already there, not regenerated)")
        return
    partial = folder.with_name(folder.name + ".generating")
    shutil.rmtree(partial, ignore_errors=True)
    log(f"generating {traces} traces ({mix}, seed {seed}) into {folder} ...")
    started = time.perf_counter()
    size = generate(partial, traces, seed, files, parse_mix(mix), max_words, DIVERSE if diverse else Diversity())
    if folder.exists():
        folder.rmdir()
    partial.rename(folder)
    log(f"generated {size / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s")


def sniff(path: str) -> str | None:
    """A file's format: from a generated file's name, else from the keys at its start."""
    prefix = Path(path).name.split("-")[0]
    if prefix in FORMATS:
        return prefix
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
        head = fh.read(1 << 16)
    keys = set(re.findall(r'"(\w+)"\s*:', head))
    for fmt, needed in (("gdev", {"span_id", "run_id"}), ("otlp-export", {"resourceSpans"}), ("otlp", {"traceId"}), ("traceevent", {"event_id", "payload"}),
                        ("stream", {"task_id", "event_type"}), ("lessonweaver", {"events"})):
        if needed <= keys:
            return fmt
    return None


def bare_scan(by_format: dict[str, list[str]]) -> tuple[float, dict[str, int]]:
    """One DuckDB query over all files: events counted by type. Returns its seconds and the counts."""
    parts = [SCAN_QUERIES[fmt].format(files="[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]")
             for fmt, files in sorted(by_format.items())]
    con = duckdb.connect()
    started = time.perf_counter()
    rows = con.execute(f"SELECT type, count(*) FROM ({' UNION ALL '.join(parts)}) GROUP BY type").fetchall()
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed, {str(t): n for t, n in rows}


def _tree_rss(root: int) -> dict[int, int]:
    """RSS in bytes of `root` and its descendants, from /proc (Linux); empty where there is no /proc."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = {root}, [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier and pid not in tree]
        tree.update(frontier)
    rss = {}
    for pid in tree:
        try:
            rss[pid] = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError):
            pass
    return rss


PAGE = os.sysconf("SC_PAGE_SIZE")


class TreeSampler(threading.Thread):
    """Samples the RSS of a process and its descendants: the peak of the sum, and the main process's peak."""

    def __init__(self, pid: int, interval: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.interval = pid, interval
        self.peak_sum = self.peak_main = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            rss = _tree_rss(self.pid)
            self.peak_sum = max(self.peak_sum, sum(rss.values()))
            self.peak_main = max(self.peak_main, rss.get(self.pid, 0))
            self.done.wait(self.interval)


def parse_summary(text: str) -> dict:
    """The figures of `lessonweaver run`'s summary that the report uses."""
    out: dict = {"detections": {}}
    time_line = re.search(r"^time:.*\((.*)\)", text, re.MULTILINE)
    out["timings"] = {k: float(v) for k, v in re.findall(r"(\w+) ([\d.]+)", time_line.group(1))} if time_line else {}
    traces = re.search(r"^traces:\s+(\d+) loaded.*?(\d+) quarantined", text, re.MULTILINE)
    out["traces_loaded"], out["traces_quarantined"] = (int(traces.group(1)), int(traces.group(2))) if traces else (0, 0)
    events = re.search(r"^events:\s+(\d+) loaded", text, re.MULTILINE)
    out["events_loaded"] = int(events.group(1)) if events else 0
    block = re.search(r"^detections:.*\n((?:  .*\n)*)", text, re.MULTILINE)
    for name, n in re.findall(r"^  (\w+)\s+(\d+)$", block.group(1) if block else "", re.MULTILINE):
        out["detections"][name] = int(n)
    return out


def full_run(paths: list[str], workdir: Path, extra_args: list[str], keep: bool = False) -> dict:
    """`lessonweaver run` into a fresh database, timed from spawn to exit, with its memory."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    env = dict(os.environ)
    env.setdefault("PREFECT_HOME", str(ROOT / ".prefect"))  # as the Makefile sets it
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    cmd = [str(BIN / "lessonweaver"), "run", *paths, "--db", str(workdir / "bench.duckdb"), "--out", str(workdir / "out"), "-q", *extra_args]
    with open(workdir / "stdout", "w") as out, open(workdir / "stderr", "w") as err:
        started = time.perf_counter()
        child = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, cwd=ROOT)
        sampler = TreeSampler(child.pid)
        sampler.start()
        # wait4: this child's own usage, including the children it reaped (Prefect's temporary server)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        sampler.done.set()
        sampler.join()
    stdout = (workdir / "stdout").read_text()
    if child.returncode != 0:
        raise RuntimeError(f"lessonweaver run failed ({child.returncode}): {(workdir / 'stderr').read_text()[-2000:]}")
    result = {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "maxrss_mb": usage.ru_maxrss / 1024, "tree_peak_mb": sampler.peak_sum / 2**20,
              "main_peak_mb": sampler.peak_main / 2**20, **parse_summary(stdout)}
    con = duckdb.connect(str(workdir / "bench.duckdb"), read_only=True)
    try:
        result["variants"], result["lessons"] = con.execute(
            "SELECT (SELECT count(DISTINCT variant_id) FROM detections), (SELECT count(*) FROM lessons)").fetchone()
    finally:
        con.close()
    if not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def baseline(files: list[str], skip_ids: Path | None = None) -> tuple[float, dict]:
    cmd = [sys.executable, str(ROOT / "benchmarks" / "baseline.py"), *files]
    if skip_ids:
        cmd += ["--skip-ids", str(skip_ids)]
    started = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - started, json.loads(out)


def lessonweaver_counts(db: Path) -> tuple[list[str], dict[str, int]]:
    """Quarantined trace ids, and the three core detectors' counts on lessonweaver-format traces."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        quarantined = [r[0] for r in con.execute("SELECT trace_id FROM quarantine").fetchall()]
        counts = dict(con.execute(
            "SELECT detector, count(*) FROM detections JOIN traces USING (trace_id) "
            "WHERE traces.format = 'lessonweaver' GROUP BY detector").fetchall())
        counts["traces"] = con.execute("SELECT count(*) FROM traces WHERE format = 'lessonweaver'").fetchone()[0]
    finally:
        con.close()
    return quarantined, counts


def breakdown(files: list[discover.InputFile], workdir: Path) -> dict[str, float]:
    """The run's work done in this process, one batch after another, timed step by step: the pipeline's
    own stages (batch.stage_in for each batch, cut as the run cuts them, then the load, the weave and the
    database audit). The run stages batches in parallel, so its stage seconds can be lower than these sums."""
    from lessonweaver import adapters, audit, detectors, lessons, store
    from lessonweaver.batch import connect_staging, stage_in, write_outputs
    from lessonweaver.config import Settings

    settings = Settings()
    steps = dict.fromkeys(("read", "scan", "adapt", "screen", "detect", "audit staged", "account", "write", "load",
                           "weave", "audit"), 0.0)

    def add(step: str, seconds: float) -> None:
        steps[step] += seconds

    db = store.connect(str(workdir / "breakdown.duckdb"), threads=settings.threads, memory_limit=settings.memory_limit)
    settings = Settings(tenant_salt=store.tenant_salt(db))
    folders = []
    known = adapters.load_adapters()
    parts = discover.split_large(files, settings.batch_bytes, lambda f: adapters.one_trace_per_line(f.path, known))
    for n, batch in enumerate(discover.batches(parts, settings.batch_bytes)):
        folder = workdir / f"batch-{n:05d}"
        folder.mkdir(parents=True)
        con = connect_staging(settings)
        stage_in(con, batch, settings, on_step=add)
        started = time.perf_counter()
        write_outputs(con, str(folder))
        add("write", time.perf_counter() - started)
        con.close()
        folders.append(str(folder))
        log(f"breakdown: batch {n + 1} staged")
    lessons.register_detectors(db, detectors.load_detectors())
    for step, work in (("load", lambda: store.load(db, folders, "breakdown")),
                       ("weave", lambda: lessons.weave(db, "breakdown", dt.date.today())),
                       ("audit", lambda: audit.audit_database(db, "breakdown"))):
        started = time.perf_counter()
        work()
        add(step, time.perf_counter() - started)
    db.close()
    return steps


def warm(files: list[discover.InputFile]) -> None:
    """Read every file once, so that no measurement, the first scan especially, pays for the disk alone."""
    for f in files:
        with open(f.path, "rb") as fh:
            while fh.read(1 << 23):
                pass


def median(values: list[float]) -> float:
    return statistics.median(values)


def fmt_list(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def measure(folder: Path, repeat: int, work: Path, run_args: list[str], with_baseline: bool, with_breakdown: bool) -> dict:
    files = discover.discover([str(folder)])
    if not files:
        raise SystemExit(f"no trace files in {folder}")
    by_format: dict[str, list[str]] = {}
    for f in files:
        fmt = sniff(f.path)
        if fmt is None:
            raise SystemExit(f"{f.path}: not a format this benchmark can scan (known: {', '.join(FORMATS)})")
        by_format.setdefault(fmt, []).append(f.path)
    megabytes = sum(f.size for f in files) / 1e6
    lw_megabytes = sum(f.size for f in files if f.path in set(by_format.get("lessonweaver", []))) / 1e6
    log(f"{len(files)} files, {megabytes:.0f} MB: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(by_format.items())))

    warm(files)
    scans, runs, bases = [], [], []
    for i in range(repeat):
        log(f"round {i + 1}/{repeat}: bare scan ...")
        seconds, types = bare_scan(by_format)
        scans.append(seconds)
        log(f"round {i + 1}/{repeat}: bare scan {seconds:.2f} s; full run ...")
        runs.append(full_run([str(folder)], work / "run", run_args, keep=i == repeat - 1))
        log(f"round {i + 1}/{repeat}: full run {runs[-1]['wall']:.1f} s, peak RSS {runs[-1]['maxrss_mb']:.0f} MB")
        if with_baseline and "lessonweaver" in by_format:
            seconds, base_counts = baseline(by_format["lessonweaver"])
            bases.append(seconds)
            log(f"round {i + 1}/{repeat}: baseline {seconds:.1f} s")

    result = {"folder": str(folder), "files": len(files), "megabytes": megabytes, "lw_megabytes": lw_megabytes,
              "formats": {k: len(v) for k, v in by_format.items()}, "events": sum(types.values()), "types": types,
              "scan": scans, "runs": runs, "baseline": bases}
    last = runs[-1]
    result["traces"] = last["traces_loaded"] + last["traces_quarantined"]
    if bases:
        quarantined, lw_counts = lessonweaver_counts(work / "run" / "bench.duckdb")
        skip = work / "quarantined.txt"
        skip.write_text("\n".join(quarantined))
        _, like_for_like = baseline(by_format["lessonweaver"], skip)
        result["baseline_counts"], result["baseline_like_for_like"], result["lw_counts"] = base_counts, like_for_like, lw_counts
    if with_breakdown:
        log("breakdown: one in-process pass ...")
        result["breakdown"] = breakdown(files, work / "breakdown")
    shutil.rmtree(work / "run", ignore_errors=True)
    return result


def report(r: dict, repeat: int) -> str:
    runs = r["runs"]
    wall = median([x["wall"] for x in runs])
    scan = median(r["scan"])
    stages = {k: median([x["timings"].get(k, 0.0) for x in runs]) for k in runs[-1]["timings"]}
    flow = sum(stages.values())
    lines = [
        (f"corpus:       {r['folder']}: {r['files']} files, {r['megabytes']:.1f} MB "
         f"({', '.join(f'{k} {n}' for k, n in sorted(r['formats'].items()))} files)"),
        f"traces:       {r['traces']:,} ({runs[-1]['traces_loaded']:,} loaded, {runs[-1]['traces_quarantined']:,} quarantined)",
        f"events:       {r['events']:,} in the files (bare scan); {runs[-1]['events_loaded']:,} loaded",
        f"lessons:      {runs[-1]['lessons']:,} from {runs[-1]['variants']:,} variants (distinct problem wordings)",
        f"medians of {repeat}:",
        f"  bare scan   {scan:7.2f} s   {r['megabytes'] / scan:6.0f} MB/s   (runs: {fmt_list(r['scan'])})",
        (f"  full run    {wall:7.2f} s   {r['megabytes'] / wall:6.0f} MB/s   {r['traces'] / wall:8,.0f} traces/s"
         f"   (runs: {fmt_list([x['wall'] for x in runs])})"),
        "    stages    " + ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
        + f" = {flow:.1f} s in the flow; {wall - flow:.1f} s start-up and exit (Python, Prefect's temporary server)",
        (f"  CPU         {median([x['cpu'] for x in runs]):7.2f} s   user and system time of lessonweaver and the children"
         " it reaped (DuckDB's threads, its workers, Prefect's temporary server)"),
        (f"  peak RSS    {median([x['maxrss_mb'] for x in runs]):7.0f} MB  largest process (wait4 ru_maxrss of lessonweaver,"
         " including the Prefect server it reaped)"),
        f"              {median([x['main_peak_mb'] for x in runs]):7.0f} MB  lessonweaver process, sampled every 0.2 s",
        f"              {median([x['tree_peak_mb'] for x in runs]):7.0f} MB  whole process tree, summed, sampled every 0.2 s",
        f"  full run / bare scan: {wall / scan:.1f}x",
    ]
    if r["baseline"]:
        base = median(r["baseline"])
        same = abs(r["lw_megabytes"] - r["megabytes"]) < 1e-9
        lines.append(f"  baseline    {base:7.2f} s   {r['lw_megabytes'] / base:6.0f} MB/s   (runs: {fmt_list(r['baseline'])};"
                     f" pure Python, one process, {r['lw_megabytes']:.0f} MB of lessonweaver-format files)")
        per_mb = base / r["lw_megabytes"]  # equal to plain seconds when the corpus is all lessonweaver-format
        lines.append(f"  baseline / full run: {per_mb / (wall / r['megabytes']):.2f}; baseline / bare scan: "
                     f"{per_mb / (scan / r['megabytes']):.2f}" + ("" if same else " (in seconds per MB: the baseline reads only the lessonweaver files)"))
        lw, like = r["lw_counts"], r["baseline_like_for_like"]
        lines.append("  detections on lessonweaver-format traces lessonweaver kept (baseline skips the quarantined ones):")
        for name in ("traces", *DETECTORS):
            lines.append(f"    {name:<18} lessonweaver {lw.get(name, 0):>8,}   baseline {like[name]:>8,}"
                         + ("" if lw.get(name, 0) == like[name] else "   DIFFERENT"))
        lines.append("    (baseline over all traces, quarantined included: "
                     + ", ".join(f"{k} {r['baseline_counts'][k]:,}" for k in ("traces", *DETECTORS)) + ")")
    lines.append("  lessonweaver detections: " + ", ".join(f"{k} {v:,}" for k, v in runs[-1]["detections"].items()))
    if "breakdown" in r:
        b = r["breakdown"]
        lines.append("  breakdown (one in-process pass, batches one after another): "
                     + ", ".join(f"{k} {v:.1f}" for k, v in b.items()) + f" = {sum(b.values()):.1f} s")
    return "\n".join(lines)


def sizes_report(results: list[dict]) -> str:
    lines = [(f"{'traces':>9} {'MB':>7} {'events':>11} {'variants':>9} {'lessons':>8} {'scan s':>7} {'run s':>7} {'ratio':>6} "
              f"{'peak RSS MB (largest process)':>30} {'tree MB':>8}  stages (s)")]
    for r in results:
        runs = r["runs"]
        wall, scan = median([x["wall"] for x in runs]), median(r["scan"])
        stages = {k: median([x["timings"].get(k, 0.0) for x in runs]) for k in runs[-1]["timings"]}
        lines.append(f"{r['traces']:>9,} {r['megabytes']:>7.0f} {r['events']:>11,} {runs[-1]['variants']:>9,} "
                     f"{runs[-1]['lessons']:>8,} {scan:>7.2f} {wall:>7.1f} {wall / scan:>5.1f}x "
                     f"{median([x['maxrss_mb'] for x in runs]):>30.0f} {median([x['tree_peak_mb'] for x in runs]):>8.0f}  "
                     + ", ".join(f"{k} {v:.1f}" for k, v in stages.items()))
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", type=Path, help=f"trace folder; generated when missing or empty (default: under {DEFAULT_ROOT})")
    p.add_argument("--traces", type=int, default=200_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--mix", default="lessonweaver=1", help="format weights, e.g. lessonweaver=1,traceevent=1,stream=1,gdev=1,otlp=1")
    p.add_argument("--files", type=int, default=8, help="files per format when generating")
    p.add_argument("--max-words", type=int, default=LENGTHS[-1],
                   help="longest generated content in words (16: traces of about 2 KB; default: about 9 KB)")
    p.add_argument("--traces-per-file", type=int, default=12_500,
                   help="with --sizes: traces per generated file (about 113 MB), so only the number of files grows")
    p.add_argument("--diverse", action="store_true",
                   help="generate lessons of many kinds: 100 task families, 50 tenants, 5 sources, evidence with ids")
    p.add_argument("--run-args", default="", help="more options for `lessonweaver run`, e.g. '--workers 2'")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sizes", help="comma-separated trace counts: peak RSS and times at each size (corpora under --corpus)")
    p.add_argument("--no-baseline", action="store_true", help="skip the pure-Python baseline")
    p.add_argument("--breakdown", action="store_true", help="add one in-process pass timing each step of the stages")
    args = p.parse_args()
    unknown = set(parse_mix(args.mix)) - set(FORMATS)
    if unknown:
        p.error(f"unknown format(s) in --mix: {', '.join(sorted(unknown))} (known: {', '.join(FORMATS)})")

    run_args = shlex.split(args.run_args)
    work = Path(tempfile.mkdtemp(prefix="lessonweaver-bench-"))
    try:
        if args.sizes:
            results = []
            for n in (int(s) for s in args.sizes.split(",")):
                files = -(-n // args.traces_per_file)
                folder = corpus_dir(args.corpus, args.mix, n, args.seed, files, args.max_words, args.diverse)
                ensure_corpus(folder, n, args.seed, files, args.mix, args.max_words, args.diverse)
                results.append(measure(folder, args.repeat, work, run_args, with_baseline=False, with_breakdown=args.breakdown))
                log(f"{n} traces measured")
            print(f"lessonweaver benchmark, sizes ({os.cpu_count()} cores, medians of {args.repeat})")
            print(sizes_report(results))
            for r in results:
                if "breakdown" in r:
                    print(f"  {r['traces']:,} traces, breakdown: " + ", ".join(f"{k} {v:.1f}" for k, v in r["breakdown"].items()))
        else:
            folder = args.corpus or corpus_dir(None, args.mix, args.traces, args.seed, args.files, args.max_words,
                                               args.diverse)
            ensure_corpus(folder, args.traces, args.seed, args.files, args.mix, args.max_words, args.diverse)
            result = measure(folder, args.repeat, work, run_args, with_baseline=not args.no_baseline,
                             with_breakdown=args.breakdown)
            memory = os.sysconf("SC_PHYS_PAGES") * PAGE / 2**30
            print(f"lessonweaver benchmark ({os.cpu_count()} cores, {memory:.0f} GiB)")
            print(report(result, args.repeat))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
