"""Every option of every subcommand is honoured wherever argparse accepts it, and `--help` is consistent.

An option defined on a command and again on one of its actions (`review --db X reject ID` and `review
reject ID --db X`) must keep the value given, wherever it was given: an action's default must never
overwrite a value given before the action. Every command and action says what it does, every option has
help and an agreed placeholder, and a number out of range is one clear line. The parser tree is walked,
so a new command is covered without editing this test.
"""

import argparse
import datetime as dt

import pytest

from conftest import REPO, write_traces
from lessonweaver import store
from lessonweaver.cli import METAVARS, main, parser


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
    if action.type not in (None, str):  # int, float, or a checked number (cli.at_least)
        return "7331", action.type("7331")
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
    shown = capsys.readouterr().out
    assert shown.startswith(f"{lesson_id}: rejected\n{lesson_id}  ") and "\nreview      rejected (" in shown

    def decisions(db: str) -> list[tuple]:
        con = store.connect(db, read_only=True)
        try:
            return con.execute("SELECT lesson_id, decision, note FROM reviews").fetchall()
        finally:
            con.close()

    assert decisions("other/lw.duckdb") == [(lesson_id, "rejected", "owned by billing")]
    assert decisions("lessonweaver.duckdb") == []


# --- --help is consistent -------------------------------------------------------------------------------

PARSERS = [(("lessonweaver",), parser())] + [(("lessonweaver", *path), chain[-1]) for path, chain in _paths(parser())]


@pytest.mark.parametrize("path, p", PARSERS, ids=[" ".join(path) for path, _ in PARSERS])
def test_every_command_and_option_says_what_it_is(path, p):
    assert p.description and p.description.strip().endswith("."), f"{' '.join(path)}: a description line"
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert all(a.help for a in action._choices_actions), f"{' '.join(path)}: every action has help"
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help != argparse.SUPPRESS, f"{' '.join(path)} {name}: help"
        if action.nargs != 0 and not action.choices:
            assert action.metavar in METAVARS, f"{' '.join(path)} {name}: metavar {action.metavar!r}"


def test_placeholders_are_those_the_readme_uses():
    assert {"FILE", "DIR", "N"} <= METAVARS
    lines = {" ".join(path): p.format_usage() for path, p in PARSERS}
    assert "--db FILE" in lines["lessonweaver run"] and "--out DIR" in lines["lessonweaver run"]
    assert "--detectors DIR" in lines["lessonweaver detectors"]
    assert "--text TEXT" in lines["lessonweaver review edit"] and "[--text" not in lines["lessonweaver review edit"]
    assert "--limit N" in lines["lessonweaver review"]


def test_a_bare_command_prints_the_usage_and_exits_2(capsys):
    assert main([]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("usage: lessonweaver [-h] [--version] COMMAND ...")
    for name in _subparsers(parser()):
        assert f"\n    {name} " in captured.err or f"\n    {name}\n" in captured.err, name


NUMBERS = [pytest.param(path, action.option_strings[-1], id=f"{' '.join(path)} {action.option_strings[-1]}")
           for path, chain in _paths(parser()) for action in chain[-1]._actions
           if action.option_strings and action.type not in (None, str)]


@pytest.mark.parametrize("path, option", NUMBERS)
def test_a_number_below_its_range_is_one_clear_line(path, option, tmp_path, capsys, monkeypatch):
    """-1 is wrong for every number a command takes: the parser or the command says so, naming the option,
    before anything is read or written (no database error, no traceback)."""
    monkeypatch.chdir(REPO)  # the default PATH, data/, exists: only the number is wrong
    (tmp_path / "2026-11-01").mkdir()
    given = {"backfill": [str(tmp_path)]}.get(path[0], [])
    code = main([*path, *given, option, "-1", "--db", str(tmp_path / "lw.duckdb")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert option in err.splitlines()[-1] and "Traceback" not in err and "Error:" not in err
    assert not (tmp_path / "lw.duckdb").exists()


def test_render_and_redetect_use_the_database_and_folder_named(demo_db, tmp_path, monkeypatch, capsys):
    """The commands that work from the database alone act on the --db and --out given, not the defaults."""
    from conftest import copy_db

    monkeypatch.chdir(tmp_path)
    copy_db(demo_db, tmp_path / "lessonweaver.duckdb")
    (tmp_path / "other").mkdir()
    copy_db(demo_db, tmp_path / "other" / "lw.duckdb")
    untouched = (tmp_path / "lessonweaver.duckdb").read_bytes()
    assert main(["render", "--db", "other/lw.duckdb", "--out", "other/reports"]) == 0
    assert main(["redetect", "--detector", "retry", "--out", "other/again", "--db", "other/lw.duckdb"]) == 0
    assert "report:   other/again/lessons.md" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "other" / "reports").iterdir()) == [
        "lessons.html", "lessons.jsonl", "lessons.md"]
    assert (tmp_path / "other" / "again" / "lessons.md").exists() and not (tmp_path / "reports").exists()
    assert (tmp_path / "lessonweaver.duckdb").read_bytes() == untouched


def test_render_redetect_and_audit_use_the_folder_the_runs_publish_in(tmp_path, monkeypatch, capsys):
    """Without --out, the commands that render from the database write where its runs publish, from any
    working folder; the folder they are called from gains nothing."""
    home, elsewhere = tmp_path / "team", tmp_path / "elsewhere"
    home.mkdir(), elsewhere.mkdir()
    monkeypatch.chdir(home)
    assert main(["run", str(REPO / "data" / "support-bot"), "--db", "lw.duckdb", "--out", "nightly", "--no-prefect",
                 "-q"]) == 0
    published = home / "nightly" / "lessons.md"
    published.unlink()
    monkeypatch.chdir(elsewhere)
    capsys.readouterr()
    assert main(["render", "--db", str(home / "lw.duckdb")]) == 0
    assert f"report:     {home / 'nightly' / 'lessons.md'}" in capsys.readouterr().out.splitlines()
    assert published.exists()
    published.unlink()
    assert main(["redetect", "--db", str(home / "lw.duckdb"), "--detector", "retry"]) == 0
    assert published.exists()
    assert main(["audit", "--db", str(home / "lw.duckdb")]) == 0
    assert f"in {home / 'nightly'}/: clean" in capsys.readouterr().out
    assert list(elsewhere.iterdir()) == []


def test_run_help_gives_examples_and_every_format_it_reads(capsys):
    """`run --help` ends with examples (coding agents' sessions, a benchmark's results) and the names
    --format takes, from the adapters themselves: a format added is listed, one removed is not."""
    from lessonweaver.adapters import load_adapters

    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    examples = out[out.index("\nexamples:\n"):out.index("\nformats (--format NAME")]
    for example in ("lessonweaver run ~/.claude/projects/", "lessonweaver run ~/.codex/sessions/",
                    "a benchmark's results", "--format tau2"):
        assert example in examples, example
    listed = out[out.index("\nformats (--format NAME"):].splitlines()[2:]
    assert [line.split()[0] for line in listed] == sorted(a.format for a in load_adapters()) and len(listed) >= 10
    assert all(len(line) <= 80 for line in examples.splitlines() + listed)  # as written, in 80 columns


def test_the_command_list_ends_with_the_daily_loop(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    loop = out[out.index("the daily loop:"):]
    assert [line.split()[1] for line in loop.splitlines()[1:6]] == ["run", "review", "review", "review", "export"]
    assert "$LESSONWEAVER_DB" in loop
