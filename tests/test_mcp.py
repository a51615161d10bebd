"""`lessonweaver mcp`: the accepted lessons served over MCP, driven by the official SDK's own client over
stdio, as Claude Code or Codex would start it."""

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import copy_db, query_db, write_traces
from lessonweaver.cli import main

LESSONWEAVER = str(Path(sys.executable).parent / "lessonweaver")


def call(db: Path, *steps: tuple[str, dict], extra: tuple[str, ...] = ()) -> tuple[list, list[dict]]:
    """Start `lessonweaver mcp --db DB` as an MCP client does, list its tools, then make each call: the
    tools, and each call's answer (JSON)."""
    async def session() -> tuple[list, list[dict]]:
        params = StdioServerParameters(command=LESSONWEAVER, args=["mcp", "--db", str(db), *extra])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            tools = (await client.list_tools()).tools
            answers = []
            for name, arguments in steps:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result
                answers.append(json.loads(result.content[0].text))
            return tools, answers
    return anyio.run(session)


def lesson_of(db: Path, project: str) -> str:
    return query_db(db, "SELECT lesson_id FROM lessons WHERE list_contains(projects, ?) AND tenants = 0 "
                        "ORDER BY priority DESC, lesson_id LIMIT 1", [project])[0][0]


@pytest.fixture(scope="module")
def served(demo_db: Path, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The demo database with one lesson of each of two projects accepted, and one left pending."""
    db = copy_db(demo_db, tmp_path_factory.mktemp("mcp") / "lw.duckdb")
    ids = {p: lesson_of(db, p) for p in ("orbital-notes", "support-bot", "research-agent")}
    assert main(["review", "--db", str(db), "accept", ids["orbital-notes"], ids["support-bot"]]) == 0
    return db, ids


def test_an_agent_lists_the_tools_and_finds_the_lessons_of_its_project(served):
    db, ids = served
    tools, (here, searched, shown, missing) = call(
        db, ("lessons_for_path", {"path": "/home/dev/orbital-notes/src/notes.py"}),
        ("search_lessons", {"project": "support-bot"}),
        ("show_lesson", {"lesson_id": ids["orbital-notes"][:8]}),
        ("show_lesson", {"lesson_id": "Lnothere"}))
    assert sorted(t.name for t in tools) == ["lessons_for_path", "search_lessons", "show_lesson"]
    assert all(t.annotations.read_only_hint for t in tools)
    # the project's accepted lesson; not the other project's, not a pending one
    assert [x["lesson_id"] for x in here["lessons"]] == [ids["orbital-notes"]]
    assert [x["lesson_id"] for x in searched["lessons"]] == [ids["support-bot"]]
    assert shown["lesson_id"] == ids["orbital-notes"] and shown["evidence"] and shown["lesson"]
    assert shown["history"] and shown["history"][0]["night"] == "2026-11-29"
    assert "no lesson 'Lnothere'" in missing["error"]
    # file= and limit reach the search (what each lets through: tests/test_serve.py)
    _, (none, one, wrong) = call(db, ("search_lessons", {"file": "no_such.py"}), ("search_lessons", {"limit": 1}),
                                 ("lessons_for_path", {"path": "/x", "limit": 0}))
    assert none["count"] == 0 and one["count"] == 1
    assert wrong == {"error": "limit must be between 1 and 50, not 0"}


def test_search_by_words_and_tool_and_pending_lessons_only_when_asked(served):
    db, ids = served
    stored = query_db(db, "SELECT tool, lower(split_part(title, ' ', 2)) FROM lessons WHERE lesson_id = ?",
                      [ids["orbital-notes"]])[0]
    _, (by_tool, by_words, nothing, pending) = call(
        db, ("search_lessons", {"tool": stored[0] or ""}), ("search_lessons", {"words": stored[1]}),
        ("search_lessons", {"words": "zebra-unicorn"}), ("lessons_for_path", {"path": "/work/research-agent"}))
    assert ids["orbital-notes"] in [x["lesson_id"] for x in by_tool["lessons"]]
    assert ids["orbital-notes"] in [x["lesson_id"] for x in by_words["lessons"]]
    assert nothing == {"lessons": [], "count": 0}
    assert pending["count"] == 0
    _, (pending,) = call(db, ("lessons_for_path", {"path": "/work/research-agent"}), extra=("--pending",))
    assert ids["research-agent"] in [x["lesson_id"] for x in pending["lessons"]]


def test_an_answer_holding_a_quarantined_id_is_withheld(served, tmp_path: Path):
    db, ids = served
    db = copy_db(db, tmp_path / "lw.duckdb")
    quarantined = query_db(db, "SELECT trace_id FROM quarantine WHERE length(trace_id) >= 6 ORDER BY 1 LIMIT 1")[0][0]
    assert main(["review", "--db", str(db), "edit", ids["orbital-notes"], "--text",
                 f"Run the tests before approving, as in {quarantined}."]) == 0
    _, (shown, searched, here, other) = call(
        db, ("show_lesson", {"lesson_id": ids["orbital-notes"]}), ("search_lessons", {"project": "orbital-notes"}),
        ("lessons_for_path", {"path": "/home/dev/orbital-notes/src"}), ("show_lesson", {"lesson_id": ids["support-bot"]}))
    withheld = {"error": "the answer was withheld: the audit found quarantined trace id"}
    assert shown == withheld and searched == withheld and here == withheld  # every tool's answer is audited
    assert other["lesson_id"] == ids["support-bot"]


def test_a_tenants_lessons_come_out_only_when_it_is_named(tmp_path: Path, capsys):
    traces = [{"trace_id": f"t-{tenant}", "source": "bot", "task": "Refund", "outcome": "failure", "metadata": {"tenant_id": tenant},
               "events": [{"id": "e1", "type": "user_message", "content": "Refund my order"},
                          {"id": "e2", "type": "evaluation_result", "content": "Refund policy check failed",
                           "status": "failure"}]}
              for tenant in ("acme", "globex")]
    db = tmp_path / "lw.duckdb"
    assert main(["run", "--no-prefect", "-q", "--db", str(db), "--out", str(tmp_path / "r"),
                 str(write_traces(tmp_path / "in", "t.jsonl", traces))]) == 0
    lesson = query_db(db, "SELECT lesson_id FROM lessons")[0][0]
    assert main(["review", "--db", str(db), "accept", lesson]) == 0
    _, (anyone, shown) = call(db, ("search_lessons", {"words": "refund"}), ("show_lesson", {"lesson_id": lesson}))
    assert anyone["count"] == 0 and "name one with --tenant" in shown["error"]
    _, (mine, shown) = call(db, ("search_lessons", {"words": "refund"}), ("show_lesson", {"lesson_id": lesson}),
                            extra=("--tenant", "acme"))
    assert [x["lesson_id"] for x in mine["lessons"]] == [lesson]
    assert shown["example_trace_ids"] == ["t-acme"] and shown["history"] is None  # its own traces; no shared counts
