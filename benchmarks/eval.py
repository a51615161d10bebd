"""Score the detectors against labelled real runs: trace-level precision and recall of "flagged".

    python benchmarks/eval.py [--shared DIR] [--width N]      (make eval)

A trace is flagged when lessonweaver finds something of severity medium or above in it. Each corpus is
staged by the same code a run uses (lessonweaver.batch.run_batch: read, screen, adapt, detect, audit),
in a temporary folder, and its flags are compared with someone else's verdict:

- agent-arena-sweep: 28 runs of a multi-agent arena and its grader's verdicts (labels.json);
- tau-bench: 40 airline-support conversations and their reward (0: the task failed), scored twice: with
  the reward read as an evaluation, and with it removed (the conversation alone, as most logs are);
- lessonweaver-v1: the public lessonweaver detection benchmark (should_detect per case).

Prints, per corpus, precision, recall and the counts, then every trace that was missed or wrongly
flagged, with what was found in it. Figures only: nothing here is asserted by the tests.
"""

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lessonweaver.batch import run_batch  # noqa: E402
from lessonweaver.config import Settings  # noqa: E402
from lessonweaver.discover import discover  # noqa: E402

FLAGGING = ("medium", "high", "critical")


@dataclass
class Case:
    key: str  # how the trace is named in the report
    positive: bool  # the label says something went wrong
    why: str = ""  # the label's own words


@dataclass
class Scored:
    name: str
    cases: dict[str, Case]  # trace_id -> label
    found: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)  # trace_id -> (detector, severity, evidence)
    quarantined: set[str] = field(default_factory=set)

    def flagged(self, trace_id: str) -> bool:
        return any(sev in FLAGGING for _, sev, _ in self.found.get(trace_id, []))


def stage(files: list[Path], work: Path) -> duckdb.DuckDBPyConnection:
    """Stage the files as a run would and open the batch's outputs for querying."""
    folder = work / "batch"
    shutil.rmtree(folder, ignore_errors=True)
    run_batch(discover([str(f) for f in files]), Settings(workers=1), str(folder))
    con = duckdb.connect()
    for name in ("traces", "detections", "quarantine", "rejects"):
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_parquet(?)", [str(folder / f"{name}.parquet")])
    return con


def collect(con: duckdb.DuckDBPyConnection, scored: Scored) -> Scored:
    for trace_id, detector, severity, evidence in con.execute(
            "SELECT trace_id, detector, severity, evidence FROM detections ORDER BY trace_id, seq NULLS FIRST, detector").fetchall():
        scored.found.setdefault(trace_id, []).append((detector, severity, evidence or ""))
    scored.quarantined = {r[0] for r in con.execute("SELECT trace_id FROM quarantine").fetchall()}
    return scored


def arena(shared: Path, work: Path) -> Scored | None:
    folder = shared / "benchmarks" / "agent-arena-sweep"
    if not folder.is_dir():
        return None
    labels = {Path(r["trace_file"]).name: r for r in json.loads((folder / "labels.json").read_text())["runs"]}
    con = stage(sorted((folder / "runs").glob("*.jsonl")), work)
    cases = {}
    for trace_id, file in con.execute("SELECT trace_id, file FROM traces UNION ALL "
                                      "SELECT trace_id, file FROM quarantine").fetchall():
        label = labels[Path(file).name]
        cases[trace_id] = Case(Path(file).stem.removeprefix("trace_"), not label["passed"],
                               f"{label['failure_category']}: {label['grader_reason']}" if not label["passed"] else "passed")
    missing = set(labels) - {Path(f).name for (f,) in con.execute("SELECT DISTINCT file FROM traces").fetchall()}
    if missing:
        print(f"  (not loaded: {', '.join(sorted(missing))})")
    return collect(con, Scored("agent-arena-sweep", cases))


def tau(shared: Path, work: Path, with_reward: bool) -> Scored | None:
    folder = shared / "samples" / "tau-bench"
    if not folder.is_dir():
        return None
    files, labels = [], {}
    for path in sorted(folder.glob("*.json")):
        runs = json.loads(path.read_text())
        for r in runs:
            labels[(r["task_id"], r["trial"])] = r["reward"]
        if not with_reward:  # the conversation alone: what most teams' logs hold
            runs = [{k: v for k, v in r.items() if k != "reward"} for r in runs]
            path = work / "tau-without-reward" / path.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(runs))
        files.append(path)
    con = stage(files, work)
    cases = {}
    for trace_id, meta in con.execute("SELECT trace_id, metadata FROM traces").fetchall():
        m = json.loads(meta)
        reward = labels[(m["task_id"], m["trial"])]
        cases[trace_id] = Case(f"task {m['task_id']} trial {m['trial']}", reward < 1, f"reward {reward}")
    name = "tau-bench (reward read)" if with_reward else "tau-bench (conversation alone)"
    return collect(con, Scored(name, cases))


def lessonweaver_v1(shared: Path, work: Path) -> Scored | None:
    corpus = shared / "benchmarks" / "lessonweaver-v1" / "corpus.json"
    if not corpus.is_file():
        return None
    cases, traces = {}, []
    for case in json.loads(corpus.read_text())["cases"]:
        trace = case.get("trace") or json.loads((shared / "samples" / "lessonweaver" / Path(case["trace_path"]).name).read_text())
        traces.append(trace)
        cases[trace["trace_id"]] = Case(case["case_id"], case["should_detect"], case["pattern"])
    path = work / "lessonweaver-v1.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    return collect(stage([path], work), Scored("lessonweaver-v1", cases))


def report(s: Scored, width: int) -> str:
    tp = [t for t, c in s.cases.items() if c.positive and s.flagged(t)]
    fp = [t for t, c in s.cases.items() if not c.positive and s.flagged(t)]
    fn = [t for t, c in s.cases.items() if c.positive and not s.flagged(t)]
    tn = len(s.cases) - len(tp) - len(fp) - len(fn)
    precision = len(tp) / (len(tp) + len(fp)) if tp or fp else float("nan")
    recall = len(tp) / (len(tp) + len(fn)) if tp or fn else float("nan")
    positives = sum(c.positive for c in s.cases.values())
    lines = [f"{s.name}: {len(s.cases)} traces, {positives} labelled failed",
             f"  precision {precision:.3f}  recall {recall:.3f}   "
             f"(flagged and failed {len(tp)}, flagged but passed {len(fp)}, missed {len(fn)}, rightly quiet {tn})"]

    def found(trace_id: str) -> str:
        if trace_id in s.quarantined:
            return "quarantined"
        items = s.found.get(trace_id, [])
        return "; ".join(f"{d} ({sev}): {e}" for d, sev, e in items)[:width] if items else "nothing found"

    if fn:
        lines.append("  missed (labelled failed, nothing of medium severity or above):")
        lines += [f"    {s.cases[t].key:<48} {s.cases[t].why[:70]}\n      found: {found(t)}" for t in sorted(fn, key=lambda t: s.cases[t].key)]
    if fp:
        lines.append("  wrongly flagged (labelled passed):")
        lines += [f"    {s.cases[t].key:<48} found: {found(t)}" for t in sorted(fp, key=lambda t: s.cases[t].key)]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="folder holding benchmarks/ and samples/")
    p.add_argument("--width", type=int, default=240, help="characters of evidence shown per trace (default: 240)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lessonweaver-eval-"))
    try:
        results = [r for r in (arena(args.shared, work), tau(args.shared, work, True), tau(args.shared, work, False),
                               lessonweaver_v1(args.shared, work)) if r is not None]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not results:
        print(f"no labelled corpora under {args.shared} (benchmarks/, samples/tau-bench/)")
        return 0
    print("lessonweaver evaluation: a trace is flagged when a detection of severity medium or above is found\n")
    print("\n\n".join(report(r, args.width) for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
