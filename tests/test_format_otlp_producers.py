"""The otlp adapter on real exports of agent-trace producers that differ from the GenAI conventions.

The fixtures in tests/fixtures/formats/otlp/producers/ were made by running each producer's library with
fake models (see the README there); the Braintrust one is a reconstruction. Each test checks, for one
producer, what a person reading the trace needs: tool calls with their names, failed tools as errors,
model calls, evaluations, handoffs, the task and the final answer.
"""

import base64
import json
import shutil

from conftest import REPO, rows, stage, write_traces

PRODUCERS = REPO / "tests" / "fixtures" / "formats" / "otlp" / "producers"
CORE_DETECTORS = ("human_correction", "failed_evaluation", "retry", "tool_fallback", "unrecovered_error")


def events(con, trace_id: str) -> list[dict]:
    return rows(con, "SELECT * FROM events WHERE trace_id = ? ORDER BY seq", [trace_id])


def kinds(evs: list[dict]) -> list[tuple]:
    return [(e["event_id"], e["type"], e["raw_type"], e["tool_name"], e["status"], e["success"]) for e in evs]


def traces(con) -> dict[str, dict]:
    return {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces")}


def detections(con) -> set[tuple]:
    found = rows(con, "SELECT detector, trace_id, event_id FROM detections WHERE list_contains(?, detector)",
                 [list(CORE_DETECTORS)])
    return {(d["detector"], d["trace_id"], d["event_id"]) for d in found}


def of_type(evs: list[dict], kind: str) -> list[dict]:
    return [e for e in evs if e["type"] == kind]


def no_rejects(con) -> None:
    assert rows(con, "SELECT line, reason FROM rejects") == []
    assert rows(con, "SELECT trace_id, reason FROM quarantine") == []


def test_every_record_of_every_producer_is_accounted_for():
    con = stage([PRODUCERS])
    no_rejects(con)
    unaccounted = rows(con, """SELECT file_id, record FROM records
                               EXCEPT SELECT file_id, record FROM record_traces""")
    assert unaccounted == []
    assert con.execute("SELECT count(*) FROM events WHERE type = 'unknown'").fetchone()[0] == 0


# --- Vercel AI SDK, legacy `ai.*` spans ---------------------------------------------------------------

VERCEL_AGENT = "dd2aa80ba8b5e0893eacda9661495bee"
VERCEL_STREAM = "da33e7ad63c22ec50bc0116422f9e895"
VERCEL_FAILING = "d9adab1508830cbfce11f83e2f9a3fd2"


def test_vercel_ai_spans_are_model_calls_tool_calls_and_results():
    con = stage([PRODUCERS / "vercel-ai-v6-legacy.otlp.json"])
    no_rejects(con)
    found = traces(con)
    assert {tid: (t["source"], t["task"], t["outcome"]) for tid, t in found.items()} == {
        VERCEL_AGENT: ("weather-agent", "What is the weather in Paris?", "success"),  # functionId; ai.prompt
        VERCEL_STREAM: ("hello-stream", "Say hello", "success"),
        VERCEL_FAILING: ("failing-call", "fail please", "failed"),
    }
    evs = events(con, VERCEL_AGENT)
    assert kinds(evs) == [
        # the operation root carries a model id but is the agent run, not a model call
        ("e9a737f8314360e3", "workflow_step", "ai.generateText", None, "unset", True),
        ("e1b0a37c856dbe0b", "model_call", "ai.generateText.doGenerate", None, "unset", True),
        ("f40bfe99efb57256", "tool_call", "ai.toolCall", "flaky", "error", False),
        ("88295dd9309eae7b", "tool_call", "ai.toolCall", "weather", "unset", True),
        ("f40bfe99efb57256/events/0", "error", "exception", "flaky", "error", False),
        # the result of the call that did not fail; the failed one has none
        ("88295dd9309eae7b/result", "tool_result", "ai.toolCall.result", "weather", "ok", True),
        ("0e4cf42b5a107d77", "model_call", "ai.generateText.doGenerate", None, "unset", True),
        ("e9a737f8314360e3/final_answer", "final_answer", "ai.response.text", None, None, None),
    ]
    by_id = {e["event_id"]: e for e in evs}
    assert by_id["f40bfe99efb57256/events/0"]["content"] == "Error: flaky tool exploded"
    assert json.loads(by_id["88295dd9309eae7b/result"]["content"]) == {"city": "Paris", "forecast": "sunny", "tempC": 21}
    assert by_id["88295dd9309eae7b/result"]["parent_id"] == "88295dd9309eae7b"
    assert by_id["e9a737f8314360e3/final_answer"]["content"] == "It is sunny in Paris."
    assert json.loads(by_id["f40bfe99efb57256"]["metadata"])["ai.toolCall.args"] == '{"n":1}'

    # streaming: the timing marks stay in the model call's extra; one final answer per trace, from the root
    stream = events(con, VERCEL_STREAM)
    assert [(e["type"], e["content"]) for e in stream] == [
        ("workflow_step", "ai.streamText"), ("model_call", "ai.streamText.doStream"), ("final_answer", "Hello world")]
    assert [e["name"] for e in json.loads(stream[1]["extra"])["events"]] == ["ai.stream.firstChunk", "ai.stream.finish"]

    failing = events(con, VERCEL_FAILING)
    assert [(e["type"], e["status"]) for e in failing] == [
        ("model_call", "error"), ("workflow_step", "error"), ("error", "error"), ("error", "error")]
    assert of_type(failing, "final_answer") == []
    # the fallback finding points at where the failure shows: the exception on the failed tool's span
    assert ("tool_fallback", VERCEL_AGENT, "f40bfe99efb57256/events/0") in detections(con)


# --- pydantic-ai and logfire ---------------------------------------------------------------------------

def test_pydantic_ai_running_tool_spans_and_a_retried_tool():
    con = stage([PRODUCERS / "pydantic-ai-v2.otlp.json"])
    no_rejects(con)
    trace_id = "37b501c0b923b39c37408c1bbfaef3c0"
    [trace] = traces(con).values()
    assert (trace["source"], trace["task"], trace["outcome"]) == ("weather_agent", "What is the weather in Paris?", "success")
    evs = events(con, trace_id)
    assert [(e["type"], e["tool_name"], e["success"]) for e in evs if e["tool_name"]] == [
        ("tool_call", "get_weather", True),
        ("tool_call", "lookup", False),
        ("tool_result", "get_weather", True),
        ("error", "lookup", False),
        ("tool_call", "lookup", True),
        ("tool_result", "lookup", True),
    ]
    results = of_type(evs, "tool_result")
    assert [(r["raw_type"], r["content"]) for r in results] == [
        ("tool_response", '{"city":"Paris","forecast":"sunny"}'), ("tool_response", "value-for-good")]
    assert len(of_type(evs, "model_call")) == 3
    [answer] = of_type(evs, "final_answer")
    assert (answer["raw_type"], answer["content"], answer["seq"]) == ("final_result", "It is sunny in Paris.", len(evs))
    assert ("retry", trace_id, "9dafc5cd2079514d/events/0") in detections(con)


def test_logfire_agent_run_inside_a_logfire_span():
    con = stage([PRODUCERS / "logfire-pydantic-ai.otlp.json"])
    no_rejects(con)
    trace_id = "01a234693eef17087e3d89320d11e26a"
    [trace] = traces(con).values()
    # the root is the app's logfire span; the task and answer come from the agent run under it
    assert (trace["source"], trace["task"]) == ("logfire-pydantic-ai-demo", "What is the weather in Paris?")
    evs = events(con, trace_id)
    assert [(e["type"], e["content"]) for e in evs] == [
        ("workflow_step", "handle request alice"),  # logfire's rendered message, not the template
        ("workflow_step", "invoke_agent weather_agent"),
        ("model_call", "chat fake-gpt"),
        ("tool_call", "get_weather"),
        ("tool_result", '{"city":"Paris","forecast":"sunny"}'),
        ("model_call", "chat fake-gpt"),
        ("final_answer", "It is sunny in Paris."),
    ]


PENDING_DONE = "01a23494ae4cd0aaf4724faf445cef44"
PENDING_CUT = "01a23494ae4e43d7965537af3666b688"


def test_logfire_pending_spans_are_dropped_or_stand_in_for_a_span_that_never_ended():
    con = stage([PRODUCERS / "logfire-pending.otlp.json"])
    no_rejects(con)
    assert {t["trace_id"]: t["task"] for t in traces(con).values()} == {
        PENDING_DONE: "handle request alice", PENDING_CUT: "nightly sync orders"}
    # both real spans arrived: their pending copies are dropped
    assert [(e["event_id"], e["parent_id"], e["content"]) for e in events(con, PENDING_DONE)] == [
        ("aec51b76b0e5eb01", None, "handle request alice"), ("926cd8052e78834e", "aec51b76b0e5eb01", "lookup Paris")]
    # the outer span never ended: its pending copy stands in for it, under its id and with no outcome
    assert [(e["event_id"], e["parent_id"], e["status"], e["success"]) for e in events(con, PENDING_CUT)] == [
        ("0bfa121c3dd43dcd", None, "pending", None), ("d8157ddd3ed8c5cb", "0bfa121c3dd43dcd", "unset", True)]


def test_a_record_of_pending_spans_only_is_linked_to_its_trace(tmp_path):
    export = json.loads((PRODUCERS / "logfire-pending.otlp.json").read_text())
    spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    pending = [s for s in spans if any(a["value"].get("stringValue") == "pending_span" for a in s["attributes"])
               and s["traceId"] == PENDING_DONE]
    rest = [s for s in spans if s not in pending]
    lines = [{"resourceSpans": [{**export["resourceSpans"][0], "scopeSpans": [{"scope": {"name": "logfire"}, "spans": part}]}]}
             for part in (pending, rest)]
    write_traces(tmp_path, "pending.jsonl", lines)
    con = stage([tmp_path])
    no_rejects(con)
    assert rows(con, "SELECT record, trace_id FROM record_links") == [{"record": 1, "trace_id": PENDING_DONE}]
    assert len(events(con, PENDING_DONE)) == 2


def test_pydantic_evals_cases_become_evaluation_results():
    con = stage([PRODUCERS / "pydantic-evals.otlp.json"])
    no_rejects(con)
    trace_id = "01a2347164058cdbcd3a443dcd2f729b"
    [trace] = traces(con).values()
    assert (trace["task"], trace["outcome"]) == ("evaluate capitals-eval", "success")
    evs = events(con, trace_id)
    assert [(e["event_id"], e["raw_type"], e["content"], e["status"], e["success"])
            for e in of_type(evs, "evaluation_result")] == [
        ("028cf188d6b5f8d5/assertions/EqualsExpected", "assertions", "EqualsExpected: pass", "passed", True),
        # a score has no set scale or direction in pydantic-evals: kept, with no verdict
        ("028cf188d6b5f8d5/scores/LengthScore", "scores", "LengthScore: score 0.25", None, None),
        ("69e618c01fb7ccdc/assertions/EqualsExpected", "assertions", "EqualsExpected: fail", "failed", False),
        ("69e618c01fb7ccdc/scores/LengthScore", "scores", "LengthScore: score 0.25", None, None),
    ]
    cases = [e for e in evs if e["content"].startswith("case: ")]
    assert [(e["type"], e["content"], e["status"]) for e in cases] == [
        ("workflow_step", "case: capital", "unset"), ("workflow_step", "case: wrong", "unset"),
        ("workflow_step", "case: crash", "error")]
    assert [e["content"] for e in of_type(evs, "error")] == ["ValueError: task failed"] * 2
    assert {d for d in detections(con) if d[0] == "failed_evaluation"} == {
        ("failed_evaluation", trace_id, "69e618c01fb7ccdc/assertions/EqualsExpected")}


# --- OpenAI Agents SDK ---------------------------------------------------------------------------------

OI_HANDOFF = "86f813bc285f1bb246460c97326bb5a1"
OI_GUARDED = "b905cd9ffc03beddb5f3566297f11999"


def test_openai_agents_via_openinference_handoff_tools_and_guardrail():
    con = stage([PRODUCERS / "openai-agents-openinference.otlp.json"])
    no_rejects(con)
    assert {tid: (t["source"], t["task"]) for tid, t in traces(con).items()} == {
        OI_HANDOFF: ("openai-agents-demo", "Agent workflow"), OI_GUARDED: ("openai-agents-demo", "Agent workflow")}
    evs = events(con, OI_HANDOFF)
    by_id = {e["event_id"]: e for e in evs}
    # a handoff is an OpenInference TOOL span named `handoff to X`: a workflow step, not a nameless tool call
    handoff = by_id["a7ec92b320aee412"]
    assert (handoff["type"], handoff["raw_type"], handoff["tool_name"], handoff["content"]) == (
        "workflow_step", "handoff", None, "handoff from Triage agent to Weather agent")
    assert {k: json.loads(handoff["extra"])[k] for k in ("from_agent", "to_agent")} == {
        "from_agent": "Triage agent", "to_agent": "Weather agent"}
    assert [(e["type"], e["tool_name"], e["status"]) for e in evs if e["tool_name"]] == [
        ("tool_call", "get_weather", "ok"), ("tool_call", "flaky", "error"),
        ("tool_result", "get_weather", "ok"), ("error", "flaky", "error")]
    assert by_id["67cffc20baa4ad95/status"]["content"].startswith("Error running tool (non-fatal): {'tool_name': 'flaky'")
    assert [e["content"] for e in of_type(evs, "model_call")] == ["generation"] * 3
    assert (by_id["9c78e10a96ea372c"]["raw_type"], by_id["9c78e10a96ea372c"]["status"]) == ("guardrail", "ok")
    assert of_type(evs, "final_answer") == []  # the root AGENT span records no output here
    guarded = events(con, OI_GUARDED)
    assert [(e["type"], e["raw_type"], e["content"]) for e in guarded][-2:] == [
        ("workflow_step", "guardrail", "no_secrets"),
        ("error", "status:2", "Guardrail tripwire triggered: {'guardrail': 'no_secrets'}")]
    # `flaky` failed beside get_weather, called with it in one turn: no fallback (that needs the other tool
    # called after the failure, in its place)
    assert detections(con) == {("unrecovered_error", OI_GUARDED, "89881546d5a255e2/status")}


LF_HANDOFF = "01a2346b1b7200bc4d3461e9384f803d"
LF_GUARDED = "01a2346b1c53ddd6cf158cf5975bf1fa"


def test_openai_agents_via_logfire_function_spans_handoff_and_tripped_guardrail():
    con = stage([PRODUCERS / "logfire-openai-agents.otlp.json"])
    no_rejects(con)
    assert {tid: t["task"] for tid, t in traces(con).items()} == {LF_HANDOFF: "Agent workflow", LF_GUARDED: "Agent workflow"}
    evs = events(con, LF_HANDOFF)
    # `Function: {name}` spans are tool calls named by their `name` attribute
    assert [(e["type"], e["tool_name"], e["status"], e["content"]) for e in evs if e["tool_name"]] == [
        ("tool_call", "get_weather", "unset", "get_weather"),
        ("tool_call", "flaky", "error", "flaky"),
        ("tool_result", "get_weather", "ok", '{"city":"Paris","forecast":"sunny"}'),
        # status ERROR with no message: the message of logfire's `error` attribute
        ("error", "flaky", "error", "Error running tool (non-fatal): Tool execution failed. Error details are redacted."),
    ]
    # every span tagged LLM is a model call, the first one (no model named yet) too
    assert [e["content"] for e in of_type(evs, "model_call")] == [
        "Chat completion with {gen_ai.request.model!r}", "Chat completion with 'gpt-4o-mock'",
        "Chat completion with 'gpt-4o-mock'"]
    [handoff] = [e for e in evs if e["raw_type"] == "handoff"]
    assert (handoff["type"], handoff["content"]) == ("workflow_step", "handoff from Triage agent to Weather agent")
    assert [(e["status"], e["success"]) for e in evs if e["raw_type"] == "guardrail"] == [("passed", True)]
    guarded = events(con, LF_GUARDED)
    assert [(e["type"], e["status"], e["success"], e["content"]) for e in guarded if e["raw_type"] == "guardrail"] == [
        ("workflow_step", "triggered", False, "Guardrail 'no_secrets' triggered=True")]
    assert guarded[-1]["content"] == "Guardrail tripwire triggered"
    assert not any(d[0] == "tool_fallback" and d[1] == LF_HANDOFF for d in detections(con))  # called side by side


# --- OpenLLMetry / Traceloop ---------------------------------------------------------------------------

def test_traceloop_decorator_spans_and_llm_request_type():
    con = stage([PRODUCERS / "traceloop-0.47-legacy-openai.otlp.json"])
    no_rejects(con)
    trace_id = "0630ed815478ac21be88a0701192497a"
    [trace] = traces(con).values()
    # the workflow's first string argument is the task; its JSON-quoted return value the final answer
    assert (trace["source"], trace["task"]) == ("traceloop-demo", "What is the weather in Paris?")
    evs = events(con, trace_id)
    assert [(e["type"], e["raw_type"], e["tool_name"], e["status"], e["content"]) for e in evs] == [
        ("workflow_step", "workflow", None, "unset", "weather_workflow.workflow"),
        ("workflow_step", "agent", None, "unset", "weather_agent.agent"),
        ("workflow_step", "task", None, "unset", "plan.task"),
        ("model_call", "span", None, "unset", "openai.chat"),
        # 0.47 writes no gen_ai.tool.name: the tool is traceloop.entity.name
        ("tool_call", "tool", "get_weather", "unset", "get_weather"),
        ("tool_result", "traceloop.entity.output", "get_weather", "ok", '{"city": "Paris", "forecast": "sunny"}'),
        ("tool_call", "tool", "flaky", "error", "flaky"),
        ("error", "exception", "flaky", "error", "RuntimeError: flaky tool exploded"),
        ("model_call", "span", None, "unset", "openai.chat"),
        ("final_answer", "traceloop.entity.output", None, None, "It is sunny in Paris."),
    ]


# --- Braintrust (reconstructed) ------------------------------------------------------------------------

def test_braintrust_span_types_and_scores():
    con = stage([PRODUCERS / "braintrust-style-RECONSTRUCTED.otlp.json"])
    no_rejects(con)
    good, bad, flat = "1cd25026eb63d475bf24e693b8f7a302", "3b398cd3d1c3b7e9f5fb55f9cb7b9b75", "bd504a0cbc33f557175f177f6f8d8289"
    assert {tid: t["task"] for tid, t in traces(con).items()} == {
        good: "Capital of France?", bad: "Capital of Peru?", flat: "openclaw.model.usage"}
    evs = events(con, bad)
    assert [(e["type"], e["raw_type"], e["tool_name"], e["status"], e["content"]) for e in evs] == [
        ("workflow_step", "eval", None, "unset", "eval"),
        ("workflow_step", "task", None, "unset", "task"),
        ("model_call", "llm", None, "unset", "Chat Completion"),
        ("tool_call", "tool", "langchain.tool", "error", "langchain.tool"),
        ("error", "exception", "langchain.tool", "error", "RuntimeError: tool backend down"),
        ("workflow_step", "score", None, "unset", "score"),
        ("evaluation_result", "braintrust.scores", None, "failed", "exact_match: score 0.0"),
        ("final_answer", "braintrust.output_json", None, None, "dunno"),
    ]
    good_evs = events(con, good)
    assert [(e["status"], e["content"]) for e in of_type(good_evs, "evaluation_result")] == [
        ("passed", "exact_match: score 1.0")]
    assert [e["content"] for e in of_type(good_evs, "tool_result")] == ["sunny"]  # JSON-quoted string unquoted
    # the flattened key `braintrust.span_attributes.type`
    assert [(e["type"], e["raw_type"]) for e in events(con, flat)] == [("model_call", "llm")]
    assert {d for d in detections(con) if d[0] == "failed_evaluation"} == {
        ("failed_evaluation", bad, "4c0725f5977798ad/braintrust.scores/exact_match")}


# --- ids written as hex and as base64 --------------------------------------------------------------------

IDS_DEMO = "918368bd7ebf37b11a8801d8b335de25"
IDS_FILES = ("ids-demo.otlp.json", "ids-demo.protojson-base64ids.json", "ids-demo.otel-python-json-file.jsonl")


def parsed(found: list[dict]) -> list[dict]:
    """Rows with their JSON columns parsed: exporters order an object's keys differently."""
    return [{k: json.loads(v) if k in ("metadata", "extra") and v else v for k, v in r.items()} for r in found]


def loaded(paths) -> tuple[list[dict], list[dict]]:
    con = stage(paths)
    no_rejects(con)
    return (parsed(rows(con, "SELECT trace_id, source, task, outcome, started_at, ended_at, metadata, extra FROM traces")),
            parsed(rows(con, "SELECT * EXCLUDE (file_id, record) FROM events ORDER BY trace_id, seq")))


def test_base64_ids_are_read_as_hex():
    raw = json.loads((PRODUCERS / "ids-demo.protojson-base64ids.json").read_text())
    first = raw["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (first["traceId"], first["spanId"], first["kind"]) == ("kYNovX6/N7EaiAHYszXeJQ==", "rL8uYpbo9ls=", "SPAN_KIND_CLIENT")
    assert base64.b64decode(first["traceId"]).hex() == IDS_DEMO
    hex_only, b64_only = loaded([PRODUCERS / IDS_FILES[0]]), loaded([PRODUCERS / IDS_FILES[1]])
    assert [t["trace_id"] for t in b64_only[0]] == [IDS_DEMO]
    assert b64_only == hex_only  # the same trace and events, kind and status code as numbers in both
    assert [(e["event_id"], e["parent_id"], e["type"], e["tool_name"]) for e in b64_only[1]] == [
        ("bf088e9c6006f3e6", None, "workflow_step", None),
        ("acbf2e6296e8f65b", "bf088e9c6006f3e6", "model_call", None),
        ("8ad2cee81490f59f", "bf088e9c6006f3e6", "tool_call", "explode"),
        ("8ad2cee81490f59f/events/0", "8ad2cee81490f59f", "error", "explode"),
        ("bf088e9c6006f3e6/events/0", "bf088e9c6006f3e6", "error", None),
    ]
    assert b64_only[1][1]["extra"]["kind"] == 3
    assert b64_only[1][2]["extra"]["status"] == {"code": 2}


def test_one_run_exported_three_ways_is_one_trace(tmp_path):
    hex_only = loaded([PRODUCERS / IDS_FILES[0]])
    for name in IDS_FILES:
        shutil.copy(PRODUCERS / name, tmp_path / name)
    con = stage([tmp_path])
    no_rejects(con)
    assert [t["trace_id"] for t in rows(con, "SELECT trace_id FROM traces")] == [IDS_DEMO]
    assert parsed(rows(con, "SELECT * EXCLUDE (file_id, record) FROM events ORDER BY seq")) == hex_only[1]
    # the first file read gives the events; the other two only repeat them (one ordering an object's
    # keys differently) and are linked to the trace
    assert rows(con, "SELECT count(DISTINCT file_id) AS n FROM events") == [{"n": 1}]
    assert rows(con, "SELECT count(*) AS n, min(trace_id) AS trace_id FROM record_links") == [{"n": 2, "trace_id": IDS_DEMO}]


def test_upper_case_hex_ids_are_lower_cased(tmp_path):
    export = json.loads((PRODUCERS / IDS_FILES[0]).read_text())
    for span in export["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = span[key].upper()
    write_traces(tmp_path, "upper.json", [export])
    assert loaded([tmp_path / "upper.json"]) == loaded([PRODUCERS / IDS_FILES[0]])


def test_a_changed_span_is_still_a_conflict_across_encodings(tmp_path):
    shutil.copy(PRODUCERS / IDS_FILES[0], tmp_path / "a.json")
    changed = json.loads((PRODUCERS / IDS_FILES[1]).read_text())
    changed["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["status"] = {"code": "STATUS_CODE_ERROR"}
    second = write_traces(tmp_path, "b.json", [changed])
    con = stage([tmp_path])
    assert rows(con, "SELECT f.path, j.reason FROM rejects j JOIN files f USING (file_id)") == [
        {"path": str(second),
         "reason": f"resourceSpans[0].scopeSpans[0].spans[0]: conflicting duplicate of event acbf2e6296e8f65b of trace "
                   f"{IDS_DEMO} (first at {tmp_path / 'a.json'} line 1)"}]
    assert rows(con, "SELECT * FROM record_links") == []
