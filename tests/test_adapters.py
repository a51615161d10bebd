"""The adapter contract (sql/staging.sql), held for every adapter in sql/adapters/ alike: a file of its
format is given that format whatever the others match; every row it stages says where it came from and
to which trace it belongs; every record is loaded, quarantined or rejected; an event of a type no one
maps is kept as `unknown` with its raw type; and a copy of the same file adds nothing.

Each adapter's given/expect case is a row of CASES: a file (or folder) of its format, the traces and
events it must stage, and an edit of the file's text that turns one event's type into one never seen.
The format's own tests (tests/test_format_<format>.py) check what each field becomes."""

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
    "tau2": Case(FORMATS / "tau2" / "kestrel_mobile_results.json", 4, 62,
                 ('"role": "user"', f'"role": "{NEW_KIND}"')),
    "traceevent": Case(FORMATS / "traceevent" / "single_agent_retry.jsonl", 1, 11,
                       ('"event_type": "agent_start"', f'"event_type": "{NEW_KIND}"')),
}
ADAPTERS = load_adapters()


def test_every_adapter_has_a_case_and_a_priority_of_its_own():
    assert sorted(CASES) == sorted(a.format for a in ADAPTERS)
    priorities = [a.priority for a in ADAPTERS]
    assert len(set(priorities)) == len(priorities)


def test_two_adapters_with_one_priority_are_refused(tmp_path: Path):
    for name in ("one", "two"):
        (tmp_path / f"{name}.sql").write_text(f"-- format: {name}\n-- title: t\n-- match: false\n-- priority: 5\n"
                                              "SELECT 1\n", encoding="utf-8")
    with pytest.raises(SqlFileError, match="one and two both have priority 5"):
        load_adapters(tmp_path)


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
