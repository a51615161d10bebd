"""What lessonweaver finds on every shared sample and benchmark, as a digest: the check that a change meant
to be faster (or tidier) changes no finding.

    .venv/bin/python benchmarks/findings.py                 # compare with tests/fixtures/shared_findings.json
    .venv/bin/python benchmarks/findings.py --write         # record what is found now

Each folder under ../shared/samples and ../shared/benchmarks (but the gold lessons) is run whole, as
`lessonweaver run` would, into a database of its own. Per folder the digest keeps the counts of traces,
quarantined traces, rejected records, detections per detector and lessons, and a SHA-256 of every
detection (the trace's content hash, event, detector, severity, evidence, title) and of every lesson
(its representative detector and texts, rule, recovery, counts and priority), sorted: the same wherever the
folder is. Ids and texts that depend on a path or on a fresh database's salt are left out. tests/test_findings.py runs the
comparison on every test run when ../shared is there; after a change that is meant to change findings,
record them again with --write and say why in the commit.
"""

import argparse
import hashlib
import json
import logging
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: the project's packages, not only the installed ones

from benchmarks.eval import v1_traces
from lessonweaver.config import Settings
from lessonweaver.pipeline import run_local

RECORD = ROOT / "tests" / "fixtures" / "shared_findings.json"
NOT_TRACES = ("labels.json", "metadata.json", "ORIGIN.md", "README.md", "corpus.json")
SKIP = ("lessons-gold",)

# A trace by its content (the hash the load keeps), not by its id: ids of traces without one of their own
# are hashes of their file's path, and sealed ids are salted per database (those go by their file). A trace
# whose secrets were redacted hashes its markers without their salted hashes (sql/stage/outputs.sql), and every
# text here goes without a marker's hash too (`unmarked`).
DETECTIONS = """
    SELECT coalesce(t.content_hash, replace(replace(s.file, $folder, ''), $work, ''), d.trace_id),
           coalesce(d.seq, -1), d.detector, d.severity, unmarked(d.evidence), unmarked(d.title)
    FROM detections d LEFT JOIN traces t USING (trace_id) LEFT JOIN sealed_traces s ON s.sealed = d.trace_id
    ORDER BY ALL"""
# A lesson as its reader sees it: which finding speaks for it (its detector, texts and recovery), its rule,
# how often it was seen and its priority; no id (ids of traces without one of their own are hashes of their
# file's path, and lesson ids follow from them). A changed weight, representative or floor changes this.
LESSONS = """
    SELECT detector, severity, category, confidence, human, occurrences, trace_count, wasted_steps,
           unmarked(frequency), unmarked(title), unmarked(problem), unmarked(proposed_lesson),
           unmarked(evidence), unmarked(signature), unmarked(tool), unmarked(recovery),
           coalesce(recovery_kind, ''), priority
    FROM lessons ORDER BY ALL"""
# a text with each redaction marker's salted hash left out (the database's own macro), NULL as empty
UNMARKED = "CREATE TEMP MACRO unmarked(txt) AS lw_unmarked(coalesce(txt, ''))"


def corpora(shared: Path) -> list[Path]:
    """The folders of shared trace data, in a fixed order."""
    return [d for kind in ("samples", "benchmarks") if (shared / kind).is_dir()
            for d in sorted((shared / kind).iterdir()) if d.is_dir() and d.name not in SKIP]


def _digest(rows: list[tuple]) -> str:
    h = hashlib.sha256()
    for row in rows:
        h.update(json.dumps([str(v) for v in row], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def findings(folder: Path, work: Path) -> dict:
    """Run one folder whole into a fresh database; what it found, as counts and digests. The
    lessonweaver-v1 benchmark keeps its traces inside its cases (corpus.json): they are run as eval reads them."""
    files = [str(p) for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in NOT_TRACES]
    if folder.name == "lessonweaver-v1" and (v1 := v1_traces(folder.parent.parent, work)) is not None:
        files = [str(v1[0])]
    db = work / f"{folder.parent.name}-{folder.name}.duckdb"
    run_local(Settings(paths=tuple(files), db=str(db), out=str(work / "reports" / folder.name), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    try:
        con.execute(UNMARKED)
        detections = con.execute(DETECTIONS, {"folder": f"{folder}/", "work": f"{work}/"}).fetchall()
        lessons = con.execute(LESSONS).fetchall()
        counts = dict(con.execute("SELECT detector, count(*) FROM detections GROUP BY ALL ORDER BY ALL").fetchall())
        traces, quarantined, rejected = con.execute("SELECT (SELECT count(*) FROM traces), (SELECT count(*) FROM quarantine), "
                                                    "(SELECT count(*) FROM rejects)").fetchone()
    finally:
        con.close()
    return {"traces": traces, "quarantined": quarantined, "rejected": rejected, "detections": counts, "lessons": len(lessons),
            "detections_sha256": _digest(detections), "lessons_sha256": _digest(lessons)}


def everything(shared: Path) -> dict[str, dict]:
    logging.getLogger("lessonweaver").setLevel(logging.WARNING)  # a run's progress lines, not wanted here
    with tempfile.TemporaryDirectory(prefix="lw-findings-") as work:
        return {f"{d.parent.name}/{d.name}": findings(d, Path(work)) for d in corpora(shared)}


def differences(before: dict[str, dict], now: dict[str, dict]) -> list[str]:
    """What changed, folder by folder, in words a person can act on."""
    out = []
    for name in sorted(set(before) | set(now)):
        b, n = before.get(name), now.get(name)
        if b is None or n is None:
            out.append(f"{name}: {'new folder' if b is None else 'folder gone'}")
            continue
        for key in ("traces", "quarantined", "rejected", "lessons"):
            if b[key] != n[key]:
                out.append(f"{name}: {key} {b[key]} -> {n[key]}")
        for det in sorted(set(b["detections"]) | set(n["detections"])):
            if b["detections"].get(det, 0) != n["detections"].get(det, 0):
                out.append(f"{name}: {det} {b['detections'].get(det, 0)} -> {n['detections'].get(det, 0)} detections")
        for key, what in (("detections_sha256", "evidence, titles, causes or severities"),
                          ("lessons_sha256", "rules, texts, representative findings, recovery or priorities")):
            if b[key] != n[key] and not any(line.startswith(f"{name}: ") for line in out):
                out.append(f"{name}: same counts, other {key.split('_')[0]} ({what} changed)")
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="folder holding samples/ and benchmarks/")
    p.add_argument("--write", action="store_true", help=f"record what is found now in {RECORD.relative_to(ROOT)}")
    args = p.parse_args()
    if not corpora(args.shared):
        print(f"findings: no shared samples under {args.shared}", file=sys.stderr)
        return 2
    now = everything(args.shared)
    if args.write:
        RECORD.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        total = sum(sum(v["detections"].values()) for v in now.values())
        print(f"recorded {total} detections and {sum(v['lessons'] for v in now.values())} lessons "
              f"of {len(now)} folders in {RECORD.relative_to(ROOT)}")
        return 0
    changed = differences(json.loads(RECORD.read_text()), now)
    print("\n".join(changed) if changed else f"the same findings on all {len(now)} folders")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
