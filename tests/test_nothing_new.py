"""A run with nothing to read keeps the lessons and reports in place (`nothing new tonight`), unless what
they were made from changed: a review, the night, a detector, a template, or the reports themselves."""

import shutil
from pathlib import Path

import pytest

from flows.nightly import nightly
from lessonweaver.cli import main
from tests.conftest import query_db, write_traces

CORRECTION = {"trace_id": "t1", "source": "support-bot", "task": "Close a ticket", "outcome": "success",
              "events": [{"id": "e1", "type": "user_message", "content": "please help"},
                         {"id": "e2", "type": "human_correction", "content": "Refund before closing the ticket"}]}


def run(tmp_path: Path, capsys, *extra: str) -> str:
    capsys.readouterr()
    assert main(["run", str(tmp_path / "in"), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"),
                 "--no-prefect", "-q", "--night", "2026-11-02", *extra]) == 0
    return capsys.readouterr().out


def report_stamp(tmp_path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out").iterdir()}


@pytest.fixture
def first_run(tmp_path: Path, capsys) -> Path:
    write_traces(tmp_path / "in", "traces.jsonl", [CORRECTION])
    assert "nothing new tonight" not in run(tmp_path, capsys)
    return tmp_path


def test_a_rerun_that_reads_nothing_keeps_lessons_and_reports(first_run: Path, capsys):
    before = report_stamp(first_run)
    out = run(first_run, capsys)
    assert "nothing new tonight" in out
    assert "report:" not in out
    assert "lessons:    1 (0 first seen in this run); on night 2026-11-02: 1 new" in out
    assert report_stamp(first_run) == before
    runs = query_db(first_run / "lw.duckdb", "SELECT status, files_read, lessons_total FROM runs ORDER BY started_at")
    assert runs == [("completed", 1, 1), ("completed", 0, 1)]


@pytest.mark.parametrize("change", ["review", "night", "detector", "template", "report deleted"])
def test_a_change_since_the_last_render_renders_again(first_run: Path, capsys, change: str):
    extra: list[str] = []
    if change == "review":
        lesson = query_db(first_run / "lw.duckdb", "SELECT lesson_id FROM lessons")[0][0]
        assert main(["review", "--db", str(first_run / "lw.duckdb"), "accept", lesson]) == 0
    elif change == "night":
        extra = ["--night", "2026-11-03"]
    elif change == "detector":
        mine = first_run / "mine" / "always"
        mine.mkdir(parents=True)
        (mine / "always.sql").write_text("-- id: always\n-- title: Always\n-- severity: low\n-- description: x\n"
                                         "SELECT trace_id, 'x' AS evidence FROM traces WHERE false\n")
        extra = ["--detectors", str(first_run / "mine")]
    elif change == "template":
        shutil.copytree(Path(__file__).parents[1] / "templates", first_run / "tpl")
        (first_run / "tpl" / "lessons.md.j2").write_text("# mine\n")
        extra = ["--templates", str(first_run / "tpl")]
    else:
        (first_run / "out" / "lessons.md").unlink()
    out = run(first_run, capsys, *extra)
    assert "nothing new tonight" not in out
    assert "report:" in out and (first_run / "out" / "lessons.md").exists()
    if change == "review":
        assert "accepted" in (first_run / "out" / "lessons.jsonl").read_text()
    # and once rendered, the same run again has nothing new
    assert "nothing new tonight" in run(first_run, capsys, *extra)


def test_the_flow_keeps_them_too(prefect_server, tmp_path: Path):
    write_traces(tmp_path / "in", "traces.jsonl", [CORRECTION])
    options = dict(paths=[str(tmp_path / "in")], db=str(tmp_path / "lw.duckdb"), out=str(tmp_path / "out"))
    assert not nightly(**options).nothing_new
    again = nightly(**options)
    assert again.nothing_new and again.status == "completed" and again.written == []


def test_a_new_night_with_nothing_to_read_says_so_in_the_reports(first_run: Path, capsys):
    """The night moved on, so lessons are woven and rendered again; the reports say nothing new came in
    instead of showing zero records beside lessons that read as new."""
    assert "nothing new tonight" not in run(first_run, capsys, "--night", "2026-11-03")
    md = (first_run / "out" / "lessons.md").read_text()
    html = (first_run / "out" / "lessons.html").read_text()
    assert md.startswith("# Lessons from agent traces\n\nNothing new tonight")
    assert "Night 2026-11-03: **0 new**, **0 regressed**, 0 recurring (seen again tonight), 1 open (not seen tonight)" in md
    assert 'id="nothing-new"' in html and "night of 2026-11-03" in html


def test_a_replayed_earlier_night_reports_as_of_the_newest(first_run: Path, capsys):
    write_traces(first_run / "early", "traces.jsonl", [CORRECTION | {"trace_id": "t0"}])
    capsys.readouterr()
    assert main(["run", str(first_run / "early"), "--db", str(first_run / "lw.duckdb"), "--out",
                 str(first_run / "out"), "--no-prefect", "-q", "--night", "2026-10-30"]) == 0
    md = (first_run / "out" / "lessons.md").read_text()
    assert "Night 2026-11-02: **0 new**" in md and "Nothing new tonight" not in md


def test_render_after_a_run_with_nothing_new_shows_the_nights_counts(first_run: Path, capsys):
    """The latest run read nothing, but the night's first run loaded the trace whose lesson is new: the
    reports count what the night brought, name its runs, and never say nothing came in above a new lesson."""
    assert "nothing new tonight" in run(first_run, capsys)
    assert main(["render", "--db", str(first_run / "lw.duckdb")]) == 0
    md = (first_run / "out" / "lessons.md").read_text()
    html = (first_run / "out" / "lessons.html").read_text()
    assert "Nothing new tonight" not in md and 'id="nothing-new"' not in html
    latest = query_db(first_run / "lw.duckdb", "SELECT run_id FROM runs ORDER BY started_at DESC LIMIT 1")[0][0]
    assert f"Night 2026-11-02: 2 runs (the latest `{latest}`," in md
    assert "1 record: 1 loaded, 0 quarantined, 0 rejected" in md and "1 detection, 1 new lesson" in md
    assert "Counts of the night of 2026-11-02: 2 runs counted for it" in html
    assert '<div class="n">1</div><div class="k">records loaded</div>' in html
