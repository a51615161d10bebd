"""Lessons where agents read them: `lessonweaver export --into FILE` keeps the accepted lessons as a block
of their own in an agent instruction file and leaves every other byte of it alone; text for agents is
plain; files lessonweaver writes are readable like any other (0644 under umask 022).

Everything goes through the CLI on a database the pipeline built from the demo data, and the tests read
and compare the files' bytes.
"""

import os
import stat
from pathlib import Path

import pytest
import yaml

from conftest import REPO, copy_db, query_db
from lessonweaver.agentfile import END, START
from lessonweaver.cli import main

REFUND = "Check the current refund policy (14 days) before promising a refund window; attach the receipt with upload_archive."


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The demo data run in-process under umask 022, with the two lessons of highest priority accepted:
    the one an export lists first with its text edited, the other as proposed."""
    folder = tmp_path_factory.mktemp("export")
    db = folder / "lessonweaver.duckdb"
    old = os.umask(0o022)
    try:
        assert main(["run", "--no-prefect", "-q", str(REPO / "data"), "--db", str(db), "--out", str(folder / "reports"),
                     "--night", "2026-12-02"]) == 0
    finally:
        os.umask(old)
    first, second = (r[0] for r in query_db(db, "SELECT lesson_id FROM lessons ORDER BY priority DESC, lesson_id LIMIT 2"))
    assert main(["review", "--db", str(db), "accept", first, second]) == 0
    lead = accepted(db)[0][0]  # the one an export lists first gets the edited text
    assert main(["review", "--db", str(db), "edit", lead, "--text", REFUND]) == 0
    return db


def export(capsys, db: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["export", "--db", str(db), *args])
    out, err = capsys.readouterr()
    return code, out, err


def accepted(db: Path) -> list[tuple[str, str, str, str]]:
    """(lesson_id, lesson, detector, severity) of the accepted lessons, most severe first."""
    return query_db(db, """SELECT lesson_id, lesson, detector, severity FROM lessons WHERE review = 'accepted'
                           ORDER BY list_position(['info', 'low', 'medium', 'high', 'critical'], severity) DESC, lesson_id""")


def split(data: bytes) -> tuple[bytes, bytes, bytes]:
    """The bytes before the block, the block (start marker to end marker, line ending excluded), after it."""
    start, end = data.index(START.encode()), data.index(END.encode()) + len(END)
    return data[:start], data[start:end], data[end:]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# An existing file, and what goes between its last byte and the block: one blank line.
EXISTING = {
    "AGENTS.md": (b"# Agents\n\nRun `make test` before a commit.\n", b"\n"),
    "CLAUDE.md": ("# Claude\r\n\r\nAnswer in English, café or not ☕.\r\n".encode(), b"\r\n"),
    ".github/copilot-instructions.md": (b"Prefer small diffs.", b"\n\n"),
    ".cursor/rules/team.mdc": (b"---\ndescription: Team rules\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n"
                               b"- Use type hints.\n", b"\n"),
    "docs/bom-and-blank-lines.md": ("\ufeff# Notes\n\n".encode(), b""),
}


@pytest.mark.parametrize("name", sorted(EXISTING))
def test_the_block_is_appended_and_every_other_byte_kept(demo, tmp_path, capsys, name):
    original, gap = EXISTING[name]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(original)
    assert export(capsys, demo, "--into", str(path)) == (0, "", f"exported into {path}\n")

    data = path.read_bytes()
    before, block, after = split(data)
    newline = b"\r\n" if b"\r\n" in original else b"\n"
    assert (before, after) == (original + gap, newline)
    assert block.replace(newline, b"").count(b"\n") == 0 and b"\r" not in block.replace(newline, b"")
    text = block.decode("utf-8")
    for lesson_id, *_ in accepted(demo):
        assert text.count(lesson_id) == 1
    assert REFUND in text and "\\" not in text

    # A second run changes nothing: not a byte, and the file is not even rewritten.
    stamp = (path.stat().st_ino, path.stat().st_mtime_ns)
    assert export(capsys, demo, "--into", str(path)) == (0, "", f"{path} is up to date\n")
    assert path.read_bytes() == data and (path.stat().st_ino, path.stat().st_mtime_ns) == stamp


@pytest.mark.parametrize("name", ["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".cursor/rules/lessons.mdc"])
def test_a_new_file_is_made_in_new_folders(demo, tmp_path, capsys, name):
    path = tmp_path / "repo" / name
    old = os.umask(0o022)
    try:
        assert export(capsys, demo, "--into", str(path))[0] == 0
    finally:
        os.umask(old)
    text = path.read_text(encoding="utf-8")
    assert mode(path) == 0o644
    if name.endswith(".mdc"):
        _, front, rest = text.split("---\n", 2)
        assert yaml.safe_load(front) == {
            "description": "Lessons learned from this team's agent traces, accepted by a reviewer (lessonweaver)",
            "alwaysApply": True}
        assert rest.startswith("\n" + START + "\n")
    else:
        assert text.startswith(START + "\n")
    assert text.endswith("\n" + END + "\n") and text.count(START) == 1
    assert [line for line in text.splitlines() if line.startswith("- ")] == [
        f"- {' '.join(lesson.split())} (`{lesson_id}`; {detector}, severity {severity})"
        for lesson_id, lesson, detector, severity in accepted(demo)]


def test_only_the_block_is_replaced_and_a_rejected_lesson_leaves_it(demo, tmp_path, capsys):
    db = copy_db(demo, tmp_path / "lw.duckdb")
    (first, *_), (second, *_) = accepted(db)
    path = tmp_path / "AGENTS.md"
    path.write_bytes(b"# Agents\r\n\r\nKeep the changelog.")
    assert export(capsys, db, "--into", str(path))[0] == 0

    # The team edits the file around the block, and someone edits inside it too.
    before, block, after = split(path.read_bytes())
    before = before.replace(b"changelog", b"CHANGELOG") + b"More notes.\r\n\r\n"
    after += "## After the block\r\nçà, and no newline at the end".encode()
    path.write_bytes(before + block.replace(b"14 days", b"30 days") + after)
    assert main(["review", "--db", str(db), "reject", second, "--note", "not a rule for agents"]) == 0
    assert export(capsys, db, "--into", str(path))[0] == 0

    now_before, now_block, now_after = split(path.read_bytes())
    assert (now_before, now_after) == (before, after)
    assert first.encode() in now_block and second.encode() not in now_block
    assert b"14 days" in now_block and b"30 days" not in now_block

    assert main(["review", "--db", str(db), "reject", first]) == 0
    assert export(capsys, db, "--into", str(path))[0] == 0
    assert b"\r\n- No accepted lessons yet.\r\n" in split(path.read_bytes())[1]


def test_check_exits_1_while_the_file_would_change_and_writes_nothing(demo, tmp_path, capsys):
    path = tmp_path / "AGENTS.md"
    code, out, err = export(capsys, demo, "--into", str(path), "--check")
    assert (code, out) == (1, "") and err.startswith(f"{path} would change (nothing written)\n")
    assert err.endswith("2 exported rules: 2 quiet, 0 still seen, 0 regressed, 0 duplicated; none needs a person\n")
    assert not path.exists()
    path.write_bytes(b"# Agents\n")
    assert export(capsys, demo, "--into", str(path), "--check")[0] == 1
    assert path.read_bytes() == b"# Agents\n"

    assert export(capsys, demo, "--into", str(path))[0] == 0
    code, out, err = export(capsys, demo, "--into", str(path), "--check")
    assert (code, out) == (0, "") and err.startswith(f"{path} is up to date\n") and "none needs a person" in err
    path.write_bytes(path.read_bytes().replace(b"14 days", b"30 days"))
    assert export(capsys, demo, "--into", str(path), "--check")[0] == 1


def test_diff_shows_what_would_change_and_writes_nothing(demo, tmp_path, capsys):
    path = tmp_path / "AGENTS.md"
    original = b"# Agents\n\nNo newline at the end"
    path.write_bytes(original)
    code, out, err = export(capsys, demo, "--into", str(path), "--diff")
    assert (code, err) == (0, "") and path.read_bytes() == original
    lines = out.splitlines()
    assert lines[:3] == [f"--- {path}", f"+++ {path}", "@@ -1,3 +1,13 @@"]
    assert lines[3:7] == [" # Agents", " ", "-No newline at the end", "\\ No newline at end of file"]
    new = [line[1:] for line in lines[3:] if line[:1] in (" ", "+")]

    assert export(capsys, demo, "--into", str(path), "--diff", "--check")[:2] == (1, out)
    assert export(capsys, demo, "--into", str(path))[0] == 0
    assert path.read_text(encoding="utf-8").splitlines() == new
    assert export(capsys, demo, "--into", str(path), "--diff") == (0, "", f"{path} is up to date\n")

    fresh = tmp_path / "new" / "CLAUDE.md"
    out = export(capsys, demo, "--into", str(fresh), "--diff")[1]
    assert out.splitlines()[:2] == ["--- /dev/null", f"+++ {fresh}"] and not fresh.parent.exists()


@pytest.mark.parametrize("content, message", [
    (f"# A\n\n{START}\n- a rule\n", "the lessonweaver:start marker on line 3 has no lessonweaver:end after it"),
    ("# A\n<!-- lessonweaver:end -->\n", "the lessonweaver:end marker on line 2 has no lessonweaver:start before it"),
    (f"{END}\n{START}\n", "the lessonweaver:end marker on line 1 has no lessonweaver:start before it"),
    (f"{START}\n{END}\n\n<!-- lessonweaver:start -->\n{END}\n", "2 lessonweaver:start markers (lines 1, 4)"),
    (f"{START}\n{END}\n{END}\n", "2 lessonweaver:end markers (lines 2, 3)"),
], ids=["start-only", "end-only", "end-before-start", "two-blocks", "two-ends"])
def test_markers_that_make_no_single_block_are_refused(demo, tmp_path, capsys, content, message):
    path = tmp_path / "AGENTS.md"
    path.write_text(content, encoding="utf-8")
    for extra in ([], ["--check"], ["--diff"]):
        code, out, err = export(capsys, demo, "--into", str(path), *extra)
        assert (code, out) == (2, "")
        assert err == f"lessonweaver: error: {path}: {message}; " + (
            "keep one block and run again\n" if "markers" in message else "mend the file and run again\n")
    assert path.read_text(encoding="utf-8") == content


def test_other_refusals_are_one_clear_line(demo, tmp_path, capsys):
    latin = tmp_path / "latin1.md"
    latin.write_bytes("Café\n".encode("latin-1"))
    own = tmp_path / "templates" / "export"
    own.mkdir(parents=True)
    (own / "agents-md.j2").write_text("Rules\n<!-- lessonweaver:end -->\n", encoding="utf-8")
    for args, message in [
        (["--into", str(latin)], f"{latin}: not UTF-8 text (byte 3); lessonweaver writes only into UTF-8 files"),
        (["--check"], "--check and --diff go with --into FILE"),
        (["-o", str(tmp_path / "x.md"), "--diff"], "--check and --diff go with --into FILE"),
        (["--into", str(tmp_path / "A.md"), "--format", "jsonl"],
         "--into writes Markdown into an instruction file; use --format agents-md (the default)"),
        (["--into", str(tmp_path / "A.md"), "--templates", str(own.parent)],
         "the export template's output holds a lessonweaver marker line; it cannot go into a block"),
    ]:
        assert export(capsys, demo, *args) == (2, "", f"lessonweaver: error: {message}\n")
    assert latin.read_bytes() == "Café\n".encode("latin-1") and not (tmp_path / "A.md").exists()
    capsys.readouterr()
    assert main(["export", "--db", str(demo), "-o", "x.md", "--into", "AGENTS.md"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_link_is_followed_not_replaced(demo, tmp_path, capsys):
    (tmp_path / "CLAUDE.md").write_bytes(b"# Shared by Claude and Codex\n")
    (tmp_path / "AGENTS.md").symlink_to("CLAUDE.md")
    assert export(capsys, demo, "--into", str(tmp_path / "AGENTS.md"))[0] == 0
    assert (tmp_path / "AGENTS.md").is_symlink()
    assert split((tmp_path / "CLAUDE.md").read_bytes())[0] == b"# Shared by Claude and Codex\n\n"


def test_agents_read_plain_text_one_rule_a_line_and_scrubbed(demo, tmp_path, capsys):
    db = copy_db(demo, tmp_path / "lw.duckdb")
    (first, _, d1, s1), (second, _, d2, s2) = accepted(db)
    assert main(["review", "--db", str(db), "edit", second, "--text",
                 "Read the diff\nbefore approving:  see https://ci.internal.example.com/runs/7 [not *upload_file*]"]) == 0
    code, out, _ = export(capsys, db)
    assert code == 0 and "\\" not in out
    assert [line for line in out.splitlines() if line.startswith("- ")] == [
        f"- {REFUND} (`{first}`; {d1}, severity {s1})",
        f"- Read the diff before approving: see <URL> [not *upload_file*] (`{second}`; {d2}, severity {s2})"]


def test_files_lessonweaver_writes_are_readable_like_any_other(demo, tmp_path, capsys):
    """Reports, -o and --into files: 0644 under umask 022, what the umask allows in general, and an
    existing file keeps its own bits."""
    assert {p.name: mode(p) for p in (demo.parent / "reports").iterdir()} == {
        "lessons.html": 0o644, "lessons.jsonl": 0o644, "lessons.md": 0o644}
    old = os.umask(0o022)
    try:
        assert export(capsys, demo, "-o", str(tmp_path / "out" / "rules.md"))[0] == 0
        assert export(capsys, demo, "--format", "jsonl", "-o", str(tmp_path / "rules.jsonl"))[0] == 0
        os.umask(0o077)
        assert export(capsys, demo, "--into", str(tmp_path / "private.md"))[0] == 0
        os.umask(0o002)
        assert export(capsys, demo, "--into", str(tmp_path / "group.md"))[0] == 0
    finally:
        os.umask(old)
    assert [mode(tmp_path / n) for n in ("out/rules.md", "rules.jsonl", "private.md", "group.md")] == [
        0o644, 0o644, 0o600, 0o664]
    for bits in (0o600, 0o640, 0o755):
        path = tmp_path / f"kept-{bits:o}.md"
        path.write_bytes(b"# Agents\n")
        path.chmod(bits)
        assert export(capsys, demo, "--into", str(path))[0] == 0
        assert mode(path) == bits and START.encode() in path.read_bytes()
    assert not [p.name for p in tmp_path.rglob(".*")]  # no temporary file left behind


def test_control_characters_in_a_lesson_never_reach_an_agent_file(demo: Path, tmp_path: Path, capsys):
    """A lesson's text comes from traces: an escape sequence in it must not reach the instructions an
    agent loads (or the terminal of whoever prints them)."""
    db = copy_db(demo, tmp_path / "lw.duckdb")
    lesson = query_db(db, "SELECT lesson_id FROM lessons WHERE review = 'accepted' ORDER BY lesson_id LIMIT 1")[0][0]
    assert main(["review", "--db", str(db), "edit", lesson, "--text", "Say hello\x1b[2J\x1b[31m first\x07."]) == 0
    target = tmp_path / "AGENTS.md"
    code, _, _ = export(capsys, db, "--into", str(target))
    text = target.read_text()
    assert code == 0 and "\x1b" not in text and "\x07" not in text
    assert "Say hello?[2J?[31m first?." in text


def test_project_scopes_the_rules_to_where_they_were_learnt(demo, tmp_path, capsys):
    """`--project DIR` keeps the lessons seen in that project (a folder stands for it by its name) and those
    seen in several; `--all`, as without either, keeps every accepted lesson."""
    projects = dict(query_db(demo, "SELECT lesson_id, projects FROM lessons WHERE review = 'accepted'"))
    assert all(len(p) == 1 for p in projects.values()) and len({p[0] for p in projects.values()}) == 2
    everything = export(capsys, demo, "--all")
    assert everything == export(capsys, demo) and all(lid in everything[1] for lid in projects)
    for lid, (name,) in projects.items():
        folder = tmp_path / "checkouts" / name
        folder.mkdir(parents=True)
        for given in (str(folder), name):
            code, out, _ = export(capsys, demo, "--project", given)
            assert code == 0 and lid in out and not [o for o in projects if o != lid and o in out]
    capsys.readouterr()
    assert main(["export", "--db", str(demo), "--project", "x", "--all"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_project_is_named_whatever_its_case_and_one_that_is_none_is_refused(demo, tmp_path, capsys):
    """`--project` in another case names the project; a name no stored trace's project has (a typo) is a
    usage error that lists the projects there are, not an export of the cross-project rules alone."""
    projects = dict(query_db(demo, "SELECT lesson_id, projects FROM lessons WHERE review = 'accepted'"))
    for lid, (name,) in projects.items():
        code, out, _ = export(capsys, demo, "--project", name.upper())
        assert code == 0 and lid in out and not [o for o in projects if o != lid and o in out]
    every = {p for (ps,) in query_db(demo, "SELECT projects FROM lessons") for p in ps}
    folder = tmp_path / "a-project-never-seen"
    folder.mkdir()
    for given, named in (("a-project-never-seen", "a-project-never-seen"), (str(folder), "a-project-never-seen"),
                         ("pr-reviewr", "pr-reviewr")):
        code, out, err = export(capsys, demo, "--project", given)
        assert code == 2 and out == "", (given, out)
        (line,) = err.strip().splitlines()
        assert line.startswith(f"lessonweaver: error: --project {named}: no such project; the database's projects: ")
        assert every <= set(line.split("projects: ", 1)[1].split(", ")), line


def test_projects_that_differ_only_in_case_are_not_guessed_between(tmp_path, capsys):
    from conftest import write_traces

    def trace(n: int, project: str) -> dict:
        return {"trace_id": f"t{n}", "source": "helper", "task": "Answer", "outcome": "success",
                "metadata": {"project": project},
                "events": [{"id": "e1", "type": "user_message", "content": "Hello"},
                           {"id": "e2", "type": "final_answer", "content": "Hi"}]}

    write_traces(tmp_path / "in", "traces.jsonl", [trace(1, "Shop"), trace(2, "shop"), trace(3, "Tools")])
    db = tmp_path / "lw.duckdb"
    assert main(["run", "--no-prefect", "-q", str(tmp_path / "in"), "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    for given in ("Shop", "shop", "tools", "TOOLS"):
        assert export(capsys, db, "--project", given)[0] == 0, given
    code, out, err = export(capsys, db, "--project", "SHOP")
    assert (code, out) == (2, "")
    assert err.strip() == "lessonweaver: error: --project SHOP: several projects differ from it only in case: Shop, shop"


def test_project_keeps_the_rules_seen_in_several_projects(demo, tmp_path, capsys):
    """A rule seen in several projects holds across repositories: `--project` of any project exports it,
    beside that project's own rules, and not the rules of another single project."""
    db = copy_db(demo, tmp_path / "lw.duckdb")
    across, projects = query_db(db, "SELECT lesson_id, projects FROM lessons WHERE len(projects) > 1 "
                                    "ORDER BY priority DESC, lesson_id LIMIT 1")[0]
    assert main(["review", "--db", str(db), "accept", across]) == 0
    own = dict(query_db(db, "SELECT lesson_id, projects[1] FROM lessons WHERE review = 'accepted' AND len(projects) = 1"))
    assert own and not set(own.values()) & set(projects)
    for project in [*projects, *own.values()]:
        code, out, _ = export(capsys, db, "--project", project)
        assert code == 0 and across in out, project
        assert [lid for lid, p in own.items() if lid in out] == [lid for lid, p in own.items() if p == project], project


def test_check_exits_1_when_a_rule_needs_a_person_though_the_file_is_up_to_date(demo, tmp_path, capsys):
    db = copy_db(demo, tmp_path / "lw.duckdb")
    path = tmp_path / "AGENTS.md"
    (first, text), (second, _) = query_db(db, "SELECT lesson_id, lesson FROM lessons WHERE review = 'accepted' ORDER BY lesson_id")
    assert main(["review", "--db", str(db), "edit", second, "--text", text]) == 0  # two rules say one thing
    assert export(capsys, db, "--into", str(path))[0] == 0
    code, out, err = export(capsys, db, "--into", str(path), "--check")
    assert (code, out) == (1, "") and err.startswith(f"{path} is up to date\n")
    assert f"{first}  NEEDS A PERSON" in err and "2 duplicated; 2 need a person" in err
