"""List the user-role turns of the shared traces that `labels.csv` beside this file labels.

Every row of labels.csv names a turn by set, file (relative to the shared folder) and locator, and carries the
turn's length, word count and a hash of its text. This script finds the same turns in the raw files, so a second
reader can re-derive the rows, read each turn where it stands, and check that the labels sit on the texts they
were written for. The texts stay where they are: the script only prints to the terminal and never writes a file.

    python benchmarks/turns/extract.py --shared ../shared                  # every turn, one line each
    python benchmarks/turns/extract.py --shared ../shared --set tau2-telecom
    python benchmarks/turns/extract.py --shared ../shared --check benchmarks/turns/labels.csv
    python benchmarks/turns/extract.py --shared ../shared --counts         # what is counted, not labelled

A turn's text is the text as it stands in the file after JSON decoding, with leading and trailing whitespace
stripped; `sha1_12` is the first 12 hex digits of the SHA-1 of its UTF-8 bytes, `chars` its length in
characters, `words` the number of whitespace-separated words. Locators: `line:N` (1-based physical line of a
JSONL file, comment lines included) plus `#block:K` (0-based content block) when the record holds several
blocks; a JSON pointer into JSON documents, ending in `/content/K` when a message holds several blocks.
Two kinds of turn have no text of their own, and get one made from the record (RULES.md says why):
a tau2 customer's tool call on their own device (`name(arguments as sorted JSON)`, one call a line) and a Codex
`turn_aborted` event (its `reason`).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

CLAUDE_DIR = "samples/coding-agents/cc-session-share"
CODEX_DIR = "samples/coding-agents/codex-openprintkit/.codex/sessions"
TAU2_DIR = "benchmarks/tau2-telecom"
TAU_BENCH_DIR = "samples/tau-bench"
MINI_SWE_DIR = "samples/swe-agent/trajs"
OPENHANDS_DIR = "benchmarks/openhands-swe-verified/completions"
WHOWHEN_DIRS = {"whowhen-magentic": "benchmarks/whowhen/Hand-Crafted", "whowhen-ag2": "benchmarks/whowhen/Algorithm-Generated"}

OPENHANDS_EVERY = 5  # the sample: every 5th run in name order, from the first (10 of 50)
WHOWHEN_FILES = 10  # the sample: the files numbered lowest, in numeric order

# Tool results are output, counted and not labelled, except those that record the person refusing the tool call:
# Claude Code writes the person's refusal (and any words typed with it) as the result of the refused call.
PERSON_REFUSALS = ("The user doesn't want to proceed with this tool use", "User chose to stay in plan mode")


@dataclass(frozen=True)
class Turn:
    set: str
    file: str
    locator: str
    text: str
    duplicate: str = ""  # Codex: the event_msg line that repeats this response_item's text

    @property
    def sha1_12(self) -> str:
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()[:12]

    @property
    def words(self) -> int:
        return len(self.text.split())


def block_text(block: object) -> str | None:
    """The text of a content block or of a tool result's content (string, or list of text blocks)."""
    if isinstance(block, str):
        return block
    if isinstance(block, list):
        parts = [block_text(item) for item in block]
        return "\n".join(p for p in parts if p is not None)
    if isinstance(block, dict) and block.get("type") in ("text", "input_text"):
        return block.get("text", "")
    return None


def jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(physical line number, record) for every JSON line; `//` comment lines and blank lines are skipped."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip() and not line.startswith("//"):
                yield number, json.loads(line)


def claude_turns(shared: Path, counts: Counter) -> Iterator[Turn]:
    """User records of Claude Code sessions, subagent files and fixtures: string content, text blocks, refusals."""
    for path in sorted((shared / CLAUDE_DIR).rglob("*.jsonl")):
        name = str(path.relative_to(shared))
        for number, record in jsonl_records(path):
            message = record.get("message")
            if record.get("type") != "user" or not isinstance(message, dict) or message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                yield Turn("coding-claude", name, f"line:{number}", content.strip())
                continue
            for k, block in enumerate(content or []):
                locator = f"line:{number}" + (f"#block:{k}" if len(content) > 1 else "")
                kind = block.get("type")
                if kind == "text":
                    yield Turn("coding-claude", name, locator, block.get("text", "").strip())
                elif kind == "tool_result":
                    text = (block_text(block.get("content")) or "").strip()
                    if text.startswith(PERSON_REFUSALS):
                        yield Turn("coding-claude", name, locator, text)
                    else:
                        counts[(name, "tool_result")] += 1
                else:
                    counts[(name, kind)] += 1


def codex_turns(shared: Path, counts: Counter) -> Iterator[Turn]:
    """User messages of Codex rollouts (response_item), turn_aborted events; event_msg copies are paired, not listed."""
    for path in sorted((shared / CODEX_DIR).rglob("*.jsonl")):
        name = str(path.relative_to(shared))
        turns: list[Turn] = []
        unpaired: list[int] = []  # indexes into turns of user messages not yet matched by an event_msg copy
        for number, record in jsonl_records(path):
            payload = record.get("payload") or {}
            kind = (record.get("type"), payload.get("type"))
            if kind == ("response_item", "message") and payload.get("role") == "user":
                blocks = payload.get("content") or []
                for k, block in enumerate(blocks):
                    locator = f"line:{number}" + (f"#block:{k}" if len(blocks) > 1 else "")
                    unpaired.append(len(turns))
                    turns.append(Turn("coding-codex", name, locator, (block_text(block) or "").strip()))
            elif kind == ("event_msg", "user_message"):
                text = (payload.get("message") or "").strip()
                twin = next((i for i in unpaired if turns[i].text == text), None)
                if twin is None:
                    turns.append(Turn("coding-codex", name, f"line:{number}", text))
                else:
                    unpaired.remove(twin)
                    t = turns[twin]
                    turns[twin] = Turn(t.set, t.file, t.locator, t.text, duplicate=f"line:{number}")
                    counts[(name, "event_msg user_message copies")] += 1
            elif kind == ("event_msg", "turn_aborted"):
                turns.append(Turn("coding-codex", name, f"line:{number}", str(payload.get("reason") or "").strip()))
        yield from turns


def message_turns(set_name: str, name: str, messages: list, prefix: str, roles: tuple[str, ...]) -> Iterator[Turn]:
    """Chat messages of the given roles; a message holding several content blocks gives one turn per text block."""
    for j, message in enumerate(messages):
        if message.get("role") not in roles:
            continue
        pointer = f"{prefix}/{j}"
        content = message.get("content")
        if isinstance(content, list) and len(content) > 1:
            for k, block in enumerate(content):
                text = block_text(block)
                if text is not None:
                    yield Turn(set_name, name, f"{pointer}/content/{k}", text.strip())
            continue
        text = (block_text(content) or "").strip()
        calls = message.get("tool_calls") or []
        if not text and calls:  # tau2: the customer acts on their own device instead of speaking
            text = "\n".join(f"{c.get('name')}({json.dumps(c.get('arguments'), sort_keys=True, ensure_ascii=False)})"
                             for c in calls)
        yield Turn(set_name, name, pointer, text)


def tau2_turns(shared: Path) -> Iterator[Turn]:
    for path in sorted((shared / TAU2_DIR).glob("*.json")):
        results = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(results, dict) or "simulations" not in results:
            continue  # labels.json and other files beside the results
        name = str(path.relative_to(shared))
        for i, simulation in enumerate(results["simulations"]):
            yield from message_turns("tau2-telecom", name, simulation["messages"], f"/simulations/{i}/messages", ("user",))


def tau_bench_turns(shared: Path) -> Iterator[Turn]:
    for path in sorted((shared / TAU_BENCH_DIR).glob("*.json")):
        name = str(path.relative_to(shared))
        for i, run in enumerate(json.loads(path.read_text(encoding="utf-8"))):
            yield from message_turns("tau-bench-airline", name, run["traj"], f"/{i}/traj", ("user",))


def mini_swe_turns(shared: Path) -> Iterator[Turn]:
    for path in sorted((shared / MINI_SWE_DIR).glob("*.traj.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        yield from message_turns("mini-swe-agent", str(path.relative_to(shared)), run["messages"], "/messages", ("user",))


def openhands_turns(shared: Path) -> Iterator[Turn]:
    folder = shared / OPENHANDS_DIR
    runs = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    for run in runs[::OPENHANDS_EVERY]:
        for path in sorted(run.glob("*.json")):
            log = json.loads(path.read_text(encoding="utf-8"))
            yield from message_turns("openhands", str(path.relative_to(shared)), log["messages"], "/messages", ("user",))


def whowhen_turns(shared: Path) -> Iterator[Turn]:
    """The first entry of each sampled file (the task) and every entry in the user or human role."""
    for set_name, folder in WHOWHEN_DIRS.items():
        paths = sorted((shared / folder).glob("*.json"), key=lambda p: int(p.stem))[:WHOWHEN_FILES]
        for path in paths:
            history = json.loads(path.read_text(encoding="utf-8"))["history"]
            name = str(path.relative_to(shared))
            for j, entry in enumerate(history):
                if j == 0 or entry.get("role") in ("user", "human"):
                    yield Turn(set_name, name, f"/history/{j}", (block_text(entry.get("content")) or "").strip())


def all_turns(shared: Path, counts: Counter | None = None) -> list[Turn]:
    counts = Counter() if counts is None else counts
    return [*claude_turns(shared, counts), *codex_turns(shared, counts), *tau2_turns(shared), *tau_bench_turns(shared),
            *mini_swe_turns(shared), *openhands_turns(shared), *whowhen_turns(shared)]


def check(turns: list[Turn], labels: Path, only_set: str | None) -> int:
    """Compare labels.csv with the turns found: every row must match a turn (hash, length, words) and vice versa."""
    found = {(t.set, t.file, t.locator): t for t in turns}
    with labels.open(encoding="utf-8", newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if only_set in (None, row["set"])]
    problems = []
    seen = set()
    for number, row in enumerate(rows, 2):
        key = (row["set"], row["file"], row["locator"])
        turn = found.get(key)
        if key in seen:
            problems.append(f"row {number}: {key} labelled twice")
        seen.add(key)
        if turn is None:
            problems.append(f"row {number}: no such turn {key}")
        elif (row["sha1_12"], int(row["chars"]), int(row["words"])) != (turn.sha1_12, len(turn.text), turn.words):
            problems.append(f"row {number}: {key} does not match the text found (hash, chars or words)")
    problems += [f"not labelled: {key}" for key in found if key not in seen]
    for line in problems:
        print(line)
    print(f"{len(rows)} rows, {len(found)} turns, {len(problems)} problems")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, required=True, help="the shared reference folder (../shared)")
    parser.add_argument("--set", help="only this set (coding-claude, coding-codex, tau2-telecom, ...)")
    parser.add_argument("--check", type=Path, metavar="LABELS_CSV", help="check labels.csv against the turns found")
    parser.add_argument("--counts", action="store_true", help="print what is counted but not labelled")
    args = parser.parse_args(argv)
    if not args.shared.is_dir():
        print(f"extract.py: {args.shared}: not a folder (pass the shared reference folder)", file=sys.stderr)
        return 2
    counts: Counter = Counter()
    turns = [t for t in all_turns(args.shared, counts) if args.set in (None, t.set)]
    if args.check:
        return check(turns, args.check, args.set)
    if args.counts:
        for (name, kind), n in sorted(counts.items()):
            print(f"{n}\t{kind}\t{name}")
        return 0
    for t in turns:
        head = t.text[:80].replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")
        dup = f"\t(same text: {t.duplicate})" if t.duplicate else ""
        print(f"{t.set}\t{t.file}\t{t.locator}\t{t.sha1_12}\t{len(t.text)}\t{t.words}\t{head}{dup}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader stopped early (`| head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
