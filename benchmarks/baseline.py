"""The script a user would otherwise write: three core detectors in plain Python over lessonweaver JSONL.

    python benchmarks/baseline.py PATH [PATH ...] [--skip-ids FILE]

PATH is a file (JSON Lines, or `.json` with one trace or an array; `.gz` of either) or a folder (its
`*.jsonl` files).

json module, one loop per trace, one process: a human_correction event (or an outcome corrected_by_human
without one), a failed evaluation_result, and a retry (a retry event after an error or failure, or the
same tool called again after it failed). The rules are those of sql/detectors/, so on the same traces the
counts equal lessonweaver's. It has none of the rest: no validation, privacy screen, other formats,
lessons or database. Records that are not lessonweaver traces (no `events` list) are passed over.
--skip-ids leaves out the trace ids listed in FILE (one a line), e.g. those lessonweaver quarantined, to
compare counts like for like. Prints the counts as one JSON object.
"""

import argparse
import gzip
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ALIASES = {
    "user": "user_message", "human_message": "user_message", "assistant": "assistant_message",
    "ai_message": "assistant_message", "agent_message": "assistant_message", "llm_call": "model_call",
    "llm_response": "model_call", "tool_use": "tool_call", "tool_output": "tool_result", "tool_response": "tool_result",
    "exception": "error", "correction": "human_correction", "human_feedback": "human_correction",
    "evaluation": "evaluation_result", "eval_result": "evaluation_result", "final": "final_answer", "step": "workflow_step",
}
FAILED = {"failed", "failure", "fail", "error", "errored", "timeout", "timed_out", "rejected"}
EVALUATION_FAILED = {"failed", "failure", "fail", "error"}
FALSY = {"false", "no", "n", "0", "off"}
TOOL_IN_CONTENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.:/-]{0,127})\s*(\(.*)?$", re.DOTALL)


def canonical(kind) -> str:
    kind = str(kind).strip().lower().replace("-", "_").replace(" ", "_")
    return ALIASES.get(kind, kind)


def failed(event: dict, words: set[str] = FAILED) -> bool:
    return str(event.get("status", "")).strip().lower() in words or str(event.get("success")).strip(' "').lower() in FALSY


def tool_name(event: dict, kind: str):
    meta = event.get("metadata") if isinstance(event.get("metadata"), dict) else {}
    name = event.get("tool_name") or meta.get("tool") or meta.get("tool_name")
    if not name and kind in ("tool_call", "tool_result") and isinstance(event.get("content"), str):
        match = TOOL_IN_CONTENT.match(event["content"])
        name = match.group(1) if match else None
    return name


def detect(trace: dict, counts: dict) -> None:
    events = [e for e in trace["events"] if isinstance(e, dict)]
    kinds = [canonical(e.get("type", "")) for e in events]
    counts["events"] += len(events)
    corrections = kinds.count("human_correction")
    counts["human_correction"] += corrections
    if not corrections and str(trace.get("outcome", "")).strip().lower() in ("corrected_by_human", "human_corrected", "corrected"):
        counts["human_correction"] += 1
    counts["failed_evaluation"] += sum(1 for e, k in zip(events, kinds) if k == "evaluation_result" and failed(e, EVALUATION_FAILED))

    seen_failure = False
    failures: list[tuple[int, str]] = []  # (position, tool) of failed steps not yet followed by a call
    retried: dict[tuple[str, int], int] = {}  # (tool, next call position) -> 1: a failure and its failed result count once
    last_retry = -1
    for pos, (e, kind) in enumerate(zip(events, kinds)):
        if kind == "retry":
            if seen_failure:
                counts["retry"] += 1
            last_retry = pos
        tool = tool_name(e, kind)
        if kind == "tool_call" and tool:
            for fpos, ftool in failures:
                if ftool == tool and not last_retry > fpos:
                    retried[(tool, pos)] = 1
            failures = [(fpos, ftool) for fpos, ftool in failures if ftool != tool]
        if kind == "error" or failed(e):
            seen_failure = True
            if tool:
                failures.append((pos, tool))
    counts["retry"] += len(retried)


def records(path: Path) -> Iterator:
    """The JSON values of a file: a line each, or for `.json` the document (an array's items)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        if path.name.removesuffix(".gz").endswith(".json"):
            doc = json.load(fh)
            yield from doc if isinstance(doc, list) else [doc]
            return
        for line in fh:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--skip-ids", type=Path, help="a file of trace ids to leave out, one a line")
    args = p.parse_args()
    skip = set(args.skip_ids.read_text().split()) if args.skip_ids else set()
    files = sorted(f for path in args.paths for f in ([path] if path.is_file() else path.rglob("*.jsonl")))
    counts = {"traces": 0, "events": 0, "human_correction": 0, "failed_evaluation": 0, "retry": 0}
    for path in files:
        for trace in records(path):
            if not isinstance(trace, dict) or not isinstance(trace.get("events"), list) or str(trace.get("trace_id")) in skip:
                continue
            counts["traces"] += 1
            detect(trace, counts)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
