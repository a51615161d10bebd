"""`make run` leaves nothing untracked in a checkout, and `make clean` removes everything a run made."""

import shutil
import subprocess

from conftest import REPO, cli


def test_a_run_leaves_nothing_git_sees_and_clean_removes_it_all(tmp_path, monkeypatch, capsys):
    shutil.copy(REPO / ".gitignore", tmp_path / ".gitignore")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "run", str(REPO / "data"), "--no-prefect", "-q")  # the defaults make run uses
    assert (code, err) == (0, "")
    made = sorted(p.name for p in tmp_path.iterdir() if p.name not in (".git", ".gitignore"))
    assert {"lessonweaver.duckdb", "lessonweaver.events", "reports"} <= set(made), made
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=tmp_path, check=True,
                            capture_output=True, text=True).stdout.splitlines()
    assert status == ["?? .gitignore"], status

    subprocess.run(["make", "-s", "-f", str(REPO / "Makefile"), "clean"], cwd=tmp_path, check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".git", ".gitignore"]
