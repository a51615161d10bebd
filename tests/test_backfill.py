"""Backfill: one nightly run per date folder, oldest first, with lifecycles as if it had run every night."""

import datetime as dt
from pathlib import Path

import pytest

from conftest import query_db, write_traces
from flows.backfill import backfill
from lessonweaver.backfill import night_folders
from lessonweaver.cli import main

WEEK = [dt.date(2026, 11, 1) + dt.timedelta(days=i) for i in range(7)]

# Which problems happen on which day of the week (1-based).
PROBLEMS = {
    "Merge a branch": {1, 2},          # seen twice, then gone: resolved
    "Answer a refund request": {5, 7},  # first seen on day 5, again on day 7: recurring
    "Book a meeting room": {1, 7},      # gone from day 2 to 6, back on day 7: regressed
    "Rotate a log file": {7},           # first seen on the last night: new
}
WORDS = {"Merge a branch": "rebase onto main before merging",
         "Answer a refund request": "check the order status before promising a refund",
         "Book a meeting room": "confirm the attendee count before booking",
         "Rotate a log file": "compress the old file instead of deleting it"}


def corrected(tid: str, task: str) -> dict:
    return {"trace_id": tid, "source": "ops-agent", "task": task, "outcome": "corrected_by_human", "events": [
        {"id": "e1", "type": "assistant_message", "content": "Done."},
        {"id": "e2", "type": "human_correction", "content": f"Next time {WORDS[task]}."}]}


def clean(tid: str) -> dict:
    return {"trace_id": tid, "source": "ops-agent", "task": "Say hello", "outcome": "success", "events": [
        {"id": "e1", "type": "user_message", "content": "hello"},
        {"id": "e2", "type": "final_answer", "content": "hello to you"}]}


@pytest.fixture
def week(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    for day, night in enumerate(WEEK, 1):
        traces = [clean(f"{night}-clean")]
        traces += [corrected(f"{night}-{task.split()[0].lower()}", task)
                   for task, days in PROBLEMS.items() if day in days]
        write_traces(root / night.isoformat(), "traces.jsonl", traces)
    # Not date folders: left alone. Their traces would make lessons of their own if they were read.
    write_traces(root / "2026-13-01", "traces.jsonl", [corrected("bad-month", "Merge a branch") | {"task": "Not a night"}])
    write_traces(root / "scratch", "traces.jsonl", [corrected("scratch", "Merge a branch") | {"task": "Scratch"}])
    (root / "README.md").write_text("one folder per night\n")
    return root


def test_date_folders_are_found_in_order_and_others_ignored(week: Path):
    nights, ignored = night_folders(str(week))
    assert [n for n, _ in nights] == WEEK
    assert all(Path(p).is_absolute() and Path(p).name == n.isoformat() for n, p in nights)
    assert ignored == ["2026-13-01", "README.md", "scratch"]
    nights, _ = night_folders(str(week), "2026-11-03", "2026-11-05")
    assert [n.isoformat() for n, _ in nights] == ["2026-11-03", "2026-11-04", "2026-11-05"]


@pytest.mark.parametrize("args, message", [
    (["--from", "2026-11-5"], "--from must be a date as YYYY-MM-DD, not '2026-11-5'"),
    (["--to", "2026-02-30"], "--to must be a date as YYYY-MM-DD, not '2026-02-30'"),
    (["--from", "2026-11-05", "--to", "2026-11-01"], "--from 2026-11-05 is after --to 2026-11-01"),
    (["--from", "2026-12-01"], "no date folders in {root} between 2026-12-01 and the last (it has 2026-11-01 to 2026-11-07)"),
])
def test_bad_options_are_one_line(week: Path, tmp_path: Path, capsys, args: list[str], message: str):
    assert main(["backfill", str(week), "--db", str(tmp_path / "lw.duckdb"), *args]) == 2
    err = capsys.readouterr().err
    assert err == f"lessonweaver: error: {message.format(root=week)}\n"


def test_a_root_without_date_folders_is_one_line(tmp_path: Path, capsys):
    (tmp_path / "misc").mkdir()
    assert main(["backfill", str(tmp_path), "--db", str(tmp_path / "lw.duckdb")]) == 2
    assert capsys.readouterr().err == f"lessonweaver: error: no date folders (YYYY-MM-DD) in {tmp_path}\n"


@pytest.mark.slow
def test_a_backfilled_week_has_the_lifecycle_of_nightly_runs(prefect_server, week: Path, tmp_path: Path, capsys):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    assert main(["backfill", str(week), "--db", str(db), "--out", str(out), "--resolve-after", "2", "-q"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("night 2026-11-") == 7 and "backfill:   7 nights, 2026-11-01 to 2026-11-07" in printed

    assert query_db(db, "SELECT night, status, inputs FROM runs ORDER BY started_at") == [
        (n, "completed", [str((week / n.isoformat()).resolve())]) for n in WEEK]
    lessons = dict(query_db(db, "SELECT task, status FROM lessons"))
    assert lessons == {"Merge a branch": "resolved", "Answer a refund request": "recurring",
                       "Book a meeting room": "regressed", "Rotate a log file": "new"}
    nights = {task: (first, last, seen) for task, first, last, seen in
              query_db(db, "SELECT task, first_night, last_night, nights_seen FROM lessons")}
    assert nights["Merge a branch"] == (WEEK[0], WEEK[1], 2)
    assert nights["Answer a refund request"] == (WEEK[4], WEEK[6], 2)
    assert nights["Book a meeting room"] == (WEEK[0], WEEK[6], 2)
    # Each night's sightings are recorded under that night.
    assert query_db(db, """SELECT s.night, l.task FROM sightings s JOIN lessons l USING (lesson_id)
                        ORDER BY s.night, l.task""") == sorted(
        (WEEK[day - 1], task) for task, days in PROBLEMS.items() for day in days)
    assert "2026-11-07" in (out / "lessons.md").read_text(encoding="utf-8")


def test_from_and_to_pick_the_nights(prefect_server, week: Path, tmp_path: Path):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    runs = backfill(root=str(week), start="2026-11-02", end="2026-11-03", db=str(db), out=str(out), resolve_after=2)
    assert [r.night for r in runs] == WEEK[1:3]
    assert query_db(db, "SELECT night FROM runs ORDER BY started_at") == [(WEEK[1],), (WEEK[2],)]
    # Seen on night 2 (its first night here), not on night 3: open, one night short of resolved.
    assert query_db(db, "SELECT task, status FROM lessons") == [("Merge a branch", "open")]
