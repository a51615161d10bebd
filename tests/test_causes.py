"""Lessons are causes (docs/lessons.md): findings of one cause across sessions, tasks and wordings are one
lesson, what worked is kept with it, and the noise floor keeps the findings that are no rule out of the
list. Each case is a small set of chat conversations of our own writing, run whole (pipeline.run_local)
into a real database."""

import json
from pathlib import Path

import duckdb

from lessonweaver.config import Settings
from lessonweaver.pipeline import run_local


def call(n: int, command: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"c{n}", "type": "function",
                            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]}


def result(n: int, text: str) -> dict:
    return {"role": "tool", "tool_call_id": f"c{n}", "content": text}


def conversation(cid: str, task: str, *messages: dict) -> dict:
    return {"id": cid, "messages": [{"role": "user", "content": task}, *messages,
                                    {"role": "assistant", "content": "Done: the change is in."}]}


def weave(tmp_path: Path, conversations: list[dict]) -> duckdb.DuckDBPyConnection:
    folder = tmp_path / "in"
    folder.mkdir(parents=True)
    (folder / "sessions.jsonl").write_text("".join(json.dumps(c) + "\n" for c in conversations))
    db = tmp_path / "lw.duckdb"
    run_local(Settings(paths=(str(folder),), db=str(db), out=str(tmp_path / "out"), workers=1))
    return duckdb.connect(str(db), read_only=True)


def lessons(con) -> list[tuple]:
    return con.execute("SELECT family, trace_count, occurrences FROM lessons ORDER BY family, trace_count").fetchall()


def test_one_failure_in_many_sessions_and_tasks_is_one_cause_with_what_worked(tmp_path):
    """`npm test` failing with `jest: command not found` in three sessions of three tasks, with other line
    numbers in its output: one lesson, and what worked (`npx jest`) is in its rule."""
    con = weave(tmp_path, [conversation(f"s{i}", task,
                                        call(1, "npm test"), result(1, f"Error: sh: line {i}: jest: command not found"),
                                        call(2, "npx jest"), result(2, "Tests: 12 passed"))
                           for i, task in enumerate(["Fix the cart total", "Add a coupon field", "Rename the API"], 1)])
    ((title, signature, recovery, lesson, traces),) = con.execute(
        "SELECT title, signature, recovery, lesson, trace_count FROM lessons").fetchall()
    assert traces == 3
    assert signature == "npm test: sh: line #: jest: command not found"
    assert recovery == "`npx jest`" and "`npx jest`" in lesson
    assert "Fix the cart" not in title + lesson  # the task is context, never identity


def test_an_edit_that_did_not_apply_is_one_cause_however_the_tool_words_it(tmp_path):
    """A patch tool that fails with two different messages in two sessions, each fixed by patching again
    with other input: one cause (the edit did not match the file), not one per message."""
    def patch(n: int, body: str) -> dict:
        return call(n, f"apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/cart.py\n{body}\n*** End Patch\nEOF")
    con = weave(tmp_path, [
        conversation("p1", "Fix the cart total",
                     patch(1, "@@\n-total = 0\n+total = 0.0"), result(1, "Error: Failed to find expected lines in src/cart.py"),
                     patch(2, "@@\n-total=0\n+total = 0.0"), result(2, "Success. Updated the following files: src/cart.py")),
        conversation("p2", "Add a coupon field",
                     patch(1, "total = 0.0"), result(1, "Error: invalid hunk at line 3, 'total' is not a valid hunk header"),
                     patch(2, "@@\n+coupon = None"), result(2, "Success. Updated the following files: src/cart.py")),
    ])
    assert sorted(con.execute("SELECT signature, trace_count FROM lessons").fetchall()) == [
        ("apply_patch: the edit did not apply", 2),
        # neither session ran anything after its last patch: unchecked_edit's cause, its own lesson
        ("unchecked: nothing run after the last edit", 2)]


def test_work_handed_back_unchecked_is_one_cause_whatever_the_user_pasted(tmp_path):
    """Two people in two sessions say that work the agent said was done fails, each with what they pasted,
    and one asks why it did not run it: one cause, ranked above a correction made once. A traceback pasted
    with no words of its own is a paste (benchmarks/turns/RULES.md), no correction."""
    con = weave(tmp_path, [
        conversation("u1", "Add an export button",
                     {"role": "assistant", "content": "The export button is added."},
                     {"role": "user", "content": "it crashes:\nTraceback (most recent call last):\n  File \"app.py\", line 3\nImportError: cannot import name 'Exporter'"}),
        conversation("u2", "Make the build pass",
                     {"role": "assistant", "content": "The build should pass now."},
                     {"role": "user", "content": "CI still fails: mkdocs: command not found"}),
        conversation("u3", "Write the release script",
                     {"role": "assistant", "content": "The script is written."},
                     {"role": "user", "content": "why won't you run it?"}),
        conversation("u4", "Tidy the readme",
                     {"role": "assistant", "content": "I used British spelling throughout."},
                     {"role": "user", "content": "That's not what I asked: keep the American spelling of the product names"}),
        # a log pasted with no words of the person's own says nothing yet: a paste, not a correction
        conversation("u5", "Add an import button",
                     {"role": "assistant", "content": "The import button is added."},
                     {"role": "user", "content": "Traceback (most recent call last):\n  File \"app.py\", line 9\nImportError: cannot import name 'Importer'"}),
    ])
    got = con.execute("SELECT signature, trace_count, human FROM lessons ORDER BY priority DESC").fetchall()
    assert got[0] == ("work handed back unchecked: the user found the failure or asked for the check", 3, True)
    assert len(got) == 2 and got[1][1] == 1  # the spelling correction is its own lesson, below
    rule = con.execute("SELECT lesson FROM lessons ORDER BY priority DESC LIMIT 1").fetchone()[0]
    assert rule.startswith("Run what you changed")


def test_a_customer_reporting_the_outcome_of_their_own_step_is_no_correction(tmp_path):
    """A support agent asks customers to try a step on their own phone, and each says it is still not
    working: the report of a step the agent asked for is an answer (benchmarks/turns/RULES.md), not a
    correction, and certainly not work the agent handed back unchecked."""
    con = weave(tmp_path, [
        conversation(f"s{i}", "My mobile data is slow",
                     {"role": "assistant", "content": "Please turn airplane mode off and on again, then tell me how it goes."},
                     {"role": "user", "content": f"I did that, but the mobile data on line {i} is still not working at all."})
        for i in (1, 2)])
    assert con.execute("SELECT intent FROM turns WHERE nth = 2").fetchall() == [("answer",), ("answer",)]
    assert con.execute("SELECT count(*) FROM detections WHERE detector = 'human_correction'").fetchone() == (0,)


def test_the_noise_floor(tmp_path):
    """Below the floor, in one trace with no person and below high severity: a one-off; a slip the agent
    fixed at once (two failures, each followed by a call that worked); a failure that cost many calls; the
    environment failing. The same slip in two traces is a lesson: what recurs is what is worth writing down."""
    slip = (call(1, "pytest -q"), result(1, "Error: E   AssertionError: assert 3 == 4"),
            call(2, "sed -i s/3/4/ src/calc.py"), result(2, ""),
            call(3, "pytest -q"), result(3, "4 passed"),
            call(4, "pytest -q"), result(4, "Error: E   AssertionError: assert 5 == 6"),
            call(5, "sed -i s/5/6/ src/calc.py"), result(5, ""),
            call(6, "pytest -q"), result(6, "4 passed"))
    costly = (call(1, "make lint"), result(1, "Error: E501 line too long"),
              *[m for n in range(2, 8) for m in (call(n, f"cat src/part{n}.py"), result(n, "x = 1"))],
              call(8, "make lint"), result(8, "ok"))
    outage = (call(1, "curl https://api.example.test"), result(1, "Error: 429 Too Many Requests: rate limit exceeded"),
              call(2, "curl https://api.example.test"), result(2, "Error: 429 Too Many Requests: rate limit exceeded"))
    con = weave(tmp_path, [conversation("slip", "Fix the calculator", *slip),
                           conversation("costly", "Tidy the code", *costly),
                           conversation("again1", "Fix the totals", *slip[:6]),
                           conversation("again2", "Fix the sums", *slip[:6])])
    rows = con.execute("SELECT signature, trace_count FROM lessons ORDER BY signature").fetchall()
    assert rows == [("pytest: e assertionerror: assert # == #", 3)]
    con.close()

    (tmp_path / "alone").mkdir()
    con = weave(tmp_path / "alone", [conversation("one-slip", "Fix the calculator", *slip),
                                     conversation("outage", "Call the API", *outage)])
    assert lessons(con) == []  # the slip fixed at once and the outage in one trace are findings only
    below = con.execute("SELECT count(*) FROM detections WHERE lesson_id NOT IN (SELECT lesson_id FROM lessons)").fetchone()[0]
    assert below == con.execute("SELECT count(*) FROM detections").fetchone()[0] > 0


def test_the_normal_course_of_a_coding_run_in_one_session_is_below_the_floor(tmp_path):
    """A coding run's script failing again and again while the agent edits (retry, low in a run that
    changes files) is the normal course of such a run in one session, however many calls it took; the same
    failure in two sessions is a lesson."""
    def session(cid: str) -> dict:
        return conversation(cid, "Fix the rounding of invoice totals",
                            *[m for i in range(1, 6) for m in (
                                call(2 * i - 1, "python3 check_totals.py"),
                                result(2 * i - 1, "Traceback (most recent call last):\nValueError: totals differ by 0.01\nExit code: 1"),
                                call(2 * i, f"sed -i 's/round(x, {i})/round(x, {i + 1})/' billing/totals.py"),
                                result(2 * i, "Exit code: 0"))],
                            call(11, "python3 check_totals.py"), result(11, "totals match\nExit code: 0"))
    one = weave(tmp_path / "one", [session("r1")])
    assert one.execute("SELECT count(*) FROM lessons WHERE family = 'tool_failure'").fetchone() == (0,)
    assert one.execute("SELECT count(*) FROM detections WHERE detector = 'retry' AND severity = 'low'").fetchone() == (1,)
    two = weave(tmp_path / "two", [session("r1"), session("r2")])
    assert two.execute("SELECT trace_count FROM lessons WHERE family = 'tool_failure'").fetchall() == [(2,)]


def test_a_review_the_agent_did_not_read_is_not_code_it_did_not_run(tmp_path):
    """"The changed files were never opened" corrects how the agent reviewed, not work it handed back
    unrun: the rule is the person's words, not "run what you changed"."""
    con = weave(tmp_path, [{"trace_id": f"r{i}", "source": "review-bot", "task": f"Review pull request #{i}",
                            "outcome": "corrected_by_human",
                            "events": [{"id": "e1", "type": "user_message", "content": f"Review pull request #{i}"},
                                       {"id": "e2", "type": "final_answer", "content": f"PR #{i} looks good: approved."},
                                       {"id": "e3", "type": "human_correction",
                                        "content": f"Approval of PR #{i} was premature: the changed files were never "
                                                   "opened. Read the diff first."}]}
                           for i in (101, 102)])
    ((signature, lesson),) = con.execute("SELECT signature, lesson FROM lessons").fetchall()
    assert not signature.startswith("work handed back unchecked") and not lesson.startswith("Run what you changed")
    assert "Read the diff first" in lesson
