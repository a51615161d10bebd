"""Templates: the shipped ones, a user's folder searched first, and trace text made inert."""

import re
from pathlib import Path

import duckdb

from lessonweaver import render, store
from lessonweaver.render import md_inline


def test_md_inline_neutralises_links_images_html_and_newlines():
    text = "![x](http://a/b.png) [click](http://evil) <script>alert(1)</script>\n# heading | cell `code`"
    out = md_inline(text)
    assert "\n" not in out
    for raw in ("![", "<script>", "http"):
        assert raw not in out
    assert re.search(r"(?<!\\)[|\[]", out) is None  # no link, image or table syntax is left
    assert out.startswith("!\\[x](hxxp://a/b.png)") and "&lt;script>" in out and out.endswith("`code`")


def test_md_inline_escapes_only_what_markdown_reads():
    """Code spans stay code, words keep their underscores and paths their brackets; emphasis is escaped."""
    assert md_inline("When `apply_patch` fails with 'Failed to find expected lines in <PATH>:'") == (
        "When `apply_patch` fails with 'Failed to find expected lines in &lt;PATH>:'")
    assert md_inline("run_tests failed (exit code 2) in {a, b}") == "run_tests failed (exit code 2) in {a, b}"
    assert md_inline("*bold* _it_ a | b ~~gone~~ C:\\dir\\x") == "\\*bold\\* \\_it\\_ a \\| b \\~\\~gone\\~\\~ C:\\dir\\x"
    assert md_inline("an odd ` backtick") == "an odd \\` backtick"


def test_user_template_folder_overrides_and_adds(tmp_path: Path):
    con = store.connect(str(tmp_path / "lw.duckdb"))
    mine = tmp_path / "templates"
    mine.mkdir()
    (mine / "lessons.md.j2").write_text("{{ lessons | length }} lessons for {{ run.run_id }}\n")
    (mine / "summary.txt.j2").write_text("{{ totals.traces }} traces\n")
    (mine / "_partial.j2").write_text("not rendered on its own")
    written = render.render(con, {"run_id": "r1"}, str(tmp_path / "out"), str(mine))
    names = sorted(Path(p).name for p in written)
    assert names == ["lessons.html", "lessons.jsonl", "lessons.md", "summary.txt"]
    assert (tmp_path / "out" / "lessons.md").read_text() == "0 lessons for r1\n"
    assert (tmp_path / "out" / "summary.txt").read_text() == "0 traces\n"
    assert (tmp_path / "out" / "lessons.jsonl").read_text() == ""
    assert not list((tmp_path / "out").glob(".*"))  # no temporary files left behind
    con.close()


def test_second_writer_gets_a_clear_error(tmp_path: Path):
    db = str(tmp_path / "lw.duckdb")
    first = store.connect(db)
    try:
        # DuckDB locks per process; a second process is what a concurrent run would be.
        import subprocess
        import sys

        code = ("import sys; from lessonweaver import store\n"
                "try:\n    store.connect(sys.argv[1])\nexcept store.StoreError as e:\n    print(e)\n")
        out = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True, timeout=60).stdout
        assert "is in use by another lessonweaver run" in out
    finally:
        first.close()
    assert duckdb.connect(db, read_only=True).execute("SELECT count(*) FROM lessons").fetchone() == (0,)
