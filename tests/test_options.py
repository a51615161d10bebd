"""The run options are declared once (lessonweaver/options.py) and every path honours all of them:
`run`, `backfill` and `schedule` parse them, the flows take them as parameters with the same defaults,
and they reach the run's Settings."""

import argparse
import inspect

import pytest

from flows.backfill import backfill
from flows.nightly import nightly
from lessonweaver import options
from lessonweaver.cli import parser
from lessonweaver.config import Settings


def _flow_parameters(flow, leave_out: tuple[str, ...] = ()) -> dict[str, object]:
    return {name: p.default for name, p in inspect.signature(flow.fn).parameters.items() if name not in leave_out}


@pytest.mark.parametrize("flow, command, own", [(nightly, options.RUN, ()),
                                                 (backfill, options.BACKFILL, ("root", "start", "end"))])
def test_the_flows_take_the_options_with_their_defaults(flow, command, own):
    assert _flow_parameters(flow, own) == {o.name: o.default for o in options.options_for(command)}


def _subcommand(name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


@pytest.mark.parametrize("command", options.EVERYWHERE)
def test_every_command_parses_its_options(command):
    dests = {a.dest for a in _subcommand(command)._actions}
    assert {o.name for o in options.options_for(command)} <= dests


def test_every_option_works_in_all_three_but_night_and_paths():
    """What a nightly run can be told, a backfill and a scheduled deployment can be told too."""
    partial = {o.name: o.commands for o in options.OPTIONS if o.commands != options.EVERYWHERE}
    assert partial == {"paths": (options.RUN, options.SCHEDULE), "night": (options.RUN,)}


def test_given_values_reach_the_settings():
    args = parser().parse_args(["backfill", "nights", "--detectors", "mine", "--templates", "t", "--pii", "quarantine",
                                "--format", "chat", "--tenant", "acme", "--workers", "3", "--batch-mb", "8"])
    settings = options.to_settings(options.values(args, options.BACKFILL))
    assert (settings.detector_dirs, settings.templates, settings.pii, settings.format, settings.tenant) == (
        ("mine",), "t", "quarantine", "chat", "acme")
    assert (settings.workers, settings.batch_bytes, settings.shared_machine) == (3, 8 * 1024 * 1024, True)


def test_defaults_make_the_default_settings():
    settings = options.to_settings(options.values(parser().parse_args(["run"]), options.RUN))
    assert settings.paths == ("data",) and settings.workers >= 1
    assert settings == Settings(workers=settings.workers)


def test_a_deployment_carries_the_options_given_with_paths_made_absolute(tmp_path, monkeypatch):
    from lessonweaver.schedule import parameters

    monkeypatch.chdir(tmp_path)
    args = parser().parse_args(["schedule", "in", "--db", "db/lw.duckdb", "--detectors", "mine", "--pii", "quarantine",
                                "--tenant", "acme"])
    assert parameters(options.values(args, options.SCHEDULE)) == {
        "paths": [str(tmp_path / "in")], "db": str(tmp_path / "db" / "lw.duckdb"), "out": str(tmp_path / "reports"),
        "resolve_after": 7, "detector_dirs": [str(tmp_path / "mine")], "pii": "quarantine", "tenant": "acme"}
