"""Discovery walks a home folder as a coding agent leaves it: the sessions under the hidden `.claude` and
`.codex` folders are read, every other hidden folder (`.git`, `.venv`, `.cache`) is passed over. The
home is built from our own fixtures, so the test never depends on ../shared."""

import shutil
from pathlib import Path

from conftest import REPO, rows, stage
from lessonweaver.discover import scan

FIXTURES = REPO / "tests" / "fixtures" / "formats"


def home(tmp_path: Path) -> Path:
    root = tmp_path / "home" / "dev"
    shutil.copytree(FIXTURES / "claude_code", root / ".claude" / "projects")
    shutil.copytree(FIXTURES / "codex" / "sessions", root / ".codex" / "sessions")
    for hidden in (".git", ".venv/lib", ".cache/pip"):
        (root / hidden).mkdir(parents=True)
        (root / hidden / "look-alike.jsonl").write_text('{"trace_id": "not-mine", "events": []}\n')
    (root / ".codex" / "config.toml").write_text('model = "gpt-5-codex"\n')
    (root / ".claude" / ".credentials.json").write_text("{}\n")
    return root


def test_agent_homes_are_walked_and_other_hidden_folders_are_not(tmp_path: Path):
    root = home(tmp_path)
    found, passed_over = scan([str(root)])
    names = sorted(Path(f.path).relative_to(root).as_posix() for f in found)
    assert names == [
        ".claude/projects/-home-dev-shopfront/5d0c9e4a-7b1f-4e2a-9c3d-1a2b3c4d5e6f.jsonl",
        ".claude/projects/-home-dev-shopfront/5d0c9e4a-7b1f-4e2a-9c3d-1a2b3c4d5e6f/subagents/agent-b7c1d2e.jsonl",
        ".codex/sessions/2025/08/20/rollout-2025-08-20T10-00-00-5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9.jsonl",
        ".codex/sessions/2026/02/11/rollout-2026-02-11T15-00-00-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl",
        ".codex/sessions/2026/02/11/rollout-2026-02-11T15-00-20-0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a6c.jsonl",
    ]
    # the agent's own settings are listed as not read; a hidden file is not even listed
    assert [Path(p).relative_to(root).as_posix() for p in passed_over] == [".codex/config.toml"]


def test_a_home_folder_loads_as_its_sessions(tmp_path: Path):
    con = stage([home(tmp_path)])
    assert rows(con, "SELECT * FROM rejects") == []
    assert sorted(r["format"] for r in rows(con, "SELECT format FROM traces")) == ["claude_code", "codex", "codex", "codex"]
    assert rows(con, "SELECT count(*) AS n FROM traces WHERE trace_id = 'not-mine'") == [{"n": 0}]
