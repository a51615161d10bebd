"""`lessonweaver render`: the reports from the database alone, on a real database (the demo data run by
the pipeline): review decisions show without a run, nothing is read or written but the reports, and the
reports pass the audit a run's pass or are withheld."""

import shutil
from pathlib import Path

import pytest

from conftest import cli, copy_db, query_db
from lessonweaver import store

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # a GitHub token's shape, made up


@pytest.fixture
def copied(demo_db: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the demo database and of the reports its run published."""
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    shutil.copytree(demo_db.parent / "reports", tmp_path / "reports")
    return db, tmp_path / "reports"


def test_render_from_an_unchanged_database_gives_the_runs_reports(copied, demo_db, capsys):
    db, out = copied
    # the same reports, but for the database they name in their commands: the copy, not the run's
    published = {p.name: p.read_text().replace(str(demo_db), str(db)) for p in out.iterdir()}
    before = db.read_bytes()
    code, printed, err = cli(capsys, "render", "--db", str(db), "--out", str(out))
    run_id, night = query_db(db, "SELECT run_id, night FROM runs")[0]
    assert (code, err) == (0, "")
    assert printed.splitlines() == [
        f"render: the reports of run {run_id} (night {night}) from {db} as it stands now, audited: clean",
        *(f"report:     {out / name}" for name in sorted(published))]
    assert {p.name: p.read_text() for p in out.iterdir()} == published
    assert db.read_bytes() == before  # read-only: the database file is untouched


def test_review_decisions_show_without_a_run(copied, capsys):
    db, out = copied
    rejected, edited = (r[0] for r in query_db(db, "SELECT lesson_id FROM lessons ORDER BY priority DESC, lesson_id LIMIT 2"))
    text = "Read the current refund policy before quoting a refund window."
    assert cli(capsys, "review", "--db", str(db), "reject", rejected)[0] == 0
    assert cli(capsys, "review", "--db", str(db), "accept", edited, "--text", text)[0] == 0
    assert rejected in (out / "lessons.md").read_text()  # the run's report, from before the decisions

    assert cli(capsys, "render", "--db", str(db), "--out", str(out))[0] == 0
    report = (out / "lessons.md").read_text()
    assert rejected not in report and "Reviewed: 1 accepted, 1 rejected" in report
    assert text in report and "review accepted" in report
    jsonl = (out / "lessons.jsonl").read_text()
    assert rejected not in jsonl and text in jsonl
    assert rejected not in (out / "lessons.html").read_text()


def test_a_report_that_fails_the_audit_is_not_published(copied, tmp_path: Path, capsys):
    db, out = copied
    published = {p.name: p.read_bytes() for p in out.iterdir()}
    mine = tmp_path / "templates"
    mine.mkdir()
    (mine / "lessons.md.j2").write_text(f"# Lessons\n\nThe deploy key is {TOKEN}.\n", encoding="utf-8")
    code, printed, err = cli(capsys, "render", "--db", str(db), "--out", str(out), "--templates", str(mine))
    assert (code, printed) == (1, "")
    assert err.splitlines()[-1] == "lessonweaver: the audit found 1 problem; the reports were not published"
    assert "lessons.md: secret:github_token 'ghp…' (40 chars)" in err and TOKEN not in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == published
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_render_reads_the_published_database_while_a_run_writes(copied, capsys):
    """A run works on a copy: render reads the database as it was published, whole."""
    db, out = copied
    shown = query_db(db, "SELECT count(*) FROM lessons WHERE review <> 'rejected'")[0][0]
    with store.writing(str(db)) as work:
        con = store.connect(work)
        con.execute("DELETE FROM lessons")
        con.close()
        code, _, err = cli(capsys, "render", "--db", str(db), "--out", str(out))
    assert (code, err) == (0, "")
    assert len((out / "lessons.jsonl").read_text().splitlines()) == shown > 0


@pytest.mark.parametrize("argv, message", [
    (["--templates", "/no/such/folder"], "template folder does not exist: /no/such/folder"),
])
def test_render_refuses_clearly(copied, capsys, argv, message):
    db, out = copied
    code, printed, err = cli(capsys, "render", "--db", str(db), "--out", str(out), *argv)
    assert (code, printed, err) == (2, "", f"lessonweaver: error: {message}\n")


def test_a_database_without_a_run_has_nothing_to_render(tmp_path: Path, capsys):
    db = tmp_path / "empty.duckdb"
    store.connect(str(db)).close()
    code, printed, err = cli(capsys, "render", "--db", str(db), "--out", str(tmp_path / "out"))
    assert (code, printed) == (2, "")
    assert err == "lessonweaver: error: the database has no run yet: lessonweaver run first\n"
    code, _, err = cli(capsys, "render", "--db", str(tmp_path / "missing.duckdb"))
    assert code == 2 and err.startswith(f"lessonweaver: error: no database at {tmp_path / 'missing.duckdb'}")
