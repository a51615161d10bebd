"""`run` over a folder with no trace file (empty, or other files only) reads nothing and says so: on stdout
and stderr, naming the folder and the names that are read; it makes no database or report, leaves an
existing one as it was, and exits 2, as for a path that does not exist. Among other inputs, such a folder
is named in the summary and a warning, and the run goes on."""

import hashlib
import shutil

from conftest import REPO, cli

NAMES = ".json, .jsonl, .ndjson, .traj, or those .gz"


def files_and_bytes(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "folder"
            for p in sorted(folder.rglob("*"))}


def test_an_empty_folder_makes_nothing_and_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    code, out, err = cli(capsys, "run", "empty", "--db", "lw.duckdb", "--out", "reports", "--no-prefect")
    assert code == 2
    assert out == ("run: nothing read: no trace file under empty; the database lw.duckdb was not made, "
                   "and no report was written\n")
    assert err == (f"lessonweaver: error: no trace file under empty: nothing is there; lessonweaver reads files named "
                   f"{NAMES} in the folders it is given, and any file named on the command line\n")
    assert [p.name for p in tmp_path.iterdir()] == ["empty"]


def test_a_folder_of_other_files_names_them(tmp_path, capsys):
    folder = tmp_path / "exports"
    (folder / "old").mkdir(parents=True)
    (folder / "notes.txt").write_text("not a trace\n")
    (folder / "old" / "calls.csv").write_text("a,b\n")
    code, out, err = cli(capsys, "run", str(folder), "--db", str(tmp_path / "lw.duckdb"), "--out",
                         str(tmp_path / "reports"), "--no-prefect")
    assert code == 2 and out.startswith(f"run: nothing read: no trace file under {folder};")
    (line,) = err.splitlines()
    assert line.startswith(f"lessonweaver: error: no trace file under {folder}: 2 other files there are not read "
                           f"({folder}/notes.txt, {folder}/old/calls.csv); lessonweaver reads files named {NAMES}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exports"]


def test_an_existing_database_and_its_reports_are_left_as_they_were(tmp_path, capsys):
    db, out_dir, empty = tmp_path / "lw.duckdb", tmp_path / "reports", tmp_path / "empty"
    empty.mkdir()
    assert cli(capsys, "run", str(REPO / "data" / "support-bot"), "--db", str(db), "--out", str(out_dir),
               "--no-prefect", "-q")[0] == 0
    before = files_and_bytes(tmp_path)
    code, out, err = cli(capsys, "run", str(empty), "--db", str(db), "--out", str(out_dir), "--no-prefect")
    assert code == 2 and f"the database {db} is left as it was" in out
    assert err.startswith(f"lessonweaver: error: no trace file under {empty}: ")
    assert files_and_bytes(tmp_path) == before


def test_an_empty_folder_among_others_is_named_and_the_run_goes_on(tmp_path, capsys):
    empty, inputs = tmp_path / "empty", tmp_path / "in"
    empty.mkdir()
    shutil.copytree(REPO / "data" / "support-bot", inputs)
    code, out, err = cli(capsys, "run", str(empty), str(inputs), "--db", str(tmp_path / "lw.duckdb"), "--out",
                         str(tmp_path / "reports"), "--no-prefect", "-q")
    assert code == 0
    assert f"\n  no trace file under {empty} (trace files are named {NAMES}): nothing read there\n" in out
    assert err == (f"lessonweaver: warning: no trace file under {empty}: nothing is there; lessonweaver reads files "
                   f"named {NAMES} in the folders it is given, and any file named on the command line\n")
    assert (tmp_path / "reports" / "lessons.md").exists()
