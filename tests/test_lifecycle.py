"""Lesson lifecycle over a simulated fortnight of nightly runs, and review decisions that survive them."""

import datetime as dt
import json
from pathlib import Path

import pytest

from flows.nightly import nightly
from lessonweaver import store
from lessonweaver.cli import main
from tests.conftest import write_traces

START = dt.date(2026, 11, 1)
DISCOUNT = "Applied the loyalty discount twice on one order"
ADDRESS = "Changed the delivery address without verifying the customer"


def correction(tid: str, text: str, task: str = "Close a ticket") -> dict:
    return {"trace_id": tid, "source": "support-bot", "task": task, "outcome": "success",
            "events": [{"id": "e1", "type": "user_message", "content": "please help"},
                       {"id": "e2", "type": "human_correction", "content": text}]}


def clean(tid: str) -> dict:
    return {"trace_id": tid, "source": "support-bot", "task": "Close a ticket", "outcome": "success",
            "events": [{"id": "e1", "type": "user_message", "content": "thanks"},
                       {"id": "e2", "type": "final_answer", "content": "Closed."}]}


def night_run(folder: Path, db: Path, day: int, traces: list[dict], **options) -> dict:
    night = START + dt.timedelta(days=day - 1)
    write_traces(folder / night.isoformat(), "traces.jsonl", traces)
    return nightly(paths=[str(folder / night.isoformat())], db=str(db), out=str(db.parent / "out"),
                   night=night.isoformat(), **options)


def statuses(db: Path) -> dict[str, str]:
    con = store.connect(str(db), read_only=True)
    try:
        return dict(con.execute("SELECT evidence, status FROM lessons").fetchall())
    finally:
        con.close()


def test_a_week_of_nights(prefect_server, tmp_path):
    """DISCOUNT: nights 1-2, gone 3-5, back on 6 and 7. ADDRESS: night 5 only. Resolved after 2 nights.
    A lesson is recurring only on a night that saw it again; a night that loaded other data (or nothing)
    leaves it open until its quiet period ends."""
    db = tmp_path / "lw.duckdb"
    plan = {1: [DISCOUNT], 2: [DISCOUNT], 3: [], 4: [], 5: [ADDRESS], 6: [DISCOUNT, DISCOUNT], 7: [DISCOUNT]}
    expected = {
        1: {DISCOUNT: "new"},
        2: {DISCOUNT: "recurring"},
        3: {DISCOUNT: "open"},
        4: {DISCOUNT: "resolved"},
        5: {DISCOUNT: "resolved", ADDRESS: "new"},
        6: {DISCOUNT: "regressed", ADDRESS: "open"},
        7: {DISCOUNT: "recurring", ADDRESS: "resolved"},
    }
    seen = {}
    for day, problems in plan.items():
        traces = [correction(f"d{day}-{i}", text) for i, text in enumerate(problems)] + [clean(f"d{day}-ok")]
        run = night_run(tmp_path / "in", db, day, traces, resolve_after=2)
        seen[day] = statuses(db)
        assert run.night == START + dt.timedelta(days=day - 1)
        assert run.lessons_new == sum(1 for s in expected[day].values() if s == "new")
    assert seen == expected

    con = store.connect(str(db), read_only=True)
    # Per-night counts: the trend of every lesson is a query.
    trend = con.execute("""
        SELECT s.night, sum(s.occurrences) FROM sightings s JOIN lessons l USING (lesson_id)
        WHERE l.evidence = ? GROUP BY s.night ORDER BY s.night""", [DISCOUNT]).fetchall()
    assert trend == [(START, 1), (START + dt.timedelta(days=1), 1),
                     (START + dt.timedelta(days=5), 2), (START + dt.timedelta(days=6), 1)]
    row = con.execute("SELECT first_night, last_night, nights_seen, occurrences FROM lessons WHERE evidence = ?",
                      [DISCOUNT]).fetchone()
    assert row == (START, START + dt.timedelta(days=6), 4, 5)
    assert [r[0] for r in con.execute("SELECT night FROM runs ORDER BY night").fetchall()] == [
        START + dt.timedelta(days=d) for d in range(7)]
    # Priority: the lesson seen tonight, five times, ranks above the one last seen two nights ago.
    ranked = [r[0] for r in con.execute("SELECT evidence FROM lessons ORDER BY priority DESC").fetchall()]
    assert ranked == [DISCOUNT, ADDRESS]
    con.close()

    report = (tmp_path / "out" / "lessons.md").read_text()
    jsonl = [json.loads(line) for line in (tmp_path / "out" / "lessons.jsonl").read_text().splitlines()]
    assert {j["status"] for j in jsonl} == {"recurring", "resolved"}
    assert all({"first_night", "last_night", "nights_seen", "priority", "review"} <= set(j) for j in jsonl)
    assert report.index("## Open lessons") < report.index("Applied the loyalty discount") < report.index("## Resolved")


def test_a_run_for_an_earlier_night_adds_history_without_turning_lessons_back(tmp_path, capsys):
    """Night 5 saw DISCOUNT; then night 2 is run late (a replay) with ADDRESS and DISCOUNT. Statuses stay as
    of night 5, and night 2 joins each lesson's history."""
    db = tmp_path / "lw.duckdb"
    for day, tid, text in ((5, "late-d", DISCOUNT), (2, "early-a", ADDRESS), (2, "early-d", DISCOUNT)):
        night = START + dt.timedelta(days=day - 1)
        write_traces(tmp_path / "in" / tid, "traces.jsonl", [correction(tid, text)])
        assert main(["run", str(tmp_path / "in" / tid), "--db", str(db), "--out", str(tmp_path / "out"),
                     "--night", night.isoformat(), "--no-prefect", "-q"]) == 0
    con = store.connect(str(db), read_only=True)
    rows = {r[0]: r[1:] for r in con.execute(
        "SELECT evidence, status, first_night, last_night, nights_seen FROM lessons").fetchall()}
    con.close()
    night2, night5 = START + dt.timedelta(days=1), START + dt.timedelta(days=4)
    # ADDRESS was not seen on night 5, the night statuses are as of: open, not recurring
    assert rows == {DISCOUNT: ("recurring", night2, night5, 2), ADDRESS: ("open", night2, night2, 1)}
    out = capsys.readouterr().out
    assert f"on night {night5}: 0 new, 0 regressed, 1 recurring, 1 open, 0 resolved" in out
    assert f"(this run counted for night {night2}, before the newest night run" in out


def test_priority_weighs_severity_frequency_and_recency(prefect_server, tmp_path):
    db = tmp_path / "lw.duckdb"
    retry = {"trace_id": "r1", "source": "support-bot", "task": "Close a ticket", "outcome": "success",
             "events": [{"id": "e1", "type": "tool_call", "content": "lookup()", "status": "failed"},
                        {"id": "e2", "type": "retry", "content": "retrying lookup"},
                        {"id": "e3", "type": "tool_call", "content": "lookup()", "status": "success"}]}
    night_run(tmp_path / "in", db, 1, [retry, correction("c1", DISCOUNT)])
    con = store.connect(str(db), read_only=True)
    order = con.execute("SELECT detector FROM lessons ORDER BY priority DESC").fetchall()
    con.close()
    assert order[0] == ("human_correction",)  # high severity beats medium at equal counts
    night_run(tmp_path / "in", db, 20, [retry | {"trace_id": f"r{i}"} for i in range(2, 6)])
    con = store.connect(str(db), read_only=True)
    order = con.execute("SELECT detector FROM lessons ORDER BY priority DESC").fetchall()
    con.close()
    assert order[0] == ("retry",)  # frequent and recent beats severe and three weeks old


def review(db: Path, *args: str) -> int:
    return main(["review", *args, "--db", str(db)])


def test_review_decisions_survive_reruns(prefect_server, tmp_path, capsys):
    db = tmp_path / "lw.duckdb"
    night_run(tmp_path / "in", db, 1, [correction("a1", DISCOUNT), correction("b1", ADDRESS)])
    con = store.connect(str(db), read_only=True)
    ids = dict(con.execute("SELECT evidence, lesson_id FROM lessons").fetchall())
    con.close()

    assert review(db, "reject", ids[DISCOUNT], "--note", "the billing team owns this") == 0
    assert review(db, "accept", ids[ADDRESS][:6], "--text", "Verify the customer before changing an address.") == 0
    assert review(db, "edit", ids[ADDRESS], "--text", "Always verify the customer before changing an address.") == 0
    capsys.readouterr()
    assert review(db) == 0  # nothing pending is left
    assert "(0 pending lessons" in capsys.readouterr().out

    # Two nights later both problems come again; the night-1 file is also rewritten, replacing its traces.
    write_traces(tmp_path / "in" / START.isoformat(), "traces.jsonl", [correction("a1", DISCOUNT + "!")])
    run = nightly(paths=[str(tmp_path / "in")], db=str(db), out=str(tmp_path / "out"),
                  night=(START + dt.timedelta(days=2)).isoformat())
    write_traces(tmp_path / "in" / "later", "t.jsonl", [correction("a2", DISCOUNT), correction("b2", ADDRESS)])
    run = nightly(paths=[str(tmp_path / "in")], db=str(db), out=str(tmp_path / "out"),
                  night=(START + dt.timedelta(days=2)).isoformat())
    assert run.lessons_new == 0
    con = store.connect(str(db), read_only=True)
    got = {i: (r, s, t) for i, r, s, t in con.execute("SELECT lesson_id, review, status, lesson FROM lessons").fetchall()}
    con.close()
    assert got[ids[DISCOUNT]][:2] == ("rejected", "recurring")
    assert got[ids[ADDRESS]] == ("accepted", "recurring", "Always verify the customer before changing an address.")

    report = (tmp_path / "out" / "lessons.md").read_text()
    assert ids[DISCOUNT] not in report and "1 rejected" in report
    assert "Always verify the customer before changing an address." in report

    capsys.readouterr()
    assert main(["export", "--db", str(db)]) == 0
    agents = capsys.readouterr().out
    assert f"Always verify the customer before changing an address. (`{ids[ADDRESS]}`" in agents
    assert ids[DISCOUNT] not in agents
    assert main(["export", "--db", str(db), "--format", "jsonl", "-o", str(tmp_path / "rules.jsonl")]) == 0
    rules = [json.loads(line) for line in (tmp_path / "rules.jsonl").read_text().splitlines()]
    assert [(r["lesson_id"], r["rule"]) for r in rules] == [
        (ids[ADDRESS], "Always verify the customer before changing an address.")]


@pytest.mark.parametrize("args, message", [
    (["accept", "Lnope"], "no lesson 'Lnope'"),
    (["edit", "L"], "the following arguments are required: --text"),
    (["accept", "L", "--text", "key AKIAQ3ZRT7WNB2KD5LMH here"], "sensitive data (aws_access_key)"),
    (["edit", "L", "--text", "   "], "the lesson text is empty"),
])
def test_review_refuses_clearly(prefect_server, tmp_path, capsys, args, message):
    db = tmp_path / "lw.duckdb"
    night_run(tmp_path / "in", db, 1, [correction("a1", DISCOUNT)])
    capsys.readouterr()
    assert review(db, *args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "AKIA" not in err
    con = store.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM reviews").fetchone()[0] == 0
    con.close()
