"""`lessonweaver redetect`: the detectors again over the traces already stored, through the CLI, on real
databases made by runs over the demo data. A detector of one's own that finds nothing is fixed: the next
run says so and points to redetect, which finds what it missed in history, and lessons, sightings and
the report follow; the detector's fingerprint is then up to date, and the warning goes."""

import shutil
from pathlib import Path

import pytest

from conftest import REPO, cli, copy_db, query_db, run_state
from lessonweaver import store

HEADER = """-- id: refund_promise
-- title: The agent promised a refund window
-- severity: high
-- description: An assistant message that promises a 30-day window; the policy allows 14 days.
-- lesson: Look the refund window up before promising one: {evidence}
"""
BROKEN = HEADER + "SELECT trace_id, event_id, seq, content AS evidence FROM events WHERE content ILIKE '%30 day windw%'\n"
FIXED = HEADER + ("SELECT trace_id, event_id, seq, content AS evidence FROM events\n"
                  "WHERE type = 'assistant_message' AND content ILIKE '%30-day window%'\n")
PROMISED = ("sup-0001", "sup-0002", "sup-0003", "sup-0004", "sup-0005")


def run(capsys, db: Path, night: str, *extra: str) -> tuple[int, str, str]:
    return cli(capsys, "run", str(REPO / "data"), "--db", str(db), "--out", str(db.parent / "reports"),
               "--no-prefect", "-q", "--night", night, *extra)


def detections(db: Path) -> dict[str, int]:
    return dict(query_db(db, "SELECT detector, count(*) FROM detections GROUP BY detector"))


def test_a_fixed_detector_sees_history_and_lessons_follow(tmp_path: Path, capsys):
    mine, db = tmp_path / "mine", tmp_path / "lw.duckdb"
    mine.mkdir()
    (mine / "refund_promise.sql").write_text(BROKEN, encoding="utf-8")
    code, out, err = run(capsys, db, "2026-11-28", "--detectors", str(mine))
    assert (code, err) == (0, "") and "refund_promise" not in detections(db)  # it finds nothing

    (mine / "refund_promise.sql").write_text(FIXED, encoding="utf-8")
    code, out, err = run(capsys, db, "2026-11-29", "--detectors", str(mine))  # every file unchanged: skipped
    advice = ("1 detector changed or added since the stored traces were detected (refund_promise (changed)): "
              "this run used the new version on its own traces only; for every stored trace, run: "
              f"lessonweaver redetect --db {db} --detectors {mine} "
              "--detector refund_promise")
    assert code == 0 and err == f"lessonweaver: warning: {advice}\n"
    assert f"  {advice}" in out.splitlines()
    others = detections(db)
    lessons_before = query_db(db, "SELECT count(*) FROM lessons")[0][0]

    code, out, err = cli(capsys, "redetect", "--db", str(db),  # renders where the runs published
                         "--detectors", str(mine), "--detector", "refund_promise")
    assert (code, err) == (0, "")
    total = sum(others.values())
    assert out.splitlines()[:2] == [
        f"redetect: 1 detector over 71 stored traces; detections {total} -> {total + 5} (refund_promise 0 -> 5)",
        f"lessons:  {lessons_before} -> {lessons_before + 1} (1 added, 0 gone)"]
    assert detections(db) == {**others, "refund_promise": 5}  # the other detectors' detections untouched
    # The findings count for the night their traces came in: the lesson was first and last seen then.
    assert query_db(db, """SELECT trace_id, run_id = (SELECT run_id FROM runs WHERE night = '2026-11-28')
                           FROM detections WHERE detector = 'refund_promise' ORDER BY 1""") == [
        (t, True) for t in PROMISED]
    (lesson,) = query_db(db, """SELECT lesson_id, status, occurrences, first_night::VARCHAR, last_night::VARCHAR,
                                example_trace_ids FROM lessons WHERE detector = 'refund_promise'""")
    # not seen on night 11-29, the night statuses are as of: open
    assert lesson[1:] == ("open", 5, "2026-11-28", "2026-11-28", list(PROMISED))
    assert query_db(db, "SELECT night::VARCHAR, occurrences FROM lesson_trend WHERE lesson_id = ?", [lesson[0]]) == [
        ("2026-11-28", 5)]
    report = (db.parent / "reports" / "lessons.md").read_text()
    assert "The agent promised a refund window: Yes, you have a full 30-day window" in report
    assert lesson[0] in report

    code, out, err = run(capsys, db, "2026-11-30", "--detectors", str(mine))
    assert (code, err) == (0, "") and "redetect" not in out  # up to date: no warning


def test_a_detector_added_once_traces_are_stored_is_pointed_out(demo_db: Path, tmp_path: Path, capsys):
    db, mine = copy_db(demo_db, tmp_path / "lw.duckdb"), tmp_path / "mine"
    mine.mkdir()
    (mine / "refund_promise.sql").write_text(FIXED, encoding="utf-8")
    code, out, err = run(capsys, db, "2026-11-30", "--detectors", str(mine))
    assert code == 0 and "(refund_promise (new))" in err and err.count("\n") == 1
    assert "refund_promise" not in detections(db)  # no file was new: it ran over nothing
    # Without --detectors the run does not use it, and says nothing about it.
    assert run(capsys, db, "2026-11-30")[2] == ""


def test_redetecting_with_unchanged_detectors_changes_nothing(demo_db: Path, tmp_path: Path, capsys):
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    shutil.copytree(demo_db.parent / "reports", tmp_path / "reports")
    before, sightings = run_state(db, tmp_path / "reports"), query_db(db, "SELECT * FROM sightings ORDER BY ALL")
    code, out, err = cli(capsys, "redetect", "--db", str(db), "--out", str(tmp_path / "reports"))
    n = query_db(db, "SELECT count(*) FROM detections")[0][0]
    assert (code, err) == (0, "")
    shipped = len(list((REPO / "sql" / "detectors").iterdir()))
    assert out.splitlines()[0] == (f"redetect: {shipped} detectors over 71 stored traces; detections {n} -> {n} "
                                   "(no detector's changed)")
    assert run_state(db, tmp_path / "reports") == before
    assert query_db(db, "SELECT * FROM sightings ORDER BY ALL") == sightings


def test_traces_whose_events_were_dropped_keep_their_detections(demo_db: Path, tmp_path: Path, capsys):
    """--retain-days drops old traces' events: the detectors cannot see them again, so what was found stays."""
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    assert run(capsys, db, "2026-11-30", "--retain-days", "1")[0] == 0
    dropped = query_db(db, "SELECT count(*) FROM detections WHERE trace_id NOT IN (SELECT trace_id FROM events)")[0][0]
    assert dropped > 0
    before = detections(db)
    code, out, _ = cli(capsys, "redetect", "--db", str(db), "--out", str(tmp_path / "reports"))
    assert code == 0 and f"  {dropped} detections kept: their traces' events are no longer stored (--retain-days)" in out
    assert detections(db) == before


def test_a_failing_detector_keeps_its_detections_and_says_why(demo_db: Path, tmp_path: Path, capsys):
    db, mine = copy_db(demo_db, tmp_path / "lw.duckdb"), tmp_path / "mine"
    mine.mkdir()
    (mine / "refund_promise.sql").write_text(HEADER + "SELECT trace_id FROM events\n", encoding="utf-8")
    before = detections(db)
    code, out, err = cli(capsys, "redetect", "--db", str(db), "--out", str(tmp_path / "reports"),
                         "--detectors", str(mine), "--detector", "refund_promise", "--detector", "retry")
    assert (code, err) == (1, "")
    assert out.splitlines()[1] == (f"  refund_promise         FAILED, its detections kept: {mine / 'refund_promise.sql'}: "
                                   "the query must return column evidence")
    assert detections(db) == before
    assert query_db(db, "SELECT count(*) FROM detector_versions WHERE detector = 'refund_promise'") == [(0,)]


def test_a_new_finding_that_looks_sensitive_is_held_back(demo_db: Path, tmp_path: Path, capsys):
    db, mine = copy_db(demo_db, tmp_path / "lw.duckdb"), tmp_path / "mine"
    mine.mkdir()
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    (mine / "refund_promise.sql").write_text(
        HEADER + f"SELECT trace_id, 'key ' || '{token[:10]}' || '{token[10:]}' AS evidence FROM traces WHERE trace_id = 'sup-0001'\n"
        "UNION ALL SELECT trace_id, 'no key here' FROM traces WHERE trace_id = 'sup-0002'\n", encoding="utf-8")
    code, out, _ = cli(capsys, "redetect", "--db", str(db), "--out", str(tmp_path / "reports"),
                       "--detectors", str(mine), "--detector", "refund_promise")
    assert code == 0 and "  1 new detection held back: the text looks like it holds sensitive data" in out
    assert query_db(db, "SELECT trace_id FROM detections WHERE detector = 'refund_promise'") == [("sup-0002",)]
    assert not any(token.encode() in p.read_bytes() for p in [db, *(tmp_path / "reports").iterdir()])


@pytest.mark.parametrize("argv, message", [
    (["--detector", "nope"], "no detector 'nope' (list them with: lessonweaver detectors; your own need --detectors DIR)"),
    (["--detectors", "/no/such/folder"], "detector folder does not exist: /no/such/folder"),
])
def test_redetect_refuses_clearly(demo_db: Path, tmp_path: Path, capsys, argv, message):
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    before = db.read_bytes()
    code, out, err = cli(capsys, "redetect", "--db", str(db), *argv)
    assert (code, out, err) == (2, "", f"lessonweaver: error: {message}\n")
    assert db.read_bytes() == before


def test_redetect_refuses_while_a_run_writes(demo_db: Path, tmp_path: Path, capsys):
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    with store.writing(str(db)):
        code, out, err = cli(capsys, "redetect", "--db", str(db), "--out", str(tmp_path / "reports"))
    assert (code, out) == (2, "")
    assert err == f"lessonweaver: error: {db} is in use by another lessonweaver run; try again when it has finished\n"


def test_a_lesson_whose_detections_vanish_leaves_and_its_review_waits(tmp_path: Path, capsys):
    """As when forget removes a lesson's traces: the weave rebuilds lessons from detections, so a lesson
    with none left is gone from `lessons` (and its sightings with it), while the reviewer's decision stays
    in `reviews` and holds again when the same problem is found again (the lesson keeps its id)."""
    mine, db = tmp_path / "mine", tmp_path / "lw.duckdb"
    mine.mkdir()
    (mine / "refund_promise.sql").write_text(FIXED, encoding="utf-8")
    assert run(capsys, db, "2026-11-28", "--detectors", str(mine))[0] == 0
    (lesson,) = query_db(db, "SELECT lesson_id FROM lessons WHERE detector = 'refund_promise'")[0]
    assert cli(capsys, "review", "--db", str(db), "accept", lesson, "--note", "true, and costly")[0] == 0
    redetect = ["redetect", "--db", str(db), "--out", str(tmp_path / "reports"), "--detectors", str(mine),
                "--detector", "refund_promise"]

    (mine / "refund_promise.sql").write_text(BROKEN, encoding="utf-8")
    code, out, _ = cli(capsys, *redetect)
    total = query_db(db, "SELECT count(*) FROM lessons")[0][0]
    assert code == 0 and out.splitlines()[1] == f"lessons:  {total + 1} -> {total} (0 added, 1 gone)"
    assert query_db(db, "SELECT count(*) FROM lessons WHERE lesson_id = ?", [lesson]) == [(0,)]
    assert query_db(db, "SELECT count(*) FROM sightings WHERE lesson_id = ?", [lesson]) == [(0,)]
    assert query_db(db, "SELECT decision, note FROM reviews WHERE lesson_id = ?", [lesson]) == [
        ("accepted", "true, and costly")]
    assert lesson not in (tmp_path / "reports" / "lessons.md").read_text()

    (mine / "refund_promise.sql").write_text(FIXED, encoding="utf-8")
    assert cli(capsys, *redetect)[0] == 0
    assert query_db(db, "SELECT review, occurrences FROM lessons WHERE lesson_id = ?", [lesson]) == [("accepted", 5)]
