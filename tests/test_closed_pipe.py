"""A command whose reader goes away (`lessonweaver review | head -1`) stops quietly, as Unix tools do."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

COMMANDS = [("review",), ("review", "--all", "-v"), ("show", "sup-0001"), ("detectors", "-v"),
            ("sql", "SELECT * FROM events"), ("export", "--format", "jsonl")]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_a_closed_pipe_ends_the_command_quietly(command, demo_db):
    db = [] if command[0] == "detectors" else ["--db", str(demo_db)]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write meets a closed pipe
    try:
        done = subprocess.run([str(Path(sys.executable).with_name("lessonweaver")), *command, *db], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120)
    finally:
        os.close(write_end)
    assert done.stderr == "" and done.returncode == 0, (done.returncode, done.stderr)
