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
        "When `apply_patch` fails with 'Failed to find expected lines in `<PATH>`:'")
    assert md_inline("run_tests failed (exit code 2) in {a, b}") == "run_tests failed (exit code 2) in {a, b}"
    assert md_inline("*bold* _it_ a | b ~~gone~~ C:\\dir\\x") == "\\*bold\\* \\_it\\_ a \\| b \\~\\~gone\\~\\~ C:\\dir\\x"
    assert md_inline("an odd ` backtick") == "an odd \\` backtick"


def test_a_mask_reads_as_itself_in_markdown_raw_and_rendered():
    """`<PATH>` as a code span of its own (a bare one is an HTML tag a renderer drops; `&lt;PATH>` is what
    a reader of the raw file would see); escaped where it touches a code span, which its backticks would
    lengthen; other tags stay inert."""
    assert md_inline("The file <PATH> was updated; see <URL> or <API_KEY>") == (
        "The file `<PATH>` was updated; see `<URL>` or `<API_KEY>`")
    assert md_inline("x `a`<PATH>`b` y <PATH>") == "x `a`\\<PATH>`b` y `<PATH>`"
    assert md_inline("an odd ` at <HOST>") == "an odd \\` at `<HOST>`"
    assert md_inline("<div> and <Path>") == "&lt;div> and &lt;Path>"


def test_html_inline_shows_code_spans_as_code_and_escapes_the_rest():
    assert str(render.html_inline("`pytest` kept failing at <PATH> & `x`")) == (
        "<code>pytest</code> kept failing at &lt;PATH&gt; &amp; <code>x</code>")
    assert str(render.html_inline("an odd ` <b>")) == "an odd ` &lt;b&gt;"
    assert str(render.html_inline("`<script>`")) == "<code>&lt;script&gt;</code>"


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
