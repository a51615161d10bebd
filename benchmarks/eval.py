"""Score the detectors against labelled real runs: trace-level precision and recall of "flagged".

    python benchmarks/eval.py [--shared DIR] [--width N]      (make eval)

A trace is flagged when lessonweaver finds something of severity medium or above in it. Each corpus is
staged by the same code a run uses (lessonweaver.batch.run_batch: read, screen, adapt, detect, audit),
in a temporary folder, and its flags are compared with someone else's verdict:

- agent-arena-sweep: 28 runs of a multi-agent arena and its grader's verdicts (labels.json);
- tau-bench: 40 airline-support conversations and their reward (0: the task failed), scored twice: with
  the reward read as an evaluation, and with it removed (the conversation alone, as most logs are);
- lessonweaver-v1: the public lessonweaver detection benchmark (should_detect per case);
- tau2-bench telecom (reward read, and the conversation alone), OpenHands on SWE-bench Verified and
  SWE-agent trajectories: graded runs of producers the detectors were not written for (labels.json).

Prints, per corpus, precision, recall and the counts, with the length baseline below them (flagging the
runs longer than the corpus's median, by steps and by tool calls: the yardstick a detector must beat), then
every trace that was missed or wrongly flagged, with what was found in it; then, per detector and set, the
share of passing and failing runs it fires on and its lift over the base rate beside the baseline's
(discrimination), and rows for each set as a whole and for the baselines themselves.

Then who speaks and what they mean: the labelled turns of benchmarks/turns/ (labels.csv, written by reading,
RULES.md), each set run whole, with the precision and recall of `correction` per set, and how many turns no
person wrote we give to a person or flag (benchmarks/turns/score.py).

Then the lessons: every corpus in samples/ and benchmarks/ run whole (pipeline.run_local, a database of
its own), with lessons per trace, the share of the top 25 that carry what worked or a person's own words,
and the findings below the noise floor; and the lessons scored against the gold lists of
benchmarks/lessons-gold/ as its README says: a gold lesson is found when one of our 25 of highest priority
cites one of its sessions and names two of its key words. Figures only: nothing here is asserted by the
tests.
"""

import argparse
import json
import logging
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.turns import score as turn_scores  # noqa: E402
from lessonweaver.batch import run_batch  # noqa: E402
from lessonweaver.config import Settings  # noqa: E402
from lessonweaver.discover import discover  # noqa: E402
from lessonweaver.pipeline import run_local  # noqa: E402
from lessonweaver.words import plural  # noqa: E402

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
    lengths: dict[str, dict[str, int]] = field(default_factory=dict)  # trace_id -> {"steps": events, "calls": tool calls}

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
    con.execute("CREATE TABLE lengths AS SELECT trace_id, count(*) AS steps, count(*) FILTER (WHERE type = 'tool_call') AS calls "
                "FROM read_parquet(?) GROUP BY trace_id", [str(folder / "events.parquet")])
    return con


def collect(con: duckdb.DuckDBPyConnection, scored: Scored) -> Scored:
    for trace_id, detector, severity, evidence in con.execute(
            "SELECT trace_id, detector, severity, evidence FROM detections ORDER BY trace_id, seq NULLS FIRST, detector").fetchall():
        scored.found.setdefault(trace_id, []).append((detector, severity, evidence or ""))
    scored.quarantined = {r[0] for r in con.execute("SELECT trace_id FROM quarantine").fetchall()}
    scored.lengths = {t: {"steps": steps, "calls": calls}
                      for t, steps, calls in con.execute("SELECT trace_id, steps, calls FROM lengths").fetchall()}
    return scored


# The yardstick every detector must beat: flag the runs longer than the set's median, by their steps (events)
# or their tool calls. A detector whose lift is no better says nothing a step counter does not.
LENGTHS = ("steps", "calls")


def longer_than_median(s: Scored, measure: str) -> tuple[set[str], float]:
    """The labelled runs of `s` longer than the median of its labelled runs (a quarantined run counts as 0),
    and that median."""
    sizes = {t: s.lengths.get(t, {}).get(measure, 0) for t in s.cases}
    ordered = sorted(sizes.values())
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {t for t, n in sizes.items() if n > median}, median


def scores(s: Scored, fired: set[str]) -> tuple[float | None, float | None, float | None]:
    """Precision, recall and lift (precision over the base rate) of flagging `fired` among the labelled runs."""
    fired = fired & set(s.cases)
    positives = sum(c.positive for c in s.cases.values())
    hits = sum(s.cases[t].positive for t in fired)
    precision = hits / len(fired) if fired else None
    recall = hits / positives if positives else None
    lift = precision / (positives / len(s.cases)) if precision is not None and positives else None
    return precision, recall, lift


def _figure(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def baseline_lines(s: Scored) -> list[str]:
    """The length baseline of a set, as report lines: precision, recall and lift of flagging the runs longer
    than the median, by steps and by calls."""
    lines = []
    for measure in LENGTHS:
        fired, median = longer_than_median(s, measure)
        precision, recall, lift = scores(s, fired)
        lines.append(f"  baseline: longer than the median ({median:g} {measure}): precision {_figure(precision)}  "
                     f"recall {_figure(recall)}  lift {_figure(lift, 2)}   ({len(fired)} flagged)")
    return lines


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


def v1_traces(shared: Path, work: Path) -> tuple[Path, list[dict]] | None:
    """The lessonweaver-v1 cases' traces (inline, or a sample's file they name) as one JSONL file, and the cases."""
    corpus = shared / "benchmarks" / "lessonweaver-v1" / "corpus.json"
    if not corpus.is_file():
        return None
    cases, traces = json.loads(corpus.read_text())["cases"], []
    for case in cases:
        traces.append(case.get("trace") or json.loads((shared / "samples" / "lessonweaver" / Path(case["trace_path"]).name).read_text()))
        case["trace_id"] = traces[-1]["trace_id"]
    path = work / "lessonweaver-v1.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    return path, cases


def lessonweaver_v1(shared: Path, work: Path) -> Scored | None:
    if (found := v1_traces(shared, work)) is None:
        return None
    path, cases = found
    return collect(stage([path], work), Scored("lessonweaver-v1", {
        c["trace_id"]: Case(c["case_id"], c["should_detect"], c["pattern"]) for c in cases}))


def graded(name: str, folder: Path, files: list[Path], work: Path, drop: tuple[str, ...] = ()) -> Scored | None:
    """A graded set whose labels.json maps a run (a trace id, or the stem of its file) to `failed`. With
    `drop`, those keys are removed from every JSON object of the files first (a reward, a grade), so the
    detectors see the run as most logs hold it."""
    labels_file = folder / "labels.json"
    if not labels_file.is_file() or not files:
        return None
    labels = json.loads(labels_file.read_text())
    if drop:
        files = [_without(f, drop, work / re.sub(r"\W+", "-", name)) for f in files]
    con = stage(files, work)
    cases = {}
    for trace_id, file in con.execute("SELECT trace_id, file FROM traces UNION ALL "
                                      "SELECT trace_id, file FROM quarantine").fetchall():
        stem = re.sub(r"(\.traj)?(\.jsonl?)?$", "", Path(file).name)
        label = labels.get(trace_id) or labels.get(stem) or labels.get(Path(file).parent.name)
        if label is not None:
            why = ", ".join(f"{k} {label[k]}" for k in ("reward", "termination_reason", "exit_status", "resolved")
                            if k in label)
            cases[trace_id] = Case(trace_id, bool(label["failed"]), why)
    missing = len(labels) - len(cases)
    if missing > 0:
        print(f"  ({name}: {plural(missing, 'labelled run')} not loaded)")
    return collect(con, Scored(name, cases))


def _without(path: Path, keys: tuple[str, ...], folder: Path) -> Path:
    """A copy of a JSON file with `keys` removed from every object in it."""
    def strip(x: object) -> object:
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k not in keys}
        return [strip(v) for v in x] if isinstance(x, list) else x
    out = folder / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(strip(json.loads(path.read_text()))))
    return out


def graded_sets(shared: Path, work: Path) -> list[Scored | None]:
    """The graded sets of producers the detectors were not written for: tau2-bench (with its reward, and
    without it), OpenHands on SWE-bench Verified, SWE-agent trajectories."""
    tau2 = shared / "benchmarks" / "tau2-telecom"
    tau2_files = sorted(p for p in tau2.glob("*.json") if p.name != "labels.json") if tau2.is_dir() else []
    openhands = shared / "benchmarks" / "openhands-swe-verified"
    swe = shared / "samples" / "swe-agent"
    return [graded("tau2-bench telecom (reward read)", tau2, tau2_files, work),
            graded("tau2-bench telecom (conversation alone)", tau2, tau2_files, work, drop=("reward_info",)),
            graded("OpenHands on SWE-bench Verified", openhands,
                   sorted((openhands / "completions").rglob("*.json")) if openhands.is_dir() else [], work),
            graded("SWE-agent trajectories", swe, sorted((swe / "trajs").glob("*")) if swe.is_dir() else [], work)]


def discrimination(results: list[Scored]) -> str:
    """Per detector and graded set: the share of passing runs it flags (a finding of medium severity or
    above, as `flagged` counts), of failing runs, and the lift (the failure rate of the runs it flags over
    the set's base rate). A detector that flags more than half of a set's passing runs tells a user nothing
    about that kind of run; a low or info finding is kept for lessons and SQL but flags nothing."""
    lines = ["Discrimination: per detector and set, the share of passing and of failing runs it flags (severity",
             "medium or above; the failing share is its recall), and the lift: the failure rate of those runs over",
             "the base rate. Beside it, the lift of the length baseline on that set (the runs longer than the",
             "median, by steps; by calls): a detector that does not beat it says nothing a step counter does not.",
             "The rows `(all detectors)` are the set as a whole, `(length: …)` the baselines themselves.", "",
             f"{'detector':<26}{'set':<42}{'passing':>9}{'failing':>9}{'lift':>7}{'steps':>7}{'calls':>7}"]

    def row(name: str, s: Scored, fired: set[str]) -> str:
        passing = [t for t, c in s.cases.items() if not c.positive]
        failing = [t for t, c in s.cases.items() if c.positive]
        lift = _figure(scores(s, fired)[2], 2)
        bars = [_figure(scores(s, longer_than_median(s, m)[0])[2], 2) for m in LENGTHS]
        warn = "  > half the passing runs" if passing and len(fired & set(passing)) > len(passing) / 2 else ""
        return (f"{name:<26}{s.name[:41]:<42}{_share(fired, passing):>9}{_share(fired, failing):>9}{lift:>7}"
                f"{bars[0]:>7}{bars[1]:>7}{warn}")

    for detector in sorted({d for s in results for items in s.found.values() for d, _, _ in items}):
        for s in results:
            fired = {t for t, items in s.found.items()
                     if t in s.cases and any(d == detector and sev in FLAGGING for d, sev, _ in items)}
            if fired:
                lines.append(row(detector, s, fired))
    lines.append("")
    for s in results:
        lines.append(row("(all detectors)", s, {t for t in s.cases if s.flagged(t)}))
        lines += [row(f"(length: {m} > median)", s, longer_than_median(s, m)[0]) for m in LENGTHS]
    return "\n".join(lines)


def _share(fired: set[str], runs: list[str]) -> str:
    return f"{len(fired & set(runs))}/{len(runs)}" if runs else "-"


def report(s: Scored, width: int) -> str:
    tp = [t for t, c in s.cases.items() if c.positive and s.flagged(t)]
    fp = [t for t, c in s.cases.items() if not c.positive and s.flagged(t)]
    fn = [t for t, c in s.cases.items() if c.positive and not s.flagged(t)]
    tn = len(s.cases) - len(tp) - len(fp) - len(fn)
    positives = sum(c.positive for c in s.cases.values())
    precision = f"{len(tp) / (len(tp) + len(fp)):.3f}" if tp or fp else "-"
    recall = f"{len(tp) / (len(tp) + len(fn)):.3f}" if tp or fn else "-"
    lift = f"{len(tp) / (len(tp) + len(fp)) / (positives / len(s.cases)):.2f}" if (tp or fp) and positives else "-"
    lines = [f"{s.name}: {len(s.cases)} traces, {positives} labelled failed",
             f"  precision {precision}  recall {recall}  lift {lift}   "
             f"(flagged and failed {len(tp)}, flagged but passed {len(fp)}, missed {len(fn)}, rightly quiet {tn})",
             *baseline_lines(s)]

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


TOP = 25  # the lessons a report lists, and the gold lists are scored against
NOT_TRACES = ("labels.json", "metadata.json", "ORIGIN.md", "README.md", "corpus.json")
# The corpora whose lessons are counted: (name, folder under the shared folder, gold list or None).
LESSON_CORPORA = (
    ("coding sessions (Claude Code, Codex)", "samples/coding-agents", "coding-sessions.json"),
    ("SWE-agent runs", "samples/swe-agent", None),
    ("OpenHands runs", "benchmarks/openhands-swe-verified/completions", None),
    ("tau2-bench telecom", "benchmarks/tau2-telecom", "tau2-telecom.json"),
    ("tau-bench airline", "samples/tau-bench", None),
    ("agent-arena sweep", "benchmarks/agent-arena-sweep/runs", None),
    ("agent-arena samples", "samples/agent-arena", None),
    ("stream samples", "samples/stream", None),
    ("lessonweaver samples", "samples/lessonweaver", None),
)


@dataclass
class Woven:
    name: str
    traces: int
    lessons: int
    below_floor: int
    top: list[dict]  # the TOP lessons of highest priority, with the sessions their findings came from
    gold: dict | None = None  # the gold list, when there is one


def weave_corpus(name: str, folder: Path, work: Path, gold: Path | None) -> Woven | None:
    """Run a corpus whole into a database of its own; its lessons, the top ones with their sessions."""
    if not folder.is_dir():
        return None
    files = [str(p) for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in NOT_TRACES]
    db = work / (re.sub(r"\W+", "-", name) + ".duckdb")
    run = run_local(Settings(paths=tuple(files), db=str(db), out=str(work / "reports"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    try:
        cursor = con.execute(f"""
            SELECT l.lesson_id, l.title, l.problem, l.lesson, l.evidence, l.recovery, l.recovery_kind, l.frequency,
                   list_distinct(list(regexp_extract(t.file, '([^/]+?)(\\.traj)?(\\.jsonl?)?$', 1))) AS files,
                   list_distinct(list(t.trace_id)) AS trace_ids
            FROM lessons l JOIN detections d USING (lesson_id) JOIN traces t USING (trace_id)
            GROUP BY ALL ORDER BY any_value(l.priority) DESC, l.lesson_id LIMIT {TOP}""")
        names = [c[0] for c in cursor.description]
        top = [dict(zip(names, row)) for row in cursor.fetchall()]
        traces = con.execute("SELECT count(*) FROM traces").fetchall()[0][0]
    finally:
        con.close()
    return Woven(name, traces, run.lessons_total, run.findings_below_floor, top,
                 json.loads(gold.read_text()) if gold and gold.is_file() else None)


def score_gold(w: Woven) -> list[str]:
    """The gold list's lessons found among our top ones: one of ours cites one of its sessions (a file
    stem or a trace id) and its text (title, problem, lesson, evidence) names two of its key words."""
    found: dict[str, list[int]] = {}
    for g in w.gold["lessons"]:
        for rank, lesson in enumerate(w.top, start=1):
            text = " ".join(str(lesson[k] or "") for k in ("title", "problem", "lesson", "evidence")).lower()
            cites = set(g["sessions"]) & (set(lesson["files"]) | set(lesson["trace_ids"]))
            if cites and sum(k.lower() in text for k in g["keywords"]) >= 2:
                found.setdefault(g["id"], []).append(rank)
    weighty = [g["id"] for g in w.gold["lessons"] if g.get("importance") == 3]
    matched = {rank for ranks in found.values() for rank in ranks}
    lines = [f"  gold: {len(found)} of {len(w.gold['lessons'])} found in our top {TOP} "
             f"({100 * len(found) / len(w.gold['lessons']):.0f}%), "
             f"{sum(g in found for g in weighty)} of {len(weighty)} of importance 3",
             "    found: " + ", ".join(f"{g} (#{','.join(map(str, r))})" for g, r in sorted(found.items())),
             f"    ours matching none: {', '.join(f'#{r}' for r in range(1, len(w.top) + 1) if r not in matched) or 'none'}"]
    return lines


def report_lessons(w: Woven) -> str:
    worked = sum(1 for lesson in w.top if lesson["recovery"])
    lines = [f"{w.name}: {plural(w.traces, 'trace')}, {plural(w.lessons, 'lesson')} "
             f"({w.lessons / max(w.traces, 1):.2f} a trace), {plural(w.below_floor, 'finding')} below the floor"
             + (f"; of the top {len(w.top)}, {worked} say what worked or carry the person's own words" if w.top else "")]
    if w.gold:
        lines += score_gold(w)
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="folder holding benchmarks/ and samples/")
    p.add_argument("--width", type=int, default=240, help="characters of evidence shown per trace (default: 240)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lessonweaver-eval-"))
    logging.getLogger("lessonweaver").setLevel(logging.WARNING)
    try:
        results = [r for r in (arena(args.shared, work), tau(args.shared, work, True), tau(args.shared, work, False),
                               lessonweaver_v1(args.shared, work), *graded_sets(args.shared, work)) if r is not None]
        turns = turn_scores.run(args.shared) if turn_scores.LABELS.is_file() else []
        woven = [w for name, folder, gold in LESSON_CORPORA
                 if (w := weave_corpus(name, args.shared / folder, work / "lessons",
                                       args.shared / "benchmarks" / "lessons-gold" / gold if gold else None))]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not results and not woven:
        print(f"no labelled corpora under {args.shared} (benchmarks/, samples/tau-bench/)")
        return 0
    print("lessonweaver evaluation: a trace is flagged when a detection of severity medium or above is found\n")
    print("\n\n".join(report(r, args.width) for r in results))
    print("\n\n" + discrimination(results))
    if turns:
        print("\n\nWho speaks and what they mean: the labelled turns (benchmarks/turns/), per set\n")
        print(turn_scores.report(turns))
    print(f"\n\nLessons, per corpus run whole (the top {TOP}: the lessons a report lists)\n")
    print("\n\n".join(report_lessons(w) for w in woven))
    return 0


if __name__ == "__main__":
    sys.exit(main())
