"""Where a lesson holds: its rule names the project its sessions share and, for a tool's or the
environment's failure, the environment they ran in (lw_environment over what the producer recorded); a
person's correction names only the project, and sessions that ran in different environments name none."""

import datetime as dt
import json
from pathlib import Path

import duckdb

from lessonweaver import detectors, lessons, store

NIGHT = dt.date(2026, 11, 20)
LINUX_SANDBOX = {"cwd": "/home/ana/shop", "shell": "bash", "sandbox": "workspace-write", "network": "restricted"}


def database(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = store.connect(str(tmp_path / "lw.duckdb"))
    lessons.register_detectors(con, detectors.load_detectors([]))
    return con


def given(con, cause: str, traces: list[dict | None], tool: str | None = "git push",
          recovery_kind: str | None = None, detector: str = "retry") -> None:
    """One finding of `cause` in each trace, whose metadata is given (None: none recorded)."""
    for n, metadata in enumerate(traces):
        trace = f"{cause}-{n}"
        con.execute("INSERT INTO traces (trace_id, source, task, file, line, content_hash, metadata, run_id) "
                    "VALUES (?, 'codex/shop', 'a task', 'f.jsonl', 1, ?, ?, 'r1')",
                    [trace, trace, json.dumps(metadata) if metadata else None])
        con.execute(
            "INSERT INTO detections (detector, family, trace_id, seq, severity, evidence, problem, lesson, signature, "
            "tool, category, confidence, recovery, recovery_kind, wasted_steps, variant_id, lesson_id, run_id, detected_at) "
            "VALUES (?, ?, ?, 1, 'high', 'it failed', 'p', 'When it fails, do this.', ?, ?, 'agent', 'certain', "
            "?, ?, 0, ?, ?, 'r1', ?)",
            [detector, cause, trace, cause, tool, "the user said so" if recovery_kind else None, recovery_kind,
             cause, cause, dt.datetime(2026, 11, 20, 2, 0)])


def rules(con) -> dict[str, tuple[str, str | None]]:
    lessons.weave(con, "r1", NIGHT)
    return {s: (rule, env) for s, rule, env in con.execute("SELECT signature, lesson, environment FROM lessons").fetchall()}


def test_the_rule_names_the_project_and_the_environment(tmp_path):
    con = database(tmp_path)
    given(con, "push", [LINUX_SANDBOX, LINUX_SANDBOX])
    given(con, "mac", [{"cwd": "/Users/ana/shop"}, {"cwd": "/Users/ana/shop"}])
    given(con, "mixed", [LINUX_SANDBOX, {"cwd": "/Users/ana/shop"}])
    given(con, "nowhere", [None, None])
    given(con, "person", [LINUX_SANDBOX, LINUX_SANDBOX], recovery_kind="correction", detector="human_correction")
    got = rules(con)
    env = "Linux, bash, sandbox workspace-write, network restricted"
    assert got["push"] == (f"In shop ({env}): When it fails, do this.", env)
    assert got["mac"] == ("In shop (macOS): When it fails, do this.", "macOS")
    # the same project on two machines: the rule names the project, the environment is no one's
    assert got["mixed"] == ("In shop: When it fails, do this.", None)
    # nothing recorded (the source's name is no project): the rule as the detector wrote it
    assert got["nowhere"] == ("When it fails, do this.", None)
    # what a person said is said of the project; the machine is not what they corrected
    assert got["person"] == ("In shop: When it fails, do this.", env)


def test_a_reviewer_s_text_is_kept_as_written(tmp_path):
    con = database(tmp_path)
    given(con, "push", [LINUX_SANDBOX, LINUX_SANDBOX])
    lesson_id = "push"
    con.execute("INSERT INTO reviews (lesson_id, decision, text, decided_at) VALUES (?, 'accepted', 'Push with escalation.', now())",
                [lesson_id])
    assert rules(con)["push"][0] == "Push with escalation."


def test_the_environment_names_its_parts_in_order(tmp_path):
    con = database(tmp_path)
    got = con.execute("""SELECT lw_environment('{"os.type": "linux", "container.name": "api"}'::JSON),
                                lw_environment('{"cwd": "C:\\\\work\\\\shop", "shell": "powershell"}'::JSON),
                                lw_environment('{"cwd": "/srv/shop"}'::JSON), lw_environment(NULL)""").fetchone()
    assert got == ("linux, container api", "Windows, powershell", None, None)


def test_rules_of_one_place_are_not_twins_for_the_place_they_share(tmp_path):
    """`rules` finds duplicates by the words of what rules say: two different rules that both open with
    "In shop (Linux, bash, ...)" share those words, and are still two rules."""
    from lessonweaver import rules as rule_health
    con = database(tmp_path)
    env = "Linux, bash, sandbox workspace-write, network restricted"
    for lesson_id, text in (("a", "Rebase."), ("b", "Retry.")):
        con.execute("INSERT INTO lessons (lesson_id, title, lesson, signature, detector, first_night, last_night, review, "
                    "environment, projects) VALUES (?, ?, ?, ?, 'retry', ?, ?, 'accepted', ?, ['shop'])",
                    [lesson_id, lesson_id, f"In shop ({env}): {text}", lesson_id, NIGHT, NIGHT, env])
        con.execute("INSERT INTO reviews (lesson_id, decision, decided_at) VALUES (?, 'accepted', ?)",
                    [lesson_id, dt.datetime(2026, 11, 21)])
        con.execute("INSERT INTO sightings (lesson_id, night) VALUES (?, ?)", [lesson_id, NIGHT])
    assert [r.duplicates for r in rule_health.health(con)] == [[], []]
    # the same words said of the place are one rule twice
    con.execute("UPDATE lessons SET lesson = (SELECT lesson FROM lessons WHERE lesson_id = 'a') WHERE lesson_id = 'b'")
    assert [r.duplicates for r in rule_health.health(con)] == [["b"], ["a"]]
