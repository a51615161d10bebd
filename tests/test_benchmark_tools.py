"""The benchmark's own tools: the corpus generator keeps its promises, the pure-Python baseline agrees
with the detectors, and the step-by-step breakdown and the one-part profile run every step on real files."""

import hashlib
import random
import subprocess
import sys

import duckdb

from conftest import REPO, rows, stage

sys.path.insert(0, str(REPO))
from benchmarks import generate, part, run  # noqa: E402

MIX = {fmt: 1.0 for fmt in generate.FORMATS}
# The three core detectors, and the planted signal each must find.
SIGNALS = {"human_correction": "correction", "failed_evaluation": "eval", "retry": "retry"}
# Signals a format has no record for, and one it records otherwise (generate.py's docstring): a
# TraceEvent correction is a critic's review and a revision.
MISSING = {"stream": {"correction", "eval"}, "traceevent": {"eval"}}
RECORDED_AS = {("traceevent", "correction"): "critic_revision"}


def _digest(folder) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in sorted(folder.glob("*.jsonl")))).hexdigest()


def _planted(traces: int, seed: int, mix: dict[str, float], max_words: int) -> dict[str, dict[str, set[str]]]:
    """Per format, the trace ids the generator planted each signal in, drawn again with its own functions
    (the same draws in the same order as generate.generate)."""
    rng = random.Random(seed)
    lengths = tuple(n for n in generate.LENGTHS if n <= max_words)
    formats = sorted(mix)
    planted: dict[str, dict[str, set[str]]] = {
        f: {"all": set(), "sensitive": set(), "secret": set(), **{s: set() for s in SIGNALS.values()}} for f in formats}
    for i in range(traces):
        t = generate.trace(rng, i, lengths)
        fmt = rng.choices(formats, weights=[mix[f] for f in formats])[0]
        types = {e["type"] for e in t["events"]}
        content = " ".join(e.get("content", "") for e in t["events"])
        tid = f"be{i:030x}" if fmt == "otlp" else t["trace_id"]  # an OTLP trace id is 32 hex digits
        planted[fmt]["all"].add(tid)
        if t["metadata"].get("contains_pii"):  # tagged by its producer: quarantined whole
            planted[fmt]["sensitive"].add(tid)
            continue
        if generate.FAKE_SECRET in content:  # an untagged secret: redacted in place, the trace kept
            planted[fmt]["secret"].add(tid)
        if "human_correction" in types:
            planted[fmt]["correction"].add(tid)
        if "evaluation_result" in types:
            planted[fmt]["eval"].add(tid)
        if "retry" in types:
            planted[fmt]["retry"].add(tid)
    return planted


def test_the_same_arguments_write_the_same_bytes(tmp_path):
    generate.generate(tmp_path / "a", 60, seed=3, files=2, mix=MIX, max_words=16)
    generate.generate(tmp_path / "b", 60, seed=3, files=2, mix=MIX, max_words=16)
    generate.generate(tmp_path / "c", 60, seed=4, files=2, mix=MIX, max_words=16)
    assert _digest(tmp_path / "a") == _digest(tmp_path / "b")
    assert _digest(tmp_path / "a") != _digest(tmp_path / "c")


def test_every_format_loads_whole_and_the_detectors_find_exactly_what_was_planted(tmp_path):
    traces, seed = 600, 11
    generate.generate(tmp_path, traces, seed=seed, files=2, mix=MIX, max_words=16)
    con = stage(sorted(tmp_path.glob("*.jsonl")))
    assert rows(con, "SELECT path, line, reason FROM rejects JOIN files USING (file_id)") == []
    planted = _planted(traces, seed, MIX, max_words=16)
    quarantined = {r["trace_id"] for r in rows(con, "SELECT trace_id FROM quarantine")}
    assert quarantined == set().union(*(p["sensitive"] for p in planted.values()))
    redacted = {r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces WHERE redacted IS NOT NULL")}
    assert redacted == set().union(*(p["secret"] for p in planted.values())) != set()
    for fmt, want in planted.items():
        loaded = {r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces WHERE format = ?", [fmt])}
        assert loaded == want["all"] - want["sensitive"], fmt
        for core, signal in SIGNALS.items():
            detector = RECORDED_AS.get((fmt, signal), core)
            found = {r["trace_id"] for r in rows(
                con, "SELECT DISTINCT d.trace_id FROM detections d JOIN traces t USING (trace_id) "
                     "WHERE d.detector = ? AND t.format = ?", [detector, fmt])}
            expected = set() if signal in MISSING.get(fmt, ()) else want[signal]
            assert found == expected, (fmt, detector, len(found), len(expected))
    # Each signal is planted in about a tenth of the traces.
    everywhere = {s: sum(len(p[s]) for p in planted.values()) for s in SIGNALS.values()}
    assert all(0.05 * traces < n < 0.15 * traces for n in everywhere.values()), everywhere


def test_the_baseline_counts_what_the_detectors_find(tmp_path):
    corpus = tmp_path / "corpus"
    generate.generate(corpus, 400, seed=5, files=2, mix={"lessonweaver": 1.0}, max_words=16)
    con = stage([corpus])
    skip = tmp_path / "quarantined.txt"
    skip.write_text("".join(r["trace_id"] + "\n" for r in rows(con, "SELECT trace_id FROM quarantine")))
    _, counts = run.baseline(sorted(str(p) for p in corpus.glob("*.jsonl")), skip)
    assert counts["traces"] == rows(con, "SELECT count(*) AS n FROM traces")[0]["n"]
    for detector in SIGNALS:
        found = rows(con, "SELECT count(*) AS n FROM detections WHERE detector = ?", [detector])[0]["n"]
        assert counts[detector] == found > 0, detector


def test_the_breakdown_times_every_step_over_real_batches(tmp_path):
    corpus = tmp_path / "corpus"
    generate.generate(corpus, 300, seed=2, files=2, mix={"lessonweaver": 1.0, "otlp": 1.0}, max_words=16)
    steps = run.breakdown(run.discover.discover([str(corpus)]), tmp_path / "work")
    assert list(steps) == ["read", "scan", "adapt", "screen", "detect", "audit staged", "account", "write", "load", "weave", "audit"]
    assert all(seconds > 0 for seconds in steps.values())
    con = duckdb.connect(str(tmp_path / "work" / "breakdown.duckdb"), read_only=True)
    try:
        loaded, quarantined = con.execute(
            "SELECT (SELECT count(*) FROM traces), (SELECT count(DISTINCT trace_id) FROM quarantine)").fetchone()
    finally:
        con.close()
    assert loaded + quarantined == 300


def test_the_part_profile_stages_the_first_part_a_run_would_stage(tmp_path):
    generate.generate(tmp_path, 400, seed=3, files=1, mix={"lessonweaver": 1.0}, max_words=16)
    (path,) = tmp_path.glob("*.jsonl")
    first = part.first_part(str(path), 64 * 1024)
    assert first.is_part and first.start == 0 and first.end < path.stat().st_size
    records = part.part_bytes(first).count(b"\n")
    steps = part.stage_steps(first, part.Settings(batch_bytes=64 * 1024), part.detectors.load_detectors())
    assert [k for k in steps if ":" not in k and k[0] != "_"] == [
        "read", "scan", "adapt", "screen", "detect", "audit staged", "account", "write"]
    assert [k for k in steps if k.startswith("floor: ")] == [f"floor: {name}" for name in part.FLOOR]
    assert {k.removeprefix("detect: ") for k in steps if k.startswith("detect: ")} == {
        "the exposures", "the exposures of kept", "the facts", "the turns",
        *(d.id for d in part.detectors.load_detectors())}
    # Every line of the part became a staged trace or a quarantined one; none came from past the cut.
    assert 0 < steps["_traces"] <= records and steps["_events"] > steps["_traces"]


def test_the_part_profile_reports_against_the_typed_parse(tmp_path):
    generate.generate(tmp_path, 200, seed=4, files=1, mix={"lessonweaver": 1.0}, max_words=16)
    (path,) = tmp_path.glob("*.jsonl")
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "part.py"), str(path), "--bytes", "40KB",
                           "--repeat", "1"], capture_output=True, text=True, check=True)
    assert "typed parse:" in done.stdout and "retry" in done.stdout and "one ordered pass over the events" in done.stdout
    staging = next(line for line in done.stdout.splitlines() if line.strip().startswith("staging"))
    assert staging.split()[-1].endswith("x") and float(staging.split()[1]) > 0
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "part.py"), str(path), "--bytes", "lots"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "--bytes must be a size" in bad.stderr and "Traceback" not in bad.stderr


def test_the_peer_comparison_names_a_folder_without_traces(tmp_path):
    """benchmarks/peer.py installs the peer from the package index, which CI may not reach: here only what it
    says, before installing anything, when the folder holds no trace files."""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "peer.py"), str(tmp_path), "--venv", str(tmp_path / "venv")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and f"no .jsonl files in {tmp_path}" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "venv").exists()
