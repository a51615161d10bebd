"""The adapter contract (sql/staging.sql), held for every adapter in sql/adapters/ alike: a file of its
format is given that format whatever the others match; every row it stages says where it came from and
to which trace it belongs; every record is loaded, quarantined or rejected; an event of a type no one
maps is kept as `unknown` with its raw type; and a copy of the same file adds nothing.

Each adapter's given/expect case is a row of CASES: a file (or folder) of its format, the traces and
events it must stage, and an edit of the file's text that turns one event's type into one never seen.
The format's own tests (tests/test_format_<format>.py) check what each field becomes.

Every adapter states the roles of its producer (its `roles` header), and sets who acted from them: ROLES holds,
per producer, the actors of the events written in the user's place (and of any event not the agent's or a
tool's) on a file in that producer's shape. Producers in which no person speaks have no `human` there."""

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO, rows, stage
from lessonweaver.adapters import load_adapters
from lessonweaver.sqlfile import SqlFileError

FORMATS = REPO / "tests" / "fixtures" / "formats"
# The event types of the lessonweaver trace spec; everything else an adapter stages is 'unknown'.
CANONICAL = {"user_message", "assistant_message", "model_call", "tool_call", "tool_result", "error", "retry",
             "human_correction", "evaluation_result", "final_answer", "workflow_step"}
NEW_KIND = "zz_never_seen_kind"


@dataclass(frozen=True)
class Case:
    given: Path
    traces: int
    events: int
    unknown_edit: tuple[str, str]  # (text, replacement) in the given file: one event type nobody maps
    # what such an event becomes: `unknown`, or the format's own fallback where its spec has one
    unknown_as: str = "unknown"
    # (traces, events) a copy in another file adds: those of conversations that carry no id of their own,
    # whose trace id is made from where they were found
    copy_adds: tuple[int, int] = (0, 0)


CASES = {
    "agent_chat_log": Case(FORMATS / "agent_chat_log" / "magentic-one.json", 1, 12,
                           ('"role": "WebSurfer"', f'"role": "{NEW_KIND}"'), "assistant_message"),
    "lessonweaver": Case(REPO / "data" / "coding-agent" / "pr-reviews.jsonl", 9, 43,
                         ('"type": "final_answer"', f'"type": "{NEW_KIND}"')),
    "agent_kernel": Case(FORMATS / "agent_kernel" / "actiontraces.jsonl", 2, 8,
                         ('"type": "final"', f'"type": "{NEW_KIND}"')),
    "chat": Case(FORMATS / "chat" / "conversations.jsonl", 2, 6, ('"role": "function"', f'"role": "{NEW_KIND}"'),
                 copy_adds=(1, 2)),
    "claude_code": Case(FORMATS / "claude_code" / "-home-dev-shopfront", 1, 28,
                        ('"type": "tool_use"', f'"type": "{NEW_KIND}"')),
    "codex": Case(FORMATS / "codex" / "sessions" / "2025" / "08" / "20", 1, 4,
                  ('"type": "function_call_output"', f'"type": "{NEW_KIND}"')),
    "gdev": Case(FORMATS / "gdev" / "tool_retry.jsonl", 3, 26,
                 ('"event_type": "dedup_checked"', f'"event_type": "{NEW_KIND}"')),
    # a span is an operation whatever its kind: one of a kind not known is a step
    "openhands": Case(FORMATS / "openhands" / "v015" / "output.jsonl", 2, 23,
                      ('"action": "run"', f'"action": "{NEW_KIND}"'), "tool_call"),
    "otlp": Case(FORMATS / "otlp" / "spans.jsonl", 2, 8, ('"stringValue": "CHAIN"', f'"stringValue": "{NEW_KIND}"'),
                 "workflow_step"),
    "stream": Case(FORMATS / "stream" / "documented_tool_retry.jsonl", 1, 13,
                   ('"event_type": "task_start_react", "scope": "task", "action": "start", "category": "react"',
                    f'"event_type": "{NEW_KIND}", "scope": "task", "action": "start", "category": "{NEW_KIND}"')),
    # SWE-agent 0.x: a history entry in a role SWE-agent never writes
    "swe_agent0": Case(FORMATS / "swe_agent0" / "marshmallow-code__marshmallow-1867.traj", 1, 43,
                       ('"role": "user"', f'"role": "{NEW_KIND}"')),
    "tau2": Case(FORMATS / "tau2" / "kestrel_mobile_results.json", 4, 62,
                 ('"role": "user"', f'"role": "{NEW_KIND}"')),
    "traceevent": Case(FORMATS / "traceevent" / "single_agent_retry.jsonl", 1, 11,
                       ('"event_type": "agent_start"', f'"event_type": "{NEW_KIND}"')),
}
ADAPTERS = load_adapters()

# Per producer: a file in its shape, and the actors (NULL: as the type says) of the events in the user's place
# and of every event set apart from the agent's and the tools': {(type, actor): count}.
ROLES = {
    "agent_chat_log (AG2, Magentic-One)": (FORMATS / "agent_chat_log", {
        ("user_message", "human"): 1,  # Magentic-One's task, labelled human; AG2's is its lead's
        ("user_message", "parent"): 4,  # that task, and the orchestrator's instructions to its agents
        ("workflow_step", "harness"): 2}),  # the executor with nothing to run, the orchestration loop's stop
    "agent_kernel": (FORMATS / "agent_kernel" / "actiontraces.jsonl", {("workflow_step", None): 1}),
    "chat (OpenAI, Anthropic, tau-bench)": (FORMATS / "chat", {
        ("user_message", None): 5,  # transcripts of unknown origin: as the type says
        ("user_message", "counterpart"): 4,  # tau-bench's simulated customer
        ("evaluation_result", "harness"): 2}),
    "chat (mini-swe-agent)": (FORMATS / "swe_agent" / "mini-v2", {("workflow_step", "harness"): 10}),
    "chat (OpenHands completion logs)": (next((FORMATS / "openhands" / "v0" / "evaluation_outputs").glob("*/*/*/llm_completions")),
                                         {("workflow_step", "harness"): 5}),
    "claude_code": (FORMATS / "claude_code", {
        ("user_message", "human"): 3,  # two prompts and an interruption
        ("human_correction", "human"): 1,  # a tool use the person rejected
        ("user_message", "parent"): 1,  # a subagent's prompt
        ("tool_result", "harness"): 1,  # a call the permission settings refused
        ("workflow_step", "harness"): 5}),  # caveat, command wrapper, its output, IDE note, system reminder
    "codex": (FORMATS / "codex", {
        ("user_message", "human"): 4,  # three prompts and an interrupted turn
        ("human_correction", "human"): 1,  # a command the person rejected
        ("user_message", "parent"): 1,  # the prompt of a session another agent spawned
        ("tool_result", "harness"): 1,  # a command the exec policy forbids
        ("workflow_step", "harness"): 2}),  # injected context
    "gdev": (FORMATS / "gdev" / "tool_retry.jsonl", {("user_message", "counterpart"): 3, ("workflow_step", None): 12}),
    "lessonweaver": (REPO / "data" / "coding-agent" / "pr-reviews.jsonl", {("user_message", None): 9, ("human_correction", None): 6}),
    "openhands": (FORMATS / "openhands" / "v015", {
        ("user_message", "human"): 2,  # the task of a session: a person's, as far as its events say
        ("workflow_step", "harness"): 4}),  # an evaluation run's task, and the fake user's replies
    "otlp": (FORMATS / "otlp" / "spans.jsonl", {("workflow_step", None): 2}),
    "stream": (FORMATS / "stream", {("user_message", "human"): 14, ("workflow_step", None): 53}),
    "swe_agent0": (FORMATS / "swe_agent0", {
        ("workflow_step", "harness"): 4,  # each run's task statement, and the run loop stopping the agent at its cost limit
        ("user_message", "parent"): 1}),  # a sub-agent's first prompt: its parent's arguments
    "tau2": (FORMATS / "tau2" / "kestrel_mobile_results.json", {
        ("user_message", "counterpart"): 14,
        ("tool_call", "counterpart"): 2, ("tool_result", "counterpart"): 2,  # on the customer's own phone
        ("evaluation_result", "harness"): 4}),
    "traceevent": (FORMATS / "traceevent", {("workflow_step", None): 18, ("workflow_step", "parent"): 3}),
}


def test_every_adapter_has_a_case_and_a_priority_of_its_own():
    assert sorted(CASES) == sorted(a.format for a in ADAPTERS)
    priorities = [a.priority for a in ADAPTERS]
    assert len(set(priorities)) == len(priorities)


def test_two_adapters_with_one_priority_are_refused(tmp_path: Path):
    for name in ("one", "two"):
        (tmp_path / f"{name}.sql").write_text(f"-- format: {name}\n-- title: t\n-- match: false\n-- priority: 5\n"
                                              "-- roles: user = human; assistant = agent\nSELECT 1\n", encoding="utf-8")
    with pytest.raises(SqlFileError, match="one and two both have priority 5"):
        load_adapters(tmp_path)


def test_every_adapter_states_its_roles():
    for a in ADAPTERS:
        assert a.roles and a.roles == a.sql.header["roles"], a.format
        assert "user" in a.roles or "no user role" in a.roles, a.format  # what the user role holds, or that there is none


def test_an_adapter_that_does_not_state_its_roles_is_refused(tmp_path: Path):
    (tmp_path / "mute.sql").write_text("-- format: mute\n-- title: t\n-- match: false\nSELECT 1\n", encoding="utf-8")
    with pytest.raises(SqlFileError, match=r"mute\.sql: header is missing roles"):
        load_adapters(tmp_path)


def test_every_producer_has_its_roles_checked():
    assert {name.split(" ")[0] for name in ROLES} == {a.format for a in ADAPTERS}


@pytest.mark.parametrize("producer", sorted(ROLES))
def test_who_acts_is_the_producers_word(producer: str):
    given, expected = ROLES[producer]
    con = stage([given])
    got = {(r["type"], r["actor"]): r["n"] for r in rows(con, """
        SELECT type, actor, count(*) AS n FROM events
        WHERE type IN ('user_message', 'human_correction', 'workflow_step') OR actor NOT IN ('agent', 'tool', 'provider')
        GROUP BY ALL""")}
    assert got == expected


def copy_given(given: Path, to: Path) -> Path:
    """A copy of a case's file or folder under `to`."""
    target = to / given.name
    if given.is_dir():
        shutil.copytree(given, target)
    else:
        to.mkdir(parents=True, exist_ok=True)
        shutil.copy(given, target)
    return target


@pytest.fixture(scope="module", params=sorted(CASES))
def staged(request):
    fmt = request.param
    return fmt, CASES[fmt], stage([CASES[fmt].given])


def test_a_file_is_given_its_format(staged):
    fmt, _, con = staged
    assert {r["format"] for r in rows(con, "SELECT format FROM file_formats")} == {fmt}


def test_every_staged_row_says_where_it_came_from(staged):
    fmt, case, con = staged
    assert rows(con, "SELECT count(*) AS n FROM traces") == [{"n": case.traces}]
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": case.events}]
    assert rows(con, """SELECT count(*) AS n FROM traces WHERE format IS DISTINCT FROM ? OR coalesce(trace_id, '') = ''
                        OR file IS NULL OR line IS NULL OR file_id IS NULL OR record IS NULL""", [fmt]) == [{"n": 0}]
    assert rows(con, "SELECT count(*) AS n FROM events WHERE trace_id NOT IN (SELECT trace_id FROM traces) "
                     "OR seq IS NULL OR file_id IS NULL OR record IS NULL") == [{"n": 0}]
    assert rows(con, "SELECT count(*) AS n FROM (SELECT trace_id, seq FROM events GROUP BY ALL HAVING count(*) > 1)") \
        == [{"n": 0}]
    types = {r["type"] for r in rows(con, "SELECT DISTINCT type FROM events")}
    assert types <= CANONICAL | {"unknown"}
    assert rows(con, "SELECT count(*) AS n FROM events WHERE raw_type IS NULL OR type IS NULL") == [{"n": 0}]


def test_every_record_is_accounted_for(staged):
    _, _, con = staged
    [total] = rows(con, """SELECT sum(records) AS records, sum(loaded + quarantined + rejected) AS placed,
                                  sum(unaccounted) AS unaccounted, sum(loaded) AS loaded FROM file_accounts""")
    assert total["records"] == total["placed"] and total["unaccounted"] == 0 and total["loaded"] > 0


def _edited(case: Case, folder: Path) -> Path:
    given = copy_given(case.given, folder)
    old, new = case.unknown_edit
    edited = 0
    for f in [given] if given.is_file() else sorted(p for p in given.rglob("*") if p.is_file()):
        text = f.read_text(encoding="utf-8")
        if old in text:
            f.write_text(text.replace(old, new, 1), encoding="utf-8")
            edited += 1
            break
    assert edited, f"{old} is not in {case.given}"
    return given


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_an_event_of_a_new_type_is_kept_as_unknown(fmt: str, tmp_path: Path):
    case = CASES[fmt]
    con = stage([_edited(case, tmp_path)])
    assert rows(con, "SELECT count(*) AS n FROM traces") == [{"n": case.traces}]
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": case.events}]
    kept = rows(con, "SELECT type FROM events WHERE raw_type LIKE ?", [f"%{NEW_KIND}%"])
    assert kept and {r["type"] for r in kept} == {case.unknown_as}


@pytest.mark.parametrize("fmt", sorted(CASES))
def test_a_copy_of_the_same_file_adds_nothing(fmt: str, tmp_path: Path):
    case = CASES[fmt]
    con = stage([copy_given(case.given, tmp_path / "a"), copy_given(case.given, tmp_path / "b")])
    assert rows(con, "SELECT count(*) AS n FROM traces") == [{"n": case.traces + case.copy_adds[0]}]
    assert rows(con, "SELECT count(*) AS n FROM events") == [{"n": case.events + case.copy_adds[1]}]
    once = stage([case.given])
    # a record rejected in one copy is rejected in the other, for the same reason
    assert rows(con, "SELECT count(*) AS n FROM rejects") == rows(once, "SELECT 2 * count(*) AS n FROM rejects")
    assert rows(con, "SELECT sum(unaccounted) AS n FROM file_accounts") == [{"n": 0}]
