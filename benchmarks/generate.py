"""Generate a deterministic trace corpus for benchmarks.

    python benchmarks/generate.py OUT_DIR --traces 100000 --seed 7 [--files 20] [--mix lessonweaver=1]

About 15 events per trace; about 10% of traces carry a human correction, 10% a failed evaluation,
10% a retry, 5% are tagged sensitive and 1% carry a planted secret in untagged content; contents
range from a few words to a few kilobytes. The same arguments always write the same bytes.
Formats: `lessonweaver` (one trace per line) and `traceevent` (one event per line); --mix gives
their weights, e.g. `--mix lessonweaver=3,traceevent=1`.
"""

import argparse
import json
import random
import sys
from pathlib import Path

WORDS = ("the agent read the file and updated the config before running tests on the staging cluster "
         "customer asked about refund policy order status shipping window invoice account migration "
         "deploy rollback review pull request diff summary ticket escalation timeout retry cache").split()
TOOLS = ("search_docs", "run_tests", "read_file", "write_file", "http_get", "sql_query", "lookup_order")
TASKS = [f"{verb} {noun}" for verb in ("Review", "Fix", "Answer", "Deploy", "Summarise")
         for noun in ("a pull request", "the failing build", "a refund question", "the service", "a ticket")]
SOURCES = ("coding-agent", "support-bot", "workflow-agent", "research-agent")
CORRECTIONS = ("You approved without reading the diff; read the changed files first.",
               "The refund window is 14 days, not 30; check the current policy.",
               "Run the full test suite before merging.")
FAKE_SECRET = "ghp_" + "Bench0000000000000000000000000000000x"  # matches the GitHub token pattern


def _text(rng: random.Random) -> str:
    n = rng.choice((4, 8, 16, 40, 120, 400))
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _events(rng: random.Random, kinds: set[str]) -> list[dict]:
    events = [{"type": "user_message", "content": _text(rng)}]
    for _ in range(rng.randint(9, 17)):
        tool = rng.choice(TOOLS)
        events.append(rng.choice((
            {"type": "assistant_message", "content": _text(rng)},
            {"type": "tool_call", "content": tool, "status": "success", "success": True, "metadata": {"tool": tool}},
            {"type": "tool_result", "content": _text(rng), "metadata": {"tool": tool}},
            {"type": "workflow_step", "content": _text(rng), "metadata": {"step": rng.choice(WORDS)}},
        )))
    if "retry" in kinds:
        tool = rng.choice(TOOLS)
        events += [{"type": "tool_call", "content": tool, "status": "failed", "success": False},
                   {"type": "retry", "content": "retrying " + tool},
                   {"type": "tool_call", "content": tool, "status": "success", "success": True}]
    if "eval" in kinds:
        events.append({"type": "evaluation_result", "status": "failed", "content": "Answer cited stale policy version 2024-0" + str(rng.randint(1, 9))})
    if "correction" in kinds:
        events.append({"type": "human_correction", "content": rng.choice(CORRECTIONS)})
    if "secret" in kinds:
        events.append({"type": "tool_call", "content": f"git push https://{FAKE_SECRET}@example.invalid/repo", "metadata": {"tool": "shell"}})
    events.append({"type": "final_answer", "content": _text(rng)})
    for i, e in enumerate(events, 1):
        e["id"] = f"e{i}"
    return events


def trace(rng: random.Random, i: int) -> dict:
    kinds = {k for k, p in (("correction", 0.10), ("eval", 0.10), ("retry", 0.10), ("secret", 0.01)) if rng.random() < p}
    meta = {"contains_pii": True} if rng.random() < 0.05 else {"channel": rng.choice(("web", "cli", "api"))}
    return {"trace_id": f"bench-{i:09d}", "source": rng.choice(SOURCES), "task": rng.choice(TASKS),
            "events": _events(rng, kinds), "metadata": meta,
            "outcome": "corrected_by_human" if "correction" in kinds else "success"}


def as_traceevent(t: dict) -> list[dict]:
    """The same run as TraceEvent JSONL lines."""
    run = t["trace_id"]
    lines = [{"event_id": f"{run}-0", "event_type": "run_start", "timestamp": "2026-11-28T02:00:00+00:00",
              "payload": {"architecture": t["source"], "task_prompt": t["task"]}, "parent_event_id": None,
              "metadata": {"run_id": run, **t["metadata"]}}]
    mapping = {"tool_call": "tool_call", "tool_result": "tool_result", "error": "error", "final_answer": "agent_finish"}
    for n, e in enumerate(t["events"], 1):
        kind = mapping.get(e["type"], "llm_response")
        payload = {"text": e.get("content", "")}
        if kind in ("tool_call", "tool_result"):
            payload = {"tool_name": e.get("metadata", {}).get("tool", e.get("content", "tool")),
                       "result": e.get("content", ""), "error": e.get("success") is False}
        if kind == "agent_finish":
            payload = {"final_output": e.get("content", "")}
        lines.append({"event_id": f"{run}-{n}", "event_type": kind, "timestamp": f"2026-11-28T02:00:{n:02d}+00:00",
                      "payload": payload, "parent_event_id": f"{run}-0", "metadata": {"run_id": run}})
    return lines


def generate(out: Path, traces: int, seed: int, files: int, mix: dict[str, float]) -> int:
    """Write the corpus; returns the bytes written."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    formats = sorted(mix)
    handles = {(fmt, k): open(out / f"{fmt}-{k:04d}.jsonl", "w", encoding="utf-8") for fmt in formats for k in range(files)}
    try:
        for i in range(traces):
            t = trace(rng, i)
            fmt = rng.choices(formats, weights=[mix[f] for f in formats])[0]
            fh = handles[(fmt, i % files)]
            lines = [t] if fmt == "lessonweaver" else as_traceevent(t)
            fh.write("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    finally:
        for fh in handles.values():
            fh.close()
    for path in out.glob("*.jsonl"):
        if path.stat().st_size == 0:
            path.unlink()
    return sum(p.stat().st_size for p in out.glob("*.jsonl"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--traces", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--mix", default="lessonweaver=1", help="format weights, e.g. lessonweaver=3,traceevent=1")
    args = p.parse_args()
    mix = {k: float(v) for k, v in (part.split("=") for part in args.mix.split(","))}
    size = generate(args.out, args.traces, args.seed, args.files, mix)
    print(f"{args.traces} traces, {size / 1e6:.1f} MB in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
