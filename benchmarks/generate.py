"""Generate a deterministic trace corpus for benchmarks.

    python benchmarks/generate.py OUT_DIR --traces 100000 --seed 7 [--files 20] [--mix lessonweaver=1]

About 15 events per trace; about 10% of traces carry a human correction, 10% a failed evaluation,
10% a retry, 5% are tagged sensitive and 1% carry a planted secret in untagged content; contents
range from a few words to a few kilobytes (--max-words caps them). The same arguments always write the
same bytes. --diverse (or --tasks, --tenants, --sources, --varied-evidence) makes lessons of many
more kinds: a hundred task families, fifty tenants, five sources and evidence that names ids and amounts.

Each trace is drawn once, as a lessonweaver trace, and written in one format, in that format's own shape:
`lessonweaver` (one trace per line), and one event per line for `traceevent` (TraceEvent JSONL),
`stream` (documented WebSocket stream events), `gdev` (gdev-agent-trace-v1) and `otlp` (OTLP/JSON spans).
--mix gives their weights, e.g. `--mix lessonweaver=1,traceevent=1,stream=1,gdev=1,otlp=1`. A signal a
format has no record for is left out: stream has no corrections or evaluations, traceevent no evaluations
(its corrections are a critic's review and a revision).
"""

import argparse
import datetime as dt
import json
import random
import sys
from dataclasses import dataclass
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
EPOCH = 1_795_831_200  # 2026-11-28T02:00:00Z; trace i starts i seconds later


LENGTHS = (4, 8, 16, 40, 120, 400)  # words in a content, drawn evenly


def _text(rng: random.Random, lengths: tuple[int, ...]) -> str:
    n = rng.choice(lengths)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _events(rng: random.Random, kinds: set[str], lengths: tuple[int, ...]) -> list[dict]:
    events = [{"type": "user_message", "content": _text(rng, lengths)}]
    for _ in range(rng.randint(9, 17)):
        tool = rng.choice(TOOLS)
        events.append(rng.choice((
            {"type": "assistant_message", "content": _text(rng, lengths)},
            {"type": "tool_call", "content": tool, "status": "success", "success": True, "metadata": {"tool": tool}},
            {"type": "tool_result", "content": _text(rng, lengths), "metadata": {"tool": tool}},
            {"type": "workflow_step", "content": _text(rng, lengths), "metadata": {"step": rng.choice(WORDS)}},
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
    events.append({"type": "final_answer", "content": _text(rng, lengths)})
    for i, e in enumerate(events, 1):
        e["id"] = f"e{i}"
    return events


@dataclass(frozen=True)
class Diversity:
    """How varied the lessons' keys are. The defaults make the small corpus of earlier benchmarks (4
    sources, 25 tasks, no tenants, three fixed corrections: about 1,100 lesson variants). Real fleets have
    many task families, tenants and sources, and evidence that names ids, numbers and particulars, which
    multiplies the detector/source/task/tenant blocks and the variants the weave must place."""
    tasks: int = 0  # task families, worded apart (0: the 25 fixed tasks)
    tenants: int = 0  # tenant ids in metadata (0: none)
    sources: int = 0  # sources (0: the 4 fixed ones)
    evidence: bool = False  # corrections and evaluations that name customers, orders, amounts and details

    def task(self, rng: random.Random) -> str:
        if not self.tasks:
            return rng.choice(TASKS)
        k = rng.randrange(self.tasks)
        return f"{FAMILY_VERBS[k % len(FAMILY_VERBS)]} the {FAMILY_NOUNS[k // len(FAMILY_VERBS) % len(FAMILY_NOUNS)]}" \
               f" {FAMILY_QUALIFIERS[k // (len(FAMILY_VERBS) * len(FAMILY_NOUNS)) % len(FAMILY_QUALIFIERS)]}"

    def source(self, rng: random.Random) -> str:
        if not self.sources:
            return rng.choice(SOURCES)
        k = rng.randrange(self.sources)
        return f"{SOURCE_WORDS[k % len(SOURCE_WORDS)]}-{SOURCE_KINDS[k // len(SOURCE_WORDS) % len(SOURCE_KINDS)]}"

    def correction(self, rng: random.Random) -> str:
        base = rng.choice(CORRECTIONS)
        if not self.evidence:
            return base
        return (f"{base} Customer {rng.randint(1000, 99999)} on order A-{rng.randint(10000, 999999)} was charged "
                f"{rng.randint(5, 900)}.{rng.randint(0, 99):02d} EUR; {' '.join(rng.choice(WORDS) for _ in range(6))}.")


SOURCE_WORDS = ("support", "billing", "coding", "ops", "research", "sales", "legal", "security")
SOURCE_KINDS = ("bot", "agent", "assistant", "workflow")
FAMILY_VERBS = ("Review", "Fix", "Answer", "Deploy", "Summarise", "Triage", "Migrate", "Reconcile", "Draft", "Audit")
FAMILY_NOUNS = ("pull request", "failing build", "refund question", "billing service", "support ticket", "invoice batch",
                "shipping delay", "password reset", "data export", "release notes", "access request", "vendor contract")
FAMILY_QUALIFIERS = ("for enterprise accounts", "in the staging region", "before the weekly report", "for new customers",
                     "after an outage", "with legal review", "on the mobile app", "for the finance team")


def trace(rng: random.Random, i: int, lengths: tuple[int, ...] = LENGTHS, diversity: Diversity = Diversity()) -> dict:
    kinds = {k for k, p in (("correction", 0.10), ("eval", 0.10), ("retry", 0.10), ("secret", 0.01)) if rng.random() < p}
    meta = {"contains_pii": True} if rng.random() < 0.05 else {"channel": rng.choice(("web", "cli", "api"))}
    if diversity.tenants:
        meta["tenant_id"] = f"tenant-{rng.randrange(diversity.tenants):04d}"
    source, task = diversity.source(rng), diversity.task(rng)
    events = _events(rng, kinds, lengths)
    if diversity.evidence:
        for e in events:
            if e["type"] == "human_correction":
                e["content"] = diversity.correction(rng)
            elif e["type"] == "evaluation_result":
                e["content"] = (f"Answer cited stale policy version 2024-0{rng.randint(1, 9)} for case C-{rng.randint(100, 99999)}: "
                                + " ".join(rng.choice(WORDS) for _ in range(5)))
    return {"trace_id": f"bench-{i:09d}", "source": source, "task": task, "events": events, "metadata": meta,
            "outcome": "corrected_by_human" if "correction" in kinds else "success"}


def _tool(e: dict) -> str:
    return e.get("metadata", {}).get("tool") or e.get("content", "tool")


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def as_traceevent(t: dict) -> list[dict]:
    """The same run as TraceEvent JSONL lines: a failed call is a tool_result with error true, a correction
    a critic's review and the revision it starts."""
    run = t["trace_id"]
    lines = [{"event_id": f"{run}-0", "event_type": "run_start", "timestamp": "2026-11-28T02:00:00+00:00",
              "payload": {"architecture": t["source"], "task_prompt": t["task"]}, "parent_event_id": None,
              "metadata": {"run_id": run, **t["metadata"]}}]

    def emit(kind: str, payload: dict) -> None:
        n = len(lines)
        lines.append({"event_id": f"{run}-{n}", "event_type": kind, "timestamp": f"2026-11-28T02:00:{n:02d}+00:00",
                      "payload": payload, "parent_event_id": f"{run}-0", "metadata": {"run_id": run}})

    for e in t["events"]:
        kind = e["type"]
        if kind == "tool_call":
            emit("tool_call", {"tool_name": _tool(e), "tool_call_id": f"tc-{len(lines)}",
                               "arguments": {"command": e["content"]} if _tool(e) == "shell" else {"task": t["task"]}})
            if e.get("success") is False:
                emit("tool_result", {"tool_name": _tool(e), "tool_call_id": f"tc-{len(lines) - 1}",
                                     "result": f"Error executing tool: {_tool(e)} timed out", "error": True})
        elif kind == "tool_result":
            emit("tool_result", {"tool_name": _tool(e), "tool_call_id": f"tc-{len(lines)}", "result": e["content"], "error": False})
        elif kind == "human_correction":
            emit("critic_review", {"draft": "", "tool_summary": "", "critique": e["content"]})
            emit("revision_start", {"critique": e["content"]})
        elif kind == "final_answer":
            emit("agent_finish", {"final_output": e["content"]})
        else:
            emit("llm_response", {"text": e.get("content", "")})
    return lines


def as_stream(t: dict, i: int) -> list[dict]:
    """The same run as documented stream events of a ReAct task: every tool start gets its end (or error)
    event, a result ending the latest open call; a retry is the same tool started again after its error."""
    task_id = t["trace_id"]
    lines: list[dict] = []
    open_calls: dict[str, tuple[str, str]] = {}  # tool -> (call id, start event id)

    def emit(event_type: str, data: dict, parent: str | None = None) -> str:
        scope, action, category = event_type.split("_", 2)
        n = len(lines) + 1
        lines.append({"id": f"{task_id}-ev{n:03d}", "event_type": event_type, "scope": scope, "action": action,
                      "category": category, "timestamp": round(EPOCH + i + n * 0.25, 3), "task_id": task_id,
                      "step_id": None if category == "message" else f"react_{i}", "data": data, "parent_id": parent})
        return lines[-1]["id"]

    def start(tool: str, params: dict) -> None:
        if tool in open_calls:
            end(tool, "done")
        call = f"call-{len(lines) + 1}"
        open_calls[tool] = (call, emit("action_start_tool", {"tool_name": tool, "tool_call_id": call, "tool_params": params}))

    def end(tool: str, result: str) -> None:
        call, started = open_calls.pop(tool)
        emit("action_end_tool", {"tool_name": tool, "tool_call_id": call, "success": True, "result": result}, started)

    def fail(tool: str) -> None:
        call, started = open_calls.pop(tool)
        emit("action_error_tool", {"tool_name": tool, "tool_call_id": call, "error_type": "agent_tool_error",
                                   "error_message": f"{tool} timed out after 30 s"}, started)

    iteration = 0
    for e in t["events"]:
        kind, text = e["type"], e.get("content", "")
        if kind == "user_message":
            emit("task_info_message", {"message": f"{t['task']}\n{text}", "turn_id": "turn-1"})
            emit("task_start_react", {"pattern": "ReActPattern"})
        elif kind == "workflow_step":
            emit("action_start_llm", {"selected_model": "bench-model", "iteration": iteration})
        elif kind == "assistant_message":
            emit("action_end_llm", {"success": True, "response": {"content": text}, "iteration": iteration})
            iteration += 1
        elif kind == "tool_call":
            tool = _tool(e)
            start(tool, {"command": text} if tool == "shell" else {"query": t["task"]})
            if e.get("success") is False:
                fail(tool)
            elif tool == "shell":
                end(tool, "exit 0")
        elif kind == "tool_result":  # the result of the latest open call, else a call of its own
            if not open_calls:
                start(_tool(e), {"query": t["task"]})
            end(list(open_calls)[-1], text)
        elif kind == "human_correction":  # the user's next turn; the format has no correction record
            emit("task_info_message", {"message": text, "turn_id": "turn-2"})
        elif kind == "final_answer":
            for tool in list(open_calls):
                end(tool, "done")
            emit("task_end_react", {"pattern": "ReActPattern", "status": "completed",
                                    "result": {"success": True, "status": "completed", "output": text}})
    if "contains_pii" in t["metadata"]:  # the stream has no metadata: the producer's tag rides on the envelope
        lines[0]["contains_pii"] = True
    return lines


def as_gdev(t: dict, i: int) -> list[dict]:
    """The same run as gdev-agent-trace-v1 events: complete by the spec's gate; references instead of text."""
    run, message = t["trace_id"], f"msg-{i}"
    corrected = any(e["type"] == "human_correction" for e in t["events"])
    lines: list[dict] = []
    open_calls: dict[str, str] = {}  # tool -> its tool_call span

    def emit(event_type: str, parent: str | None, **fields) -> str:
        n = len(lines) + 1
        lines.append({"schema_version": "gdev-agent-trace-v1", "run_id": run, "span_id": f"sp-{n:02d}",
                      "parent_span_id": parent, "timestamp": _iso(EPOCH + i + n * 0.5),
                      "tenant_id_hash": f"tnt_h_{i % 97:04x}", "message_id": message, "event_type": event_type, **fields})
        return lines[-1]["span_id"]

    def call(tool: str, ref: str) -> str:
        return emit("tool_call", policy, component="app.tools", status="started", tool_name=tool, tool_input_ref=ref,
                    permission_decision="allowed", prompt_version="tools-v2", cost_usd=0.0, latency_ms=120.0)

    root = emit("webhook_received", None, component="app.main", source=("telegram", "discord", "web")[i % 3],
                status="accepted", latency_ms=3.1, evidence_refs=[f"audit:{message}"], metadata=t["metadata"])
    emit("dedup_checked", root, component="app.dedup", status="miss", latency_ms=1.2)
    emit("input_guard", root, component="app.agent", status="allowed", permission_decision="allowed", risk_level="low", latency_ms=0.8)
    policy = emit("policy_decision", root, component="app.agent", status="decided",
                  risk_level="high" if corrected else "low", confidence=0.64 if corrected else 0.91, risky=corrected,
                  route="human_review" if corrected else "auto_execute",
                  risk_reason="low confidence classification" if corrected else "known category",
                  approval_state="pending" if corrected else "not_required", latency_ms=0.4)
    emit("output_guard", root, component="app.guardrails.output_guard", status="allow", redaction_events=[], latency_ms=2.2)
    for n, e in enumerate(t["events"]):
        kind = e["type"]
        if kind == "assistant_message":
            emit("model_tool_loop", root, component="app.llm_client", status="ok", model="bench-model",
                 prompt_version="triage-v4", tool_turns=2, category=t["source"], cost_usd=0.0042, latency_ms=910.0)
        elif kind == "tool_call":
            tool = _tool(e)
            span = call(tool, e["content"] if tool == "shell" else f"ref:{tool}-{n}")
            if e.get("success") is False:
                emit("error", span, component="app.tools", status="failed", error_code=f"{tool}_timeout", fallback_route=None)
            else:
                open_calls[tool] = span
        elif kind == "tool_result":
            emit("action_executed", open_calls.pop(_tool(e), policy), component="app.agent", status="executed",
                 tool_name=_tool(e), observation_ref=f"audit:{_tool(e)}-{n}", cost_usd=0.0, latency_ms=140.0)
        elif kind == "evaluation_result":
            emit("eval_case_result", None, component="eval.runner", status="completed", case_id=f"bench-case-{i % 500:03d}",
                 expected_route="human_review", actual_route="auto_execute", threshold_impact="risk_routing_recall below 0.4")
        elif kind == "human_correction":
            pending = emit("approval_pending", policy, component="app.approval_store", status="pending",
                           approval_state="pending", pending_id=f"pend_{i:x}", reviewer_target="support_agent",
                           expires_at=_iso(EPOCH + i + 86_400))
            emit("approval_decision", pending, component="app.routers.approve", status="approved", approval_state="approved",
                 reviewer="reviewer_ops", latency_ms=293000.0, corrections=[e["content"]])
        elif kind == "final_answer":
            emit("action_executed", policy, component="app.agent", status="executed", tool_name="send_reply",
                 observation_ref=f"audit:reply-{i}", cost_usd=0.0, latency_ms=310.0)
    return lines


def as_otlp(t: dict, i: int) -> list[dict]:
    """The same run as OTLP/JSON spans, one per line, in the GenAI conventions: an agent span holding the user
    message, feedback and evaluation events, with a child span per model call, tool call or step."""
    trace_id, root = f"be{i:030x}", f"{i:010x}000000"
    start_ns = (EPOCH + i) * 10**9

    def attrs(**values) -> list[dict]:
        kinds = {str: "stringValue", bool: "boolValue", int: "intValue", float: "doubleValue"}
        return [{"key": k.replace("__", "."), "value": {kinds[type(v)]: str(v) if type(v) is int else v}}
                for k, v in values.items()]

    def at(n: int) -> str:
        return str(start_ns + n * 250_000_000)

    spans: list[dict] = []
    root_events: list[dict] = []

    def span(name: str, n: int, status: dict | None = None, events: list | None = None, **values) -> None:
        spans.append({"traceId": trace_id, "spanId": f"{i:010x}{n:06x}", "parentSpanId": root, "name": name, "kind": 1,
                      "startTimeUnixNano": at(n), "endTimeUnixNano": at(n + 1), "attributes": attrs(**values),
                      "status": status or {"code": 1}, **({"events": events} if events else {})})

    def chat(n: int, text: str) -> None:
        span("chat bench-model", n, gen_ai__operation__name="chat", gen_ai__request__model="bench-model",
             gen_ai__usage__output_tokens=len(text) // 4,
             gen_ai__output__messages=json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]))

    def tool_span(n: int, tool: str, status: dict | None = None, events: list | None = None, **values) -> None:
        span(f"execute_tool {tool}", n, status, events, gen_ai__operation__name="execute_tool", gen_ai__tool__name=tool,
             gen_ai__tool__call__id=f"call-{n}", **values)

    for n, e in enumerate(t["events"], 1):
        kind, text = e["type"], e.get("content", "")
        if kind == "user_message":
            root_events.append({"name": "gen_ai.user.message", "timeUnixNano": at(n), "attributes": attrs(content=text)})
        elif kind in ("assistant_message", "final_answer"):
            chat(n, text)
        elif kind == "workflow_step":
            span(e["metadata"]["step"], n, workflow__step__description=text)
        elif kind == "tool_call" and e.get("success") is False:
            message = f"{_tool(e)} timed out after 30 s"
            tool_span(n, _tool(e), {"code": 2, "message": message},
                      [{"name": "exception", "timeUnixNano": at(n), "attributes": attrs(exception__type="TimeoutError", exception__message=message)}],
                      gen_ai__tool__call__arguments=json.dumps({"query": t["task"]}))
        elif kind == "tool_call":
            tool_span(n, _tool(e), gen_ai__tool__call__arguments=json.dumps({"command": text} if _tool(e) == "shell" else {"query": t["task"]}))
        elif kind == "tool_result":
            tool_span(n, _tool(e), gen_ai__tool__call__result=text)
        elif kind == "human_correction":
            root_events.append({"name": "human_feedback", "timeUnixNano": at(n), "attributes": attrs(feedback__comment=text)})
        elif kind == "evaluation_result":
            root_events.append({"name": "gen_ai.evaluation.result", "timeUnixNano": at(n), "attributes": attrs(
                gen_ai__evaluation__name="answer_accuracy", gen_ai__evaluation__score__value=0.2,
                gen_ai__evaluation__score__label="fail", gen_ai__evaluation__explanation=text)})
    agent = {"traceId": trace_id, "spanId": root, "name": f"invoke_agent {t['source']}", "kind": 1,
             "startTimeUnixNano": at(0), "endTimeUnixNano": at(len(t["events"]) + 1),
             "attributes": attrs(gen_ai__operation__name="invoke_agent", gen_ai__agent__name=t["source"], agent__task=t["task"]),
             "status": {"code": 1}, "events": root_events,
             "resource": {"attributes": attrs(service__name=t["source"], **t["metadata"])}}
    return [agent] + spans


# Per format: trace i as the lines of its file.
WRITERS = {"lessonweaver": lambda t, i: [t], "traceevent": lambda t, i: as_traceevent(t),
           "stream": as_stream, "gdev": as_gdev, "otlp": as_otlp}
FORMATS = tuple(WRITERS)


def generate(out: Path, traces: int, seed: int, files: int, mix: dict[str, float], max_words: int = LENGTHS[-1],
             diversity: Diversity = Diversity()) -> int:
    """Write the corpus; returns the bytes written. `max_words` drops the longer content lengths: 40 gives
    traces of about 1.7 KB, the size the performance targets assume, where the default averages 9 KB."""
    lengths = tuple(n for n in LENGTHS if n <= max_words)
    if not lengths:
        raise ValueError(f"--max-words must be at least {LENGTHS[0]}")
    unknown = set(mix) - set(FORMATS)
    if unknown:
        raise ValueError(f"unknown format(s) in --mix: {', '.join(sorted(unknown))} (known: {', '.join(FORMATS)})")
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    formats = sorted(mix)
    handles = {(fmt, k): open(out / f"{fmt}-{k:04d}.jsonl", "w", encoding="utf-8") for fmt in formats for k in range(files)}
    try:
        for i in range(traces):
            t = trace(rng, i, lengths, diversity)
            fmt = rng.choices(formats, weights=[mix[f] for f in formats])[0]
            fh = handles[(fmt, i % files)]
            lines = WRITERS[fmt](t, i)
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
    p.add_argument("--mix", default="lessonweaver=1", help="format weights, e.g. lessonweaver=1,traceevent=1,stream=1,gdev=1,otlp=1")
    p.add_argument("--max-words", type=int, default=LENGTHS[-1],
                   help=f"longest content in words, one of {', '.join(map(str, LENGTHS))} (40: traces of about 1.7 KB)")
    p.add_argument("--tasks", type=int, default=0, help="task families (default: 25 fixed tasks)")
    p.add_argument("--tenants", type=int, default=0, help="tenant ids in metadata (default: none)")
    p.add_argument("--sources", type=int, default=0, help="sources (default: 4)")
    p.add_argument("--varied-evidence", action="store_true",
                   help="corrections and evaluations that name customers, orders, amounts and details")
    p.add_argument("--diverse", action="store_true",
                   help="shorthand for --tasks 100 --tenants 50 --sources 5 --varied-evidence")
    args = p.parse_args()
    mix = {k: float(v) for k, v in (part.split("=") for part in args.mix.split(","))}
    diversity = (Diversity(100, 50, 5, True) if args.diverse
                 else Diversity(args.tasks, args.tenants, args.sources, args.varied_evidence))
    size = generate(args.out, args.traces, args.seed, args.files, mix, args.max_words, diversity)
    print(f"{args.traces} traces, {size / 1e6:.1f} MB in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
