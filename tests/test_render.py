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
    for raw in ("![", "](", "<script>", "`code`"):
        assert raw not in out
    assert re.search(r"(?<!\\)[|<>`\[\]]", out) is None  # every special character is escaped
    assert out.startswith("\\!\\[x\\]\\(hxxp://a/b.png\\)")


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
