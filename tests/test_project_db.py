"""The database is found without repeating --db: --db, else LESSONWEAVER_DB, else the `db` of the nearest
lessonweaver.toml or pyproject.toml [tool.lessonweaver] (from the current folder upward), else
lessonweaver.duckdb. Every command uses the same choice, and the report's commands name the database
when it is not the default. A settings file that cannot be read is named, with the reason, in one line."""

import re
import subprocess
import sys

import pytest

from conftest import REPO, cli, copy_db
from lessonweaver.project import ENV_DB, SettingsFileError, database


def test_the_order_of_choice(tmp_path, monkeypatch):
    (tmp_path / "lessonweaver.toml").write_text('db = "from-file.duckdb"\n')
    monkeypatch.setenv(ENV_DB, "from-env.duckdb")
    assert database("given.duckdb", tmp_path).path == "given.duckdb"
    assert database(None, tmp_path).path == "from-env.duckdb"
    monkeypatch.delenv(ENV_DB)
    assert database(None, tmp_path).path == "from-file.duckdb"
    (tmp_path / "lessonweaver.toml").unlink()
    assert database(None, tmp_path).path == "lessonweaver.duckdb"


def test_the_nearest_file_upward_decides_and_its_paths_are_its_own(tmp_path):
    deep = tmp_path / "project" / "src" / "pkg"
    deep.mkdir(parents=True)
    (tmp_path / "lessonweaver.toml").write_text('db = "outer.duckdb"\n')
    (tmp_path / "project" / "pyproject.toml").write_text('[tool.lessonweaver]\ndb = "var/lw.duckdb"\n')
    (tmp_path / "project" / "src" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')  # no table: passed over
    chosen = database(None, deep)
    assert chosen.path == str(tmp_path / "project" / "var" / "lw.duckdb")  # not under the current folder: absolute
    assert chosen.source == str(tmp_path / "project" / "pyproject.toml")
    assert database(None, tmp_path / "project").path == "var/lw.duckdb"  # under it: relative, as typed
    (tmp_path / "project" / "lessonweaver.toml").write_text('db = "mine.duckdb"\n')  # beside pyproject.toml: first
    assert database(None, deep).path == str(tmp_path / "project" / "mine.duckdb")


def test_a_settings_file_without_db_keeps_the_default(tmp_path):
    (tmp_path / "lessonweaver.toml").write_text("")
    assert database(None, tmp_path).path == "lessonweaver.duckdb"


@pytest.mark.parametrize("text, reason", [
    ('db = "unclosed\n', "is not valid TOML"),
    ("db = 3\n", "db must be a path in quotes"),
    ('database = "x.duckdb"\n', "unknown setting database (known: db)"),
])
def test_a_bad_settings_file_is_named_with_the_reason(tmp_path, text, reason):
    (tmp_path / "lessonweaver.toml").write_text(text)
    with pytest.raises(SettingsFileError, match=re.escape(reason)) as caught:
        database(None, tmp_path / ".")
    assert str(tmp_path / "lessonweaver.toml") in str(caught.value)


def test_a_bad_settings_file_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.lessonweaver]\ndb = \n")
    done = subprocess.run([sys.executable, "-m", "lessonweaver.cli", "review"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"lessonweaver: error: {tmp_path / 'pyproject.toml'} is not valid TOML: ")


def test_an_explicit_db_does_not_read_the_settings_file(tmp_path, capsys, demo_db, monkeypatch):
    copy_db(demo_db, tmp_path / "lw.duckdb")
    (tmp_path / "lessonweaver.toml").write_text("not toml at all")
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, "rules", "--db", "lw.duckdb")
    assert code == 0 and out


def test_every_command_finds_the_projects_database(tmp_path, capsys, demo_db, monkeypatch):
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "var").mkdir()
    (project / "pyproject.toml").write_text('[tool.lessonweaver]\ndb = "var/lw.duckdb"\n')
    copy_db(demo_db, project / "var" / "lw.duckdb")
    monkeypatch.chdir(project / "docs")
    code, out, _ = cli(capsys, "review", "--limit", "1")
    assert code == 0
    lesson_id = out.split()[0]
    assert out.rstrip().endswith(f"accept, reject or edit with: lessonweaver review accept|reject|edit ID "
                                 f"--db {project / 'var' / 'lw.duckdb'})")
    assert cli(capsys, "review", "reject", lesson_id)[0] == 0
    code, out, _ = cli(capsys, "sql", "SELECT decision FROM reviews", "--format", "csv")
    assert (code, out) == (0, "decision\nrejected\n")
    code, out, _ = cli(capsys, "render", "--out", str(tmp_path / "reports"))
    assert code == 0 and f"from {project / 'var' / 'lw.duckdb'} as it stands now" in out
    assert sorted(p.name for p in project.iterdir()) == ["docs", "pyproject.toml", "var"]  # no database made here


def test_the_variable_names_the_database_for_every_command(tmp_path, capsys, demo_db, monkeypatch):
    (tmp_path / "kept").mkdir()
    copy_db(demo_db, tmp_path / "kept" / "lw.duckdb")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV_DB, str(tmp_path / "kept" / "lw.duckdb"))
    code, out, _ = cli(capsys, "sql", "SELECT count(*) > 0 AS has_runs FROM runs", "--format", "csv")
    assert (code, out) == (0, "has_runs\ntrue\n")
    monkeypatch.setenv(ENV_DB, str(tmp_path / "missing.duckdb"))
    code, _, err = cli(capsys, "rules")
    assert code == 2 and f"no database at {tmp_path / 'missing.duckdb'}" in err


def test_a_run_in_a_project_writes_its_database_and_the_reports_name_it(tmp_path, capsys, monkeypatch):
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "lessonweaver.toml").write_text('db = "store/lw.duckdb"\n')
    monkeypatch.chdir(project)
    code, out, _ = cli(capsys, "run", str(REPO / "data"), "--out", "reports", "--no-prefect", "-q")
    assert code == 0 and "database:   store/lw.duckdb" in out
    assert (project / "store" / "lw.duckdb").is_file() and not (project / "lessonweaver.duckdb").exists()
    html = (project / "reports" / "lessons.html").read_text()
    md = (project / "reports" / "lessons.md").read_text()
    assert "<code>lessonweaver review --db store/lw.duckdb show L" in html
    assert "`lessonweaver review --db store/lw.duckdb show L" in md
    assert ".writing" not in html + md  # the database as published, not the copy the run wrote
    monkeypatch.chdir(project / "sub")
    code, out, _ = cli(capsys, "run", str(REPO / "data"), "--out", str(project / "reports"), "--no-prefect", "-q")
    assert code == 0 and f"database:   {project / 'store' / 'lw.duckdb'}" in out
    assert "nothing new" in out


def test_the_default_database_is_not_named_in_the_reports(tmp_path, capsys, demo_db, monkeypatch):
    copy_db(demo_db, tmp_path / "lessonweaver.duckdb")
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "render", "--out", "reports")[0] == 0
    md = (tmp_path / "reports" / "lessons.md").read_text()
    assert "`lessonweaver review show L" in md and "--db" not in md
