"""A --db that cannot be a database is refused in one whole line by every command, and leaves nothing behind;
a --db or --out where no file can be made is refused by `run` before any work, naming the folder and why."""

import pytest

from conftest import REPO, cli

COMMANDS = [("review",), ("review", "accept", "L1"), ("render",), ("redetect",), ("export",), ("show", "x"),
            ("audit",), ("forget", "--trace", "x"), ("sql", "SELECT 1"), ("run", "--no-prefect", "-q")]


def bad_paths(tmp_path):
    not_duckdb = tmp_path / "notes.duckdb"
    not_duckdb.write_text("hello, not a database\n")
    empty = tmp_path / "empty.duckdb"
    empty.write_bytes(b"")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    return {
        "": "--db needs a file name",
        str(folder): f"{folder} is a folder, not a database file",
        str(not_duckdb): f"{not_duckdb} is not a DuckDB database file (it holds something else)",
        str(empty): f"{empty} is not a DuckDB database file (empty)",
        str(a_file / "x.duckdb"): f"{a_file} is a file, not a folder",
    }


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_bad_db_is_one_whole_line(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    for db, reason in bad_paths(tmp_path).items():
        before = sorted(p.name for p in tmp_path.rglob("*"))
        argv = [*command, "--db", db] + ([str(tmp_path / "in")] if command[0] == "run" else [])
        code, out, err = cli(capsys, *argv)
        assert code == 2, (argv, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lessonweaver: error: "), err
        assert reason in lines[0] and "…" not in lines[0] and "Error:" not in lines[0], lines[0]
        assert sorted(p.name for p in tmp_path.rglob("*")) == before, f"{argv} left files behind"


def test_duckdbs_own_reason_is_given_whole(tmp_path):
    """Where DuckDB itself refuses a file, its whole first line is the reason: opening quotes the path only."""
    from lessonweaver.store import StoreError, open_error

    import duckdb

    bad = tmp_path / "bad.duckdb"
    bad.write_text("x" * 64)
    with pytest.raises(duckdb.Error) as caught:
        duckdb.connect(str(bad))
    message = str(open_error(str(bad), caught.value))
    assert isinstance(open_error(str(bad), caught.value), StoreError)
    assert message.startswith(f"cannot open {bad}: ") and "…" not in message
    assert "not a valid DuckDB database file" in message


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder on a read-only file system (a tmpfs mounted read-only), where even root makes no file."""
    import subprocess

    folder = tmp_path / "read-only"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(folder)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here (needs root): {done.stderr.strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def unwritable(tmp_path, read_only: bool) -> tuple[str, str]:
    """A place where no file can be made, and the reason the refusal gives: /proc takes no new files (and
    says 'No such file or directory'); a read-only mount says so."""
    if read_only:
        return str(tmp_path / "read-only"), "(the file system is read-only)"
    return "/proc", "(the system says: No such file or directory)"


@pytest.mark.parametrize("read_only", [False, True], ids=["proc", "read-only"])
@pytest.mark.parametrize("option", ["--db", "--out"])
def test_an_unwritable_db_or_out_is_refused_before_any_work(option, read_only, tmp_path, capsys, monkeypatch, request):
    """Named with the folder and the real reason, as a usage error (2), before anything is read: no database,
    lock or report folder is made."""
    if read_only:
        request.getfixturevalue("read_only_folder")
    monkeypatch.chdir(tmp_path)
    folder, reason = unwritable(tmp_path, read_only)
    places = {"--db": str(tmp_path / "lw.duckdb"), "--out": str(tmp_path / "reports")}
    places[option] = f"{folder}/{'lw.duckdb' if option == '--db' else 'reports'}"
    code, out, err = cli(capsys, "run", str(REPO / "data"), "--db", places["--db"], "--out", places["--out"],
                         "--no-prefect", "-q")
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "…" not in lines[0], err
    what = "the database" if option == "--db" else "the reports in"
    assert lines[0] == f"lessonweaver: error: cannot write {what} {places[option]}: files cannot be created in {folder} {reason}"
    assert sorted(p.name for p in tmp_path.iterdir()) == (["read-only"] if read_only else []), "work began"
