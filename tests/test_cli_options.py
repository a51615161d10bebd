"""Every option of every subcommand is honoured wherever argparse accepts it.

An option defined on a command and again on one of its actions (`review --db X reject ID` and `review
reject ID --db X`) must keep the value given, wherever it was given: an action's default must never
overwrite a value given before the action. The parser tree is walked, so a new command is covered
without editing this test.
"""

import argparse
import datetime as dt

import pytest

from conftest import write_traces
from lessonweaver import store
from lessonweaver.cli import main, parser


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _paths(p: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], list]]:
    """Every command path, with the parsers along it: [((names...), [parser at each level])]."""
    found = []
    for name, child in _subparsers(p).items():
        path = prefix + (name,)
        found.append((path, [child]))
        for sub_path, chain in _paths(child, path):
            found.append((sub_path, [child, *chain]))
    return found


def _positionals(p: argparse.ArgumentParser) -> list[str]:
    """Values for a parser's required positional arguments."""
    return ["x" for a in p._actions if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
            and a.nargs not in ("?", "*", argparse.REMAINDER)]


def _value(action: argparse.Action) -> tuple[str, object]:
    """A value unlike the default for an option that takes one: (as typed, as parsed)."""
    if action.choices:
        choice = next(c for c in action.choices if c != action.default)
        return str(choice), choice
    if action.type is int:
        return "7331", 7331
    if action.type is float:
        return "73.5", 73.5
    return "given-value", ["given-value"] if isinstance(action, argparse._AppendAction) else "given-value"


CASES = []
for path, chain in _paths(parser()):
    for level, p in enumerate(chain):
        for action in p._actions:
            if not action.option_strings or action.nargs == 0 or action.dest == "help":
                continue
            if any(s in ("--version",) for s in action.option_strings):
                continue
            CASES.append(pytest.param(path, level, action.option_strings[-1], action.dest,
                                      id=f"{' '.join(path)}:{' '.join(path[:level + 1])} {action.option_strings[-1]}"))


@pytest.mark.parametrize("path, level, option, dest", CASES)
def test_an_option_keeps_its_value_wherever_it_is_given(path, level, option, dest):
    chain = dict(_paths(parser()))[path]
    action = next(a for a in chain[level]._actions if option in a.option_strings)
    typed, parsed = _value(action)
    argv: list[str] = []
    for i, name in enumerate(path):
        argv.append(name)
        if i == level:
            argv += [option, typed]
    argv += _positionals(chain[-1])
    if path[0] == "review" and path[-1] == "edit":
        argv += [] if option == "--text" else ["--text", "t"]
    args = parser().parse_args(argv)
    assert getattr(args, dest) == parsed, f"{' '.join(argv)}: {dest} is {getattr(args, dest)!r}"


def test_review_acts_on_the_database_named_before_the_action(prefect_server, tmp_path, monkeypatch, capsys):
    """`review --db X reject ID` and `review --db X show ID` use X, not ./lessonweaver.duckdb."""
    from flows.nightly import nightly

    monkeypatch.chdir(tmp_path)
    night = dt.date(2026, 11, 2).isoformat()
    trace = {"trace_id": "t1", "source": "support-bot", "task": "Answer a refund question", "outcome": "success",
             "events": [{"id": "e1", "type": "human_correction", "content": "Quote the 14-day refund window."}]}
    for name in ("lessonweaver.duckdb", "other/lw.duckdb"):
        write_traces(tmp_path / "in", "t.jsonl", [trace])
        nightly(paths=[str(tmp_path / "in")], db=name, out=str(tmp_path / "out"), night=night)
    con = store.connect("other/lw.duckdb", read_only=True)
    lesson_id = con.execute("SELECT lesson_id FROM lessons").fetchone()[0]
    con.close()
    capsys.readouterr()

    assert main(["review", "--db", "other/lw.duckdb", "reject", lesson_id[:6], "--note", "owned by billing"]) == 0
    assert main(["review", "--db", "other/lw.duckdb", "show", lesson_id]) == 0
    assert f"{lesson_id}  rejected" in capsys.readouterr().out

    def decisions(db: str) -> list[tuple]:
        con = store.connect(db, read_only=True)
        try:
            return con.execute("SELECT lesson_id, decision, note FROM reviews").fetchall()
        finally:
            con.close()

    assert decisions("other/lw.duckdb") == [(lesson_id, "rejected", "owned by billing")]
    assert decisions("lessonweaver.duckdb") == []
