"""The weave at its boundaries: given findings (rows of `detections`), expect lessons. The noise floor's
bounds, each weight of the priority and the choice of the finding that speaks for a lesson are pinned here
at the values that tell them apart, so a change of any of them fails a case (docs/lessons.md states them)."""

import datetime as dt
import math
from pathlib import Path

import duckdb
import pytest

from lessonweaver import detectors, lessons, store

NIGHT = dt.date(2026, 11, 20)
AT = dt.datetime(2026, 11, 20, 2, 0)


def database(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    con = store.connect(str(tmp_path / "lw.duckdb"))
    lessons.register_detectors(con, detectors.load_detectors([]))
    return con


def given(con: duckdb.DuckDBPyConnection, cause: str, findings: list[dict], run: str = "r1") -> None:
    """Findings of one cause (`cause` is its signature, its family and its lesson id: causes of other
    families never merge), each in the trace it names (created with the finding's `line`, `project` and
    `hash` when given)."""
    for n, f in enumerate(findings):
        trace = f.get("trace", f"{cause}-t{n}")
        if not con.execute("SELECT count(*) FROM traces WHERE trace_id = ?", [trace]).fetchone()[0]:
            metadata = f'{{"project": "{f["project"]}"}}' if "project" in f else None
            con.execute("INSERT INTO traces (trace_id, source, task, file, line, content_hash, metadata, run_id) "
                        "VALUES (?, 'bot', 'a task', 'f.jsonl', ?, ?, ?, ?)",
                        [trace, f.get("line", 1), f.get("hash", trace), metadata, run])
        con.execute(
            "INSERT INTO detections (detector, family, trace_id, seq, severity, evidence, problem, lesson, signature, "
            "category, confidence, recovery, recovery_kind, wasted_steps, variant_id, lesson_id, run_id, detected_at) "
            "VALUES (?, ?, ?, ?, ?, ?, 'p', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [f.get("detector", "retry"), cause, trace, f.get("seq", n + 1),
             f.get("severity", "medium"), f.get("evidence", f"evidence {n}"), f.get("lesson", f"rule {n}"), cause,
             f.get("category", "agent"), f.get("confidence", "certain"), f.get("recovery"), f.get("recovery_kind"),
             f.get("wasted", 0), cause, cause, run, f.get("at", AT)])


def woven(con: duckdb.DuckDBPyConnection, night: dt.date = NIGHT, run: str = "r1") -> dict[str, dict]:
    lessons.weave(con, run, night)
    rows = con.execute("SELECT signature, priority, lesson, evidence, detector, recovery FROM lessons").fetchall()
    return {r[0]: dict(zip(("priority", "lesson", "evidence", "detector", "recovery"), r[1:])) for r in rows}


def one(**kw) -> list[dict]:
    return [dict(kw, trace="t")]


def test_the_noise_floor_at_its_bounds(tmp_path):
    """In one trace with no person: below the floor up to medium severity however costly; of high severity,
    one finding of 3 wasted calls is below the floor, of 4 a lesson, and a slip fixed at once up to 3 times
    and 3 calls is below, a 4th time or a 4th call a lesson; the environment is below however severe; a
    second trace, a person's words, critical severity or a detector with `floor: none` make even a one-off
    a lesson."""
    con = database(tmp_path)
    fixed = {"recovery": "`x`", "recovery_kind": "changed"}
    cases = {
        "one-off-3": (one(severity="high", wasted=3), False),
        "one-off-4": (one(severity="high", wasted=4), True),
        "fixed-3x": ([dict(fixed, trace="t", severity="high", wasted=1)] * 3, False),
        "fixed-4x": ([dict(fixed, trace="t", severity="high", wasted=0)] * 4, True),
        "fixed-4-calls": ([dict(fixed, trace="t", severity="high", wasted=2), dict(fixed, trace="t", severity="high", wasted=2)], True),
        "low-5x": ([dict(trace="t", severity="low", wasted=9)] * 5, False),
        "medium-5x": ([dict(trace="t", severity="medium", wasted=9)] * 5, False),
        "high-5x": ([dict(trace="t", severity="high", wasted=9)] * 5, True),
        "environment-5x": ([dict(trace="t", category="environment", severity="high", wasted=9)] * 5, False),
        "environment-2-traces": ([{"category": "environment"}, {"category": "environment"}], True),
        "two-traces": ([{}, {}], True),
        "person": (one(recovery="the user said", recovery_kind="correction"), True),
        "critical": (one(severity="critical"), True),
        "floor-none": (one(detector="secret_exposed"), True),
    }
    for cause, (findings, _) in cases.items():
        given(con, cause, [dict(f, trace=f"{cause}-{f['trace']}") if "trace" in f else f for f in findings])
    listed = set(woven(con))
    assert {cause for cause, (_, lesson) in cases.items() if lesson} == listed


def expected_priority(severity: float, category: float, confidence: float, traces: int, occurrences: int,
                      wasted: int, projects: int, nights: int, human: float, since: int = 0) -> float:
    """The priority as docs/lessons.md states it, written out independently of the SQL."""
    reach = (2 * math.log(1 + traces) + math.log(1 + occurrences) + 0.5 * math.log(1 + wasted)
             + math.log(max(projects, 1)) + 0.5 * math.log(max(nights, 1)))
    recurs = 2 if traces >= 2 else 1
    return round(severity * category * confidence * reach * human * recurs * 0.5 ** (since / 7), 3)


@pytest.mark.parametrize("name, findings, weights", [
    ("info", [{"severity": "info"}] * 2, (0.5, 1, 1, 2, 2, 0, 1, 1, 1)),
    ("low", [{"severity": "low"}] * 2, (1, 1, 1, 2, 2, 0, 1, 1, 1)),
    ("medium", [{}] * 2, (2, 1, 1, 2, 2, 0, 1, 1, 1)),
    ("high", [{"severity": "high"}] * 2, (3, 1, 1, 2, 2, 0, 1, 1, 1)),
    ("critical", [{"severity": "critical"}], (5, 1, 1, 1, 1, 0, 1, 1, 1)),
    ("policy", [{"category": "policy"}] * 2, (2, 1.0, 1, 2, 2, 0, 1, 1, 1)),
    ("producer-flag", [{"category": "producer_flag"}] * 2, (2, 0.9, 1, 2, 2, 0, 1, 1, 1)),
    ("environment", [{"category": "environment"}] * 2, (2, 0.5, 1, 2, 2, 0, 1, 1, 1)),
    ("likely", [{"confidence": "likely"}] * 2, (2, 1, 0.6, 2, 2, 0, 1, 1, 1)),
    ("wasted", [{"wasted": 3}, {"wasted": 4}], (2, 1, 1, 2, 2, 7, 1, 1, 1)),
    ("projects", [{"project": "shop"}, {"project": "blog"}, {"project": "blog"}], (2, 1, 1, 3, 3, 0, 2, 1, 1)),
    ("person-once", [{"recovery": "said", "recovery_kind": "correction", "trace": "t"}] * 2,
     (2, 1, 1, 1, 2, 0, 1, 1, 1.5)),
    ("person-twice", [{"recovery": "said", "recovery_kind": "correction"}] * 2, (2, 1, 1, 2, 2, 0, 1, 1, 3)),
])
def test_each_weight_of_the_priority(tmp_path, name, findings, weights):
    con = database(tmp_path)
    given(con, name, [dict(f, trace=f"{name}-{f['trace']}") if "trace" in f else f for f in findings])
    assert woven(con)[name]["priority"] == expected_priority(*weights)


def test_a_lesson_not_seen_for_a_week_weighs_half_and_nights_seen_count(tmp_path):
    con = database(tmp_path)
    given(con, "old", [{}, {}], run="r1")
    given(con, "kept", [{}, {}], run="r1")
    woven(con, NIGHT, "r1")
    later = NIGHT + dt.timedelta(days=7)
    given(con, "kept", [{"trace": "kept-t9", "at": AT + dt.timedelta(days=7)}], run="r2")
    got = woven(con, later, "r2")
    assert got["old"]["priority"] == expected_priority(2, 1, 1, 2, 2, 0, 1, 1, 1, since=7)
    assert got["kept"]["priority"] == expected_priority(2, 1, 1, 3, 3, 0, 1, 2, 1)


def test_the_finding_that_speaks_for_a_lesson(tmp_path):
    """The earliest finding that says what worked speaks for the lesson, before an earlier one that does not;
    among findings alike, the earliest in time, then the one whose trace starts on an earlier line, then
    the smaller content hash; a text the speaker lacks comes from the next finding in that order."""
    con = database(tmp_path)
    later = AT + dt.timedelta(hours=1)
    given(con, "worked", [{"evidence": "early, nothing worked", "at": AT},
                          {"evidence": "later, what worked", "at": later, "recovery": "`make`", "recovery_kind": "changed"},
                          {"evidence": "latest, what worked", "at": later + dt.timedelta(hours=1),
                           "recovery": "`make -j1`", "recovery_kind": "again"}])
    given(con, "by-time", [{"evidence": "second", "at": later, "line": 1}, {"evidence": "first", "at": AT, "line": 9}])
    given(con, "by-line", [{"evidence": "line 7", "line": 7, "hash": "a"}, {"evidence": "line 3", "line": 3, "hash": "b"}])
    given(con, "by-hash", [{"evidence": "hash b", "hash": "b"}, {"evidence": "hash a", "hash": "a"}])
    given(con, "filled", [{"evidence": "speaks", "lesson": None, "line": 1}, {"evidence": "fills", "lesson": "its rule", "line": 2}])
    got = woven(con)
    assert (got["worked"]["evidence"], got["worked"]["recovery"]) == ("later, what worked", "`make`")
    assert got["by-time"]["evidence"] == "first"
    assert got["by-line"]["evidence"] == "line 3"
    assert got["by-hash"]["evidence"] == "hash a"
    assert (got["filled"]["evidence"], got["filled"]["lesson"]) == ("speaks", "its rule")
