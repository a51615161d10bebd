"""Score who speaks and what they mean against the labelled turns (labels.csv, written by reading, RULES.md).

    .venv/bin/python benchmarks/turns/score.py [--shared ../shared] [--set NAME] [--show correction]

Each labelled set is run whole through lessonweaver (pipeline.run_local, a database of its own), and every
labelled turn is found among the events of its file by its text (the hash labels.csv keeps), in order.
Printed per set: how many turns were found; of the turns a reader labelled `correction`, how many our intent
layer calls `correction` (precision and recall), and the same for the `human_correction` detector's findings;
how many harness, parent, tool or agent turns we give to a person or a counterpart, or flag. `--show`
lists the turns where we and the reader disagree on an intent (texts go to the terminal only).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import logging
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import extract  # noqa: E402

from lessonweaver.config import Settings  # noqa: E402
from lessonweaver.pipeline import run_local  # noqa: E402

LABELS = Path(__file__).resolve().parent / "labels.csv"
PEOPLE = ("person", "counterpart")
# Which of our actors a reader's speaker is: a person operating the agent, a counterpart it serves, or no person.
ACTORS = {"person": "human", "counterpart": "counterpart"}

# Every event in the user's place, with who we say wrote it, its intent, and whether human_correction found it.
TURNS = """
    SELECT t.file, e.trace_id, e.seq, e.type, lw_actor(e.type, e.actor) AS actor, e.content,
           i.intent, d.seq IS NOT NULL AS flagged
    FROM events e JOIN traces t USING (trace_id)
    LEFT JOIN turns i USING (trace_id, seq)
    LEFT JOIN (SELECT DISTINCT trace_id, seq FROM detections WHERE detector = 'human_correction') d USING (trace_id, seq)
    WHERE e.type IN ('user_message', 'human_correction', 'workflow_step')
    ORDER BY t.file, e.trace_id, e.seq"""


@dataclass
class Ours:
    actor: str
    intent: str | None
    flagged: bool


@dataclass
class SetScore:
    name: str
    labelled: int = 0
    found: int = 0
    counts: Counter = field(default_factory=Counter)  # (reader's, ours) per kind of comparison
    disagreements: list[tuple[str, str, str]] = field(default_factory=list)  # (reader's intent, ours, text)


def sha12(text: str | None) -> str:
    return hashlib.sha1((text or "").strip().encode("utf-8")).hexdigest()[:12]


def labelled(shared: Path) -> dict[str, list[tuple[dict, str]]]:
    """The labels per set, each with the turn's text (from the raw files)."""
    texts = {(t.set, t.file, t.locator): t.text for t in extract.all_turns(shared)}
    with LABELS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    by_set: dict[str, list[tuple[dict, str]]] = defaultdict(list)
    for row in rows:
        by_set[row["set"]].append((row, texts.get((row["set"], row["file"], row["locator"]), "")))
    return by_set


def ours(shared: Path, rows: list[tuple[dict, str]], work: Path, name: str) -> dict[str, list[Ours]]:
    """Run the set's files whole; our turns by the hash of their text, in file and event order."""
    files = sorted({str(shared / row["file"]) for row, _ in rows})
    db = work / f"{name}.duckdb"
    run_local(Settings(paths=tuple(files), db=str(db), out=str(work / f"{name}-reports"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    try:
        from lessonweaver.queries import query
        con.execute(query("macros.sql").replace("CREATE OR REPLACE MACRO", "CREATE OR REPLACE TEMP MACRO"))
        found: dict[str, list[Ours]] = defaultdict(list)
        for _file, _trace, _seq, _type, actor, content, intent, flagged in con.execute(TURNS).fetchall():
            found[sha12(content)].append(Ours(actor, intent, flagged))
        return found
    finally:
        con.close()


def score(name: str, rows: list[tuple[dict, str]], found: dict[str, list[Ours]], every: bool = False) -> SetScore:
    """Compare the reader's labels with ours; `every`: keep every disagreement, not only those on corrections.
    A tool use the person refused is labelled by the text the producer wrote ("The user doesn't want to
    proceed..."); we keep only the words the person added, none here: such a label is found among our
    corrections without words."""
    s = SetScore(name, labelled=len(rows))
    taken: Counter = Counter()
    for row, text in rows:
        key = row["sha1_12"]
        if text.startswith(extract.PERSON_REFUSALS) and key not in found:
            key = sha12("")
        if taken[key] >= len(found.get(key, [])):
            s.counts["missing", row["speaker"]] += 1
            continue
        o = found[key][taken[key]]
        taken[key] += 1
        s.found += 1
        person = row["speaker"] in PEOPLE
        said_person = o.actor in ("human", "counterpart")
        s.counts["speaker", (row["speaker"], o.actor)] += 1
        if not person:
            s.counts["harness_as_person"] += said_person
            s.counts["harness_flagged"] += o.flagged
            s.counts["harness_turns"] += 1
            continue
        reader = row["intent"]
        s.counts["intent", (reader, o.intent)] += 1
        for kind, said in (("intent", o.intent == "correction"), ("detector", o.flagged)):
            truth = reader == "correction"
            s.counts[kind + "_tp"] += truth and said
            s.counts[kind + "_fp"] += said and not truth
            s.counts[kind + "_fn"] += truth and not said
        if reader != o.intent and (every or "correction" in (reader, o.intent)):
            s.disagreements.append((reader, str(o.intent), text))
    return s


def ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def report(scores: list[SetScore]) -> str:
    lines = ["| set | turns found | corrections | intent P | intent R | detector P | detector R | harness turns | "
             "given to a person | flagged |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in scores:
        c = s.counts
        truth = c["intent_tp"] + c["intent_fn"]
        lines.append(
            f"| {s.name} | {s.found}/{s.labelled} | {truth} | "
            f"{ratio(c['intent_tp'], c['intent_tp'] + c['intent_fp'])} | {ratio(c['intent_tp'], truth)} | "
            f"{ratio(c['detector_tp'], c['detector_tp'] + c['detector_fp'])} | {ratio(c['detector_tp'], truth)} | "
            f"{c['harness_turns']} | {c['harness_as_person']} | {c['harness_flagged']} |")
    return "\n".join(lines)


def run(shared: Path, only: str | None = None) -> list[SetScore]:
    logging.getLogger("lessonweaver").setLevel(logging.WARNING)
    by_set = labelled(shared)
    scores = []
    with tempfile.TemporaryDirectory(prefix="lw-turns-") as tmp:
        for name, rows in by_set.items():
            if only in (None, name):
                scores.append(score(name, rows, ours(shared, rows, Path(tmp), name)))
    return scores


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shared", type=Path, default=ROOT.parent / "shared", help="the shared reference folder")
    p.add_argument("--set", help="only this labelled set")
    p.add_argument("--show", action="store_true", help="list the turns where we and the reader disagree on a correction")
    args = p.parse_args()
    if not LABELS.is_file() or not (args.shared / "samples").is_dir():
        print(f"score.py: needs {LABELS} and the shared folder {args.shared}", file=sys.stderr)
        return 2
    scores = run(args.shared, args.set)
    print(report(scores))
    if args.show:
        for s in scores:
            for reader, mine, text in s.disagreements:
                print(f"{s.name}\treader {reader}\tours {mine}\t{text[:160]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
