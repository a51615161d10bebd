"""Facts (sql/facts/facts.sql) on traces of our own writing: what the detectors and the weave read."""

import json
import sys

import pytest

from conftest import REPO, rows, stage, write_traces
from lessonweaver.queries import execute


def test_a_failed_call_without_a_tool_name_is_a_failure_with_its_cost(tmp_path):
    """A producer that writes no tool name on its calls (a workflow's steps): the failed call is a failure
    like any other, with what worked after it and the calls that cost (none here: a retry event, then the
    call that worked). Its missing tool key once made `failed` unknown inside facts, and the cost with it."""
    trace = {"trace_id": "facts-nameless", "source": "deploy-bot", "task": "migrate the database", "outcome": "success",
             "events": [
                 {"id": "a1", "type": "tool_call", "content": "Connected to the database.", "status": "ok"},
                 {"id": "a2", "type": "tool_call", "content": "Migration failed: lock timeout.", "status": "error"},
                 {"id": "a3", "type": "retry", "content": "Retried with a longer lock timeout."},
                 {"id": "a4", "type": "tool_call", "content": "Migration applied successfully.", "status": "ok"}]}
    con = stage([write_traces(tmp_path, "deploy.jsonl", [trace])])
    execute(con, "facts/facts.sql")
    facts = {f["event_id"]: f for f in rows(con, "SELECT * FROM facts WHERE trace_id = 'facts-nameless'")}
    failed = facts["a2"]
    assert (failed["failed"], failed["environment"]) == (True, False)
    assert (failed["recovery_kind"], failed["recovery_seq"], failed["wasted_steps"]) == ("changed", 4, 0)
    assert [facts[e]["failed"] for e in ("a1", "a4")] == [False, False]


def test_the_text_tests_detectors_share_are_flags_on_what_was_said(tmp_path):
    """The tests several detectors ask of a person's words, and whether a call only looked, are worked
    out once in facts: each turn carries its own answer, other events none."""
    trace = {"trace_id": "facts-said", "source": "pair-bot", "task": "fix the parser", "outcome": "failure",
             "events": [
                 {"id": "u1", "type": "user_message", "content": "Fix the date parser in src/dates.py."},
                 {"id": "c1", "type": "tool_call", "tool_name": "bash", "content": "cat src/dates.py",
                  "metadata": {"args": {"command": "cat src/dates.py"}}},
                 {"id": "c2", "type": "tool_call", "tool_name": "bash", "content": "sed -i 's/%d/%m/' src/dates.py",
                  "metadata": {"args": {"command": "sed -i 's/%d/%m/' src/dates.py"}}},
                 {"id": "a1", "type": "assistant_message", "content": "Fixed."},
                 {"id": "u2", "type": "user_message", "content": "That's not what I asked. It still fails with ValueError: bad month"},
                 {"id": "u3", "type": "user_message", "content": "Did you even run the tests?"},
                 {"id": "u4", "type": "user_message", "content": "Thanks, all good now."}]}
    con = stage([write_traces(tmp_path, "said.jsonl", [trace])])
    execute(con, "facts/facts.sql")
    facts = {f["event_id"]: f for f in rows(con, "SELECT * FROM facts WHERE trace_id = 'facts-said'")}
    said = {e: (facts[e]["objection"], facts[e]["reports_failure"], facts[e]["asks_for_check"]) for e in ("u1", "u2", "u3", "u4")}
    assert said == {"u1": (False, False, False), "u2": (True, True, False),
                    "u3": (False, False, True), "u4": (False, False, False)}
    assert (facts["c1"]["reads"], facts["c2"]["reads"]) == (True, False)
    assert (facts["a1"]["objection"], facts["a1"]["reads"]) == (None, None)


def test_what_a_harness_adds_around_a_shell_output_is_not_the_output(tmp_path):
    """OpenHands dresses each shell result: the command echoed as its first line, `[Python Interpreter:
    ...]` glued to the last line, the prompt and `[Command finished with exit code N]`. A search that found
    nothing is still no failure; a failure's line is the exception, named by its module's path, not the
    echo; an editor's bare `ERROR:` line takes the message under it."""
    def dressed(command: str, printed: str, code: int) -> str:
        return (f"{command}\r\n{printed}[Python Interpreter: /opt/env/bin/python]\n"
                f"root@sandbox:/workspace/shop # \n[Command finished with exit code {code}]")

    def call(n: int, tool: str, args: dict) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}]}

    search = 'grep -n "class Basket" /workspace/shop/cart.py'
    run = "cd /workspace/shop && python3 check_cart.py"
    conversation = {"id": "dressed", "messages": [
        {"role": "user", "content": "Fix the basket total."},
        call(1, "execute_bash", {"command": search}),
        {"role": "tool", "tool_call_id": "c1", "content": dressed(search, "", 1)},
        call(2, "execute_bash", {"command": run}),
        {"role": "tool", "tool_call_id": "c2", "content": dressed(
            run, 'Traceback (most recent call last):\r\n  File "check_cart.py", line 3, in <module>\r\n'
                 "    class Basket(models.Model):\r\n"
                 "shop.core.exceptions.RegistryNotReady: Apps aren't loaded yet.", 1)},
        call(3, "str_replace_editor", {"command": "create", "path": "/workspace/shop/check_cart.py", "file_text": "x"}),
        {"role": "tool", "tool_call_id": "c3", "content": "ERROR:\nInvalid `path` parameter: /workspace/shop/check_cart.py. "
                                                           "File already exists at: /workspace/shop/check_cart.py."},
        {"role": "assistant", "content": "Done."}]}
    path = tmp_path / "dressed.jsonl"
    path.write_text(json.dumps(conversation) + "\n")
    con = stage([path])
    execute(con, "facts/facts.sql")
    calls = rows(con, "SELECT failed, error FROM facts WHERE type = 'tool_call' ORDER BY seq")
    assert calls == [
        {"failed": False, "error": None},
        {"failed": True, "error": "shop.core.exceptions.RegistryNotReady: Apps aren't loaded yet."},
        {"failed": True, "error": "ERROR: Invalid `path` parameter: /workspace/shop/check_cart.py. "
                                  "File already exists at: /workspace/shop/check_cart.py."}]


def test_a_person_is_the_operator_or_a_counterpart_and_nobody_else(tmp_path):
    """lw_person is the one test detectors ask of who spoke: the person operating the agent and a person it
    serves (a customer, a simulated user) are people; the harness, a parent agent, the agent, a tool and the
    provider are not, and neither is an actor nobody gave (the type decides that, through lw_actor)."""
    con = stage([write_traces(tmp_path, "one.jsonl", [{"trace_id": "p", "source": "s", "task": "t", "events": []}])])
    said = dict(con.execute("""SELECT a, lw_person(a) FROM (VALUES ('human'), ('counterpart'), ('harness'), ('parent'),
                                      ('agent'), ('tool'), ('provider'), (NULL)) v(a)""").fetchall())
    assert said == {"human": True, "counterpart": True, "harness": False, "parent": False, "agent": False,
                    "tool": False, "provider": False, None: False}
    assert con.execute("SELECT lw_person(lw_actor('user_message', NULL)), lw_person(lw_actor('user_message', 'parent'))"
                       ).fetchone() == (True, False)


@pytest.mark.slow
def test_the_facts_of_a_batch_fit_in_little_memory(tmp_path):
    """The facts are built in four statements, each dropping what the last made once it is read, so a
    batch's memory peaks in no step of detection: as one query, every CTE read twice was held at once
    beside the facts being written. 5,000 short generated traces (73,000 events) need about 150 MB of
    DuckDB's memory now and about 240 MB as one query; with spilling off, 192 MB must do."""
    sys.path.insert(0, str(REPO))
    from benchmarks import generate

    generate.generate(tmp_path / "corpus", 5000, seed=7, files=1, mix={"lessonweaver": 1.0}, max_words=16,
                      diversity=generate.Diversity(100, 50, 5, True))
    con = stage([tmp_path / "corpus"])
    con.execute("SET temp_directory = ''")  # no spilling: past the limit a statement fails
    con.execute("SET memory_limit = '192MB'")
    execute(con, "facts/facts.sql")
    assert con.execute("SELECT count(*) FROM facts").fetchone()[0] == con.execute("SELECT count(*) FROM events").fetchone()[0]
    left = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()}
    assert not left & {"event_turns", "call_outcomes", "call_facts"}
