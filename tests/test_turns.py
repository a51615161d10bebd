"""What each turn of a person or a counterpart means (sql/facts/turns.sql), one case per rule: conversations
of our own writing run whole into a real database, then the `turns` table read back. The rules and the
labelled yardstick they are scored on: docs/lessons.md, benchmarks/turns/RULES.md."""

import json
from pathlib import Path

import duckdb
import pytest

from lessonweaver.config import Settings
from lessonweaver.pipeline import run_local


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def agent(text: str) -> dict:
    return {"role": "assistant", "content": text}


def calls(n: int, name: str, **arguments) -> list[dict]:
    """A call of the agent's and its result."""
    return [{"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{n}", "type": "function",
                             "function": {"name": name, "arguments": json.dumps(arguments)}}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "ok"}]


# (name, messages after the task, the intent of the last user turn)
CASES = [
    ("objection", [agent("I renamed the module to helpers."), user("That's not what I asked: keep the old module name.")],
     "correction"),
    ("redirect", [*calls(1, "bash", command="sed -i s/a/b/ app.py"), agent("Changed it."),
                  user("Don't touch app.py, put the change in the config file.")], "correction"),
    ("fact disputed", [agent("Your order was placed on Monday, so it cannot be returned."),
                       user("That can't be right, I actually ordered it on Thursday.")], "correction"),
    ("failure of the agent's fix", [*calls(1, "apply_patch", patch="*** Update File: ui.py"),
                                    agent("The window should now open."),
                                    user("I ran it and it still exits immediately without a window.")], "correction"),
    ("request made again", [agent("The invoice is on its way."), user("Please email the invoice for order 88 to me."),
                            agent("Done."), user("Please email the invoice for order 88 to me.")], "correction"),
    ("missing from what was made", [*calls(1, "apply_patch", patch="*** Update File: form.py"),
                                    agent("The settings form is complete."),
                                    user("I don't see the new colour fields in the form.")], "correction"),
    ("yes to an offer, a dispute restated", [agent("Your order was placed on Monday, so it cannot be returned."),
                                             user("That can't be right, I actually ordered it on Thursday."),
                                             agent("I cannot change that record. Shall I pass you to a colleague?"),
                                             user("Yes please, I'm sure I ordered it on Thursday.")], "answer"),
    ("a step done as the agent suggested", [agent("Please clear the cache and tell me whether the page loads."),
                                            user("I cleared the cache as you suggested, but the page still does not load.")],
     "answer"),
    ("a status said again", [agent("Please restart the router and run the line test."),
                             user("I'll restart the router now and then run the line test for you."),
                             agent("Thank you, take your time."),
                             user("I'll restart the router now and then run the line test for you.")], "instruction"),
    ("missing, said of the work", [*calls(1, "apply_patch", patch="*** Update File: notes.md"),
                                   agent("The notes are complete."),
                                   user("The entries for last week are still missing.")], "correction"),
    ("missing, as a word of a new request", [*calls(1, "apply_patch", patch="*** Update File: notes.md"),
                                             agent("The notes are complete."),
                                             user("Now go through the old logs and add any missing entries to the notes.")],
     "instruction"),
    ("asking whether there is a way", [*calls(1, "cancel_booking", booking="B7"), agent("Your booking is cancelled."),
                                       user("Isn't there any way to get the fee back as well?")], "instruction"),
    ("a no that answers", [agent("Shall I also update the changelog?"), user("No, leave the changelog alone.")], "answer"),
    ("an answer with details", [agent("Which account should I use?"), user("The one ending in 4471.")], "answer"),
    ("own step reported", [agent("Please restart your router and tell me how it goes."),
                           user("I restarted it but the connection is still not working.")], "answer"),
    ("acknowledgement", [agent("All done, the report is attached."), user("Thanks, that's all!")], "acknowledgement"),
    ("next step", [agent("The tests pass."), user("Now add a command to export the data as CSV.")], "instruction"),
    ("insisting after a refusal", [agent("I'm sorry, our policy does not allow refunds after 30 days."),
                                   user("I understand, but isn't there any exception you could make for me?")],
     "instruction"),
    ("bare paste", [agent("The build is fixed."),
                    user("Run make test\nFAILED tests/test_api.py::test_login\nError: Process completed with exit code 2.")],
     "paste"),
    ("paste with words", [agent("The build should pass now."),
                          user("it still fails:\nFAILED tests/test_api.py::test_login\nexit code 2")], "correction"),
    ("another language", [agent("The page is translated."), user("Das ist nicht die Seite, die ich meinte, bitte noch einmal.")],
     "unknown"),
]


@pytest.fixture(scope="module")
def turns(tmp_path_factory) -> dict[str, list[tuple]]:
    folder = tmp_path_factory.mktemp("turns")
    records = [{"id": name, "messages": [user("Help me with a task, please."), *messages]} for name, messages, _ in CASES]
    (folder / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    db = folder / "lw.duckdb"
    run_local(Settings(paths=(str(folder / "in.jsonl"),), db=str(db), out=str(folder / "out"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("SELECT trace_id, nth, intent, speaker FROM turns ORDER BY trace_id, seq").fetchall()
    finally:
        con.close()
    found: dict[str, list[tuple]] = {}
    for trace, nth, intent, speaker in rows:
        found.setdefault(trace, []).append((nth, intent, speaker))
    return found


@pytest.mark.parametrize("name, expected", [(name, intent) for name, _, intent in CASES])
def test_the_intent_of_a_turn(turns, name, expected):
    mine = turns[name]
    assert mine[0][:2] == (1, "instruction")  # the task
    assert mine[-1][1] == expected


def test_only_corrections_become_human_corrections(tmp_path):
    """Of the cases above, human_correction finds exactly the turns whose intent is a correction."""
    folder = tmp_path / "in"
    folder.mkdir()
    records = [{"id": name, "messages": [user("Help me with a task, please."), *messages]} for name, messages, _ in CASES]
    (folder / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    db = tmp_path / "lw.duckdb"
    run_local(Settings(paths=(str(folder),), db=str(db), out=str(tmp_path / "out"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    found = con.execute("SELECT trace_id, seq FROM detections WHERE detector = 'human_correction' ORDER BY ALL").fetchall()
    last = dict(con.execute("SELECT trace_id, max(seq) FROM turns GROUP BY ALL").fetchall())
    assert {trace for trace, seq in found if seq == last[trace]} == {name for name, _, intent in CASES if intent == "correction"}
    # a correction earlier in a case is found at its own turn
    assert {trace for trace, seq in found if seq != last[trace]} == {"yes to an offer, a dispute restated"}


def test_an_interruption_means_what_the_words_after_it_mean(tmp_path):
    """A wordless interruption is no correction; the person's next words are read on their own: a new
    instruction after it is no correction either, an objection is."""
    def trace(tid: str, after: str) -> dict:
        return {"trace_id": tid, "source": "cli-agent", "task": "Refactor the parser", "outcome": "success", "events": [
            {"id": "e1", "type": "user_message", "content": "Refactor the parser into two modules."},
            {"id": "e2", "type": "tool_call", "content": "bash", "metadata": {"tool": "bash"}},
            {"id": "e3", "type": "user_message", "content": "[stopped]", "metadata": {"interruption": True}},
            {"id": "e4", "type": "user_message", "content": after}]}
    path = tmp_path / "t.jsonl"
    # a person who spoke once: the task, or an interruption with nothing after it (a trace cut there)
    alone = {"trace_id": "alone", "source": "cli-agent", "task": "Refactor the parser", "outcome": "failure", "events": [
        {"id": "e1", "type": "tool_call", "content": "bash", "metadata": {"tool": "bash"}},
        {"id": "e2", "type": "user_message", "content": "[stopped]", "metadata": {"interruption": True}}]}
    path.write_text(json.dumps(trace("next", "Also write a README for the parser.")) + "\n"
                    + json.dumps(trace("objects", "No, don't split it, keep one module and rename it.")) + "\n"
                    + json.dumps(alone) + "\n")
    db = tmp_path / "lw.duckdb"
    run_local(Settings(paths=(str(path),), db=str(db), out=str(tmp_path / "out"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    got = con.execute("SELECT trace_id, seq, intent, interrupted FROM turns ORDER BY ALL").fetchall()
    assert got == [("alone", 2, "interruption", False), ("next", 1, "instruction", False), ("next", 3, "interruption", False), ("next", 4, "instruction", True),
                   ("objects", 1, "instruction", False), ("objects", 3, "interruption", False),
                   ("objects", 4, "correction", True)]


def test_a_refusal_takes_the_words_the_person_adds_after_it(tmp_path):
    """A tool use the person refused with no words of its own, then (past an interruption, before the agent
    says or does anything) their words: those words say what they wanted instead, so they are the
    correction, and the finding at the refusal quotes them. Once the agent has spoken in between, the next
    words are read on their own, and the refusal stays a refusal without words."""
    plan = "- name the command /deploy:all\n- use the ssh key to log in, no password prompt\n- add a short README"
    def trace(tid: str, between: list[dict]) -> dict:
        return {"trace_id": tid, "source": "cli-agent", "task": "Plan the deploy command", "outcome": "success", "events": [
            {"id": "e1", "type": "user_message", "content": "Plan a command that deploys every service."},
            {"id": "e2", "type": "tool_call", "content": "present_plan", "metadata": {"tool": "present_plan"}},
            {"id": "e3", "type": "human_correction", "content": ""},
            {"id": "e4", "type": "user_message", "content": "[stopped]", "metadata": {"interruption": True}},
            *between,
            {"id": "e9", "type": "user_message", "content": plan}]}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace("adds", [])) + "\n"
                    + json.dumps(trace("spoke", [{"id": "e5", "type": "assistant_message", "content": "Stopped. What next?"}])) + "\n")
    db = tmp_path / "lw.duckdb"
    run_local(Settings(paths=(str(path),), db=str(db), out=str(tmp_path / "out"), workers=1))
    con = duckdb.connect(str(db), read_only=True)
    got = con.execute("SELECT trace_id, seq, intent, reason FROM turns WHERE seq > 1 ORDER BY ALL").fetchall()
    assert got == [("adds", 3, "correction", "recorded"), ("adds", 4, "interruption", None), ("adds", 5, "correction", "refused"),
                   ("spoke", 3, "correction", "recorded"), ("spoke", 4, "interruption", None), ("spoke", 6, "paste", None)]
    found = con.execute("SELECT trace_id, seq, severity, evidence, recovery_kind, title FROM detections "
                        "WHERE detector = 'human_correction' ORDER BY ALL").fetchall()
    assert [(t, s, sev, kind) for t, s, sev, _, kind, _ in found] == [("adds", 3, "high", "correction"), ("spoke", 3, "high", None)]
    assert "/deploy:all" in found[0][3] and "/deploy:all" in found[0][5]
    assert found[1][3] == "correction recorded without text"
