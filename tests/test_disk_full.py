"""A disk that fills during a run: one line that names the file, says the disk is full and that nothing was
lost; the database is left as it was, byte for byte, and the next run, with room again, gives what a run
on a roomy disk gives. The disk is a real one: a small tmpfs (mounting it needs root)."""

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, cli, run_state

NIGHT = "2026-11-29"
FIRST = ("coding-agent", "support-bot")  # the folders of data/ the first run reads; the second reads them all


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(disk)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill here (needs root): {done.stderr.strip()}")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def run(capsys, folder: Path, where: Path) -> tuple[int, str, str]:
    return cli(capsys, "run", str(folder), "--db", str(where / "lw.duckdb"), "--out", str(where / "reports"),
               "--night", NIGHT, "--no-prefect", "-q")


def fill(disk: Path, leave: int) -> Path:
    """Take all the disk's room but `leave` bytes."""
    free = shutil.disk_usage(disk).free
    filler = disk / "filler"
    with open(filler, "wb") as fh:
        fh.truncate(0)
        fh.write(b"\0" * max(0, free - leave))
    return filler


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("room", ["no room to copy the database", "room for the copy only"])
def test_a_full_disk_is_one_line_and_loses_nothing(small_disk, room, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LESSONWEAVER_TENANT_SALT", "disk-full-test")  # two databases, the same tenant hashes
    folder, roomy = tmp_path / "in", tmp_path / "roomy"
    for name in FIRST:
        shutil.copytree(REPO / "data" / name, folder / name)
    for where in (roomy, small_disk):
        assert run(capsys, folder, where)[0] == 0
    shutil.copytree(REPO / "data", folder, dirs_exist_ok=True)
    assert run(capsys, folder, roomy)[0] == 0

    db = small_disk / "lw.duckdb"
    before = {p.name: digest(p) for p in [db, *(small_disk / "reports").iterdir()]}
    filler = fill(small_disk, db.stat().st_size // 2 if room.startswith("no room") else db.stat().st_size + 100_000)
    code, out, err = run(capsys, folder, small_disk)
    assert code == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "…" not in lines[0] and "Error" not in lines[0], err
    assert lines[0].startswith(f"lessonweaver: error: the disk is full: could not write {small_disk}/"), lines[0]
    assert lines[0].endswith(f"; nothing was lost: the database {db} is left as it was, and the next run picks up "
                             "from there once there is room"), lines[0]
    assert {p.name: digest(p) for p in [db, *(small_disk / "reports").iterdir()]} == before
    assert not list(small_disk.glob("lw.duckdb.writing*")), "the working copy was left taking room"

    filler.unlink()
    assert run(capsys, folder, small_disk)[0] == 0
    assert run_state(db, small_disk / "reports") == run_state(roomy / "lw.duckdb", roomy / "reports")
