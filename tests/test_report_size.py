"""A report people read is a page: the HTML and Markdown reports show the lessons of highest priority
(render.REPORT_LESSONS), say how many there are in all and where to find them; lessons.jsonl holds every
one. And the scrub that masks URLs, paths, hosts and tokens in report text gives what it gave before its
cheap guards."""

import json
import re
from pathlib import Path

import pytest

from conftest import REPO
from lessonweaver import render, store
from lessonweaver.config import Settings
from lessonweaver.pipeline import run_local


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("size")
    run_local(Settings(paths=(str(REPO / "data"),), db=str(folder / "lw.duckdb"), out=str(folder / "out")))
    return folder / "lw.duckdb"


def test_the_page_shows_the_top_lessons_and_jsonl_holds_them_all(demo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(render, "REPORT_LESSONS", 5)
    con = store.connect(str(demo), read_only=True)
    try:
        cursor = con.execute("SELECT * FROM runs")
        run = dict(zip([c[0] for c in cursor.description], cursor.fetchone()))
        total = con.execute("SELECT count(*) FROM lessons WHERE review <> 'rejected'").fetchone()[0]
        top = [r[0] for r in con.execute("SELECT lesson_id FROM lessons ORDER BY priority DESC, occurrences DESC, "
                                         "last_seen DESC, lesson_id LIMIT 5").fetchall()]
        render.render(con, run, str(tmp_path))
    finally:
        con.close()
    assert total > 5
    html, md = (tmp_path / "lessons.html").read_text(), (tmp_path / "lessons.md").read_text()
    cards = re.findall(r'id="lesson-(L[0-9a-f]+)"', html)
    assert sorted(cards) == sorted(top)
    assert f"{total} lessons: the 5 of highest priority are shown here" in " ".join(html.split())
    assert f"The 5 lessons of highest priority, of {total}, are listed here" in md
    jsonl = [json.loads(line) for line in (tmp_path / "lessons.jsonl").read_text().splitlines()]
    assert len(jsonl) == total


@pytest.mark.parametrize("text, expected", [
    ("see https://ci.example.com/job/7 for the log", "see <URL> for the log"),
    ("wrote /home/dev/app/config.yaml and C:\\Users\\dev\\notes.txt", "wrote <PATH> and <PATH>"),
    ("db01.prod.internal refused the connection", "<HOST> refused the connection"),
    ("token 0123456789abcdef0123456789abcdef expired", "token <TOKEN> expired"),
    ("plain words, a ratio 3/4 and a file name.txt stay", "plain words, a ratio 3/4 and a file name.txt stay"),
    ("Traceback (most recent call last):\n  File x", "(traceback withheld)"),
])
def test_scrub_masks_what_it_must(text: str, expected: str):
    assert render.scrub(text) == expected
