"""A report people read is a page: the HTML and Markdown reports show the lessons of highest priority
(--report-lessons, 25 unless a run says otherwise), say how many there are in all and where to find them; lessons.jsonl holds every
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
    run_local(Settings(paths=(str(REPO / "data"),), db=str(folder / "lw.duckdb"), out=str(folder / "out"),
                       report_lessons=5))
    return folder / "lw.duckdb"


def test_the_page_shows_the_top_lessons_and_jsonl_holds_them_all(demo: Path, tmp_path: Path):
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


def test_the_page_holds_the_timelines_of_each_lessons_first_example_before_any_second(demo: Path, tmp_path: Path,
                                                                                       monkeypatch):
    """Timelines are bounded too (render.REPORT_TIMELINES traces of TIMELINE_EVENTS events); an example
    trace without one on the page is named, not linked, and `lessonweaver show` prints it."""
    monkeypatch.setattr(render, "REPORT_TIMELINES", 3)
    con = store.connect(str(demo), read_only=True)
    try:
        cursor = con.execute("SELECT * FROM runs")
        run = dict(zip([c[0] for c in cursor.description], cursor.fetchall()[0]))
        examples = [r[0] for r in con.execute("SELECT example_trace_ids FROM lessons WHERE review <> 'rejected' ORDER BY "
                                              "priority DESC, occurrences DESC, last_seen DESC, lesson_id "
                                              "LIMIT 5").fetchall()]  # the lessons the page shows
        render.render(con, run, str(tmp_path))
    finally:
        con.close()
    firsts = list(dict.fromkeys(traces[0] for traces in examples if traces))
    every = {t for traces in examples for t in traces}
    html = (tmp_path / "lessons.html").read_text()
    assert re.findall(r'<details class="timeline" id="trace-([^"]+)">', html) == firsts[:3]
    assert sorted(set(re.findall(r'href="#trace-([^"]+)"', html))) == sorted(firsts[:3])
    assert f"3 of the {len(every)} example traces are here" in " ".join(html.split())


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
