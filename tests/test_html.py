"""The HTML report (`lessons.html`), opened in a real headless Chromium.

Three nights of the real flow over the demo data make every lesson status show up: night 1 reads most
collections, night 2 the coding agent's, night 3 (with --resolve-after 3) a new collection, copies of
two files under new trace ids (their lessons come back: recurring and regressed) and a trace whose
correction carries markup. Between nights 2 and 3 a reviewer rejects one lesson and edits another.
Chromium then loads the report from disk: the DOM must hold the sections, the lessons in the right
places, the charts, nothing that runs or loads, and the browser must log no console message at all
(the page's Content-Security-Policy turns any attempt to load or run something into one).
"""

import json
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import REPO
from flows.nightly import nightly
from lessonweaver import charts, render, review, store

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND")
SECTIONS = ("summary", "new-lessons", "lessons", "resolved-lessons", "detector-chart", "kept-out")
HOSTILE = '<script>console.error("xss")</script><img src=x onerror="console.error(1)"> read the ticket first'


def chromium() -> str:
    """The browser to test with: $LESSONWEAVER_CHROMIUM, else the first of BROWSERS on the PATH.
    Missing is a failure, not a skip: `make test` installs it (`make browser`), and so does CI."""
    found = os.environ.get("LESSONWEAVER_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if not found:
        pytest.fail("Chromium not found: the HTML report is tested in headless Chromium; install it with "
                    "`make browser` (apt-get install chromium) or set LESSONWEAVER_CHROMIUM", pytrace=False)
    return found


def browse(page: Path, profile: Path, *extra: str) -> tuple[str, list[str]]:
    """Load `page` in headless Chromium; return what it printed (the DOM with --dump-dom) and every
    console message it logged."""
    proc = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, page.as_uri()],
        capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"chromium exited with {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout, [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]


class Dom(HTMLParser):
    """The elements of a page with the ids of the elements around each (enough to say what is where)."""

    VOID = {"meta", "link", "br", "hr", "img", "input", "source", "wbr", "area", "base", "col", "embed"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[dict] = []
        self.stack: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.feed(text)

    def _add(self, tag: str, attrs: list) -> dict:
        element = {"tag": tag, "attrs": dict(attrs), "within": [i for _, i in self.stack if i]}
        self.elements.append(element)
        return element

    def handle_starttag(self, tag, attrs):
        element = self._add(tag, attrs)
        if tag not in self.VOID:
            self.stack.append((tag, element["attrs"].get("id")))

    def handle_startendtag(self, tag, attrs):
        self._add(tag, attrs)

    def handle_endtag(self, tag):
        if any(t == tag for t, _ in self.stack):
            while self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        self.text.append(data)

    def ids(self) -> list[str]:
        return [e["attrs"]["id"] for e in self.elements if e["attrs"].get("id")]

    def find(self, tag: str | None = None, within: str | None = None, cls: str | None = None) -> list[dict]:
        return [e for e in self.elements
                if (tag is None or e["tag"] == tag) and (within is None or within in e["within"])
                and (cls is None or cls in (e["attrs"].get("class") or "").split())]


@dataclass
class Nights:
    db: Path
    out: Path
    run: dict
    rejected: str
    edited: str


def _renamed(src: Path, dest: Path, prefix: str) -> None:
    """A copy of a JSON Lines file of lessonweaver traces under new trace ids: the same problems again."""
    records = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    dest.write_text("".join(json.dumps({**r, "trace_id": prefix + r["trace_id"]}) + "\n" for r in records),
                    encoding="utf-8")


@pytest.fixture(scope="module")
def nights(prefect_server, tmp_path_factory) -> Nights:
    root = tmp_path_factory.mktemp("html")
    data = REPO / "data"
    n1, n2, n3 = root / "n1", root / "n2", root / "n3"
    for collection in sorted(p for p in data.iterdir() if p.is_dir()):
        if collection.name not in ("coding-agent", "workflow-agent"):
            shutil.copytree(collection, n1 / collection.name)
    shutil.copytree(data / "coding-agent", n2 / "coding-agent")
    shutil.copytree(data / "workflow-agent", n3 / "workflow-agent")
    _renamed(data / "coding-agent" / "pr-reviews.jsonl", n3 / "pr-reviews.jsonl", "n3-")
    _renamed(data / "support-bot" / "conversations.jsonl", n3 / "conversations.jsonl", "n3-")
    (n3 / "hostile.jsonl").write_text(json.dumps({
        "trace_id": "hostile-1", "source": "html-test", "task": "Close a <b>ticket</b>", "outcome": "corrected_by_human",
        "events": [{"id": "e1", "type": "assistant_message", "content": "Closed the ticket."},
                   {"id": "e2", "type": "human_correction", "content": HOSTILE}]}) + "\n", encoding="utf-8")
    db, out = root / "lw.duckdb", root / "reports"

    nightly(paths=[str(n1)], db=str(db), out=str(out), night="2026-11-10")
    nightly(paths=[str(n2)], db=str(db), out=str(out), night="2026-11-12")
    con = store.connect(str(db))
    try:
        coding = [r[0] for r in con.execute(
            "SELECT lesson_id FROM lessons WHERE source = 'coding-agent' ORDER BY priority DESC, lesson_id").fetchall()]
        rejected, edited = coding[0], coding[1]
        review.decide(con, rejected, "rejected")
        review.decide(con, edited, "accepted", "Open every changed file before approving a pull request.")
    finally:
        con.close()
    run = nightly(paths=[str(n3)], db=str(db), out=str(out), night="2026-11-14", resolve_after=3)
    return Nights(db, out, run, rejected, edited)


def lessons_by_status(db: Path) -> dict[str, dict[str, float]]:
    con = store.connect(str(db), read_only=True)
    try:
        found: dict[str, dict[str, float]] = {}
        for lesson_id, status, review_state, priority in con.execute(
                "SELECT lesson_id, status, review, priority FROM lessons").fetchall():
            found.setdefault("rejected" if review_state == "rejected" else status, {})[lesson_id] = priority
        return found
    finally:
        con.close()


@pytest.mark.slow
def test_the_report_renders_in_chromium_with_every_section_lesson_and_chart(nights: Nights, tmp_path: Path):
    page = nights.out / "lessons.html"
    dom_text, console = browse(page, tmp_path / "profile", "--dump-dom")
    assert console == [], console
    dom = Dom(dom_text)
    ids = dom.ids()
    assert [s for s in SECTIONS if s not in ids] == []
    assert len(ids) == len(set(ids)), "element ids must be unique"

    found = lessons_by_status(nights.db)
    assert {"new", "regressed", "recurring", "resolved", "rejected"} <= set(found), found.keys()
    places = {"new-lessons": found["new"] | found["regressed"], "lessons": found["recurring"],
              "resolved-lessons": found["resolved"]}
    for section, expected in places.items():
        shown = [e["attrs"]["id"].removeprefix("lesson-") for e in dom.find("article", within=section)]
        assert sorted(shown) == sorted(expected), section
        priorities = [expected[i] for i in shown]
        assert priorities == sorted(priorities, reverse=True), f"{section} is not by priority"
        for lesson_id in shown:  # every lesson carries its own sparkline
            assert len(dom.find("svg", within=f"lesson-{lesson_id}", cls="spark")) == 1, lesson_id
    articles = [e["attrs"]["id"] for e in dom.find("article")]  # new and regressed come first
    assert set(articles[:len(places["new-lessons"])]) == {f"lesson-{i}" for i in places["new-lessons"]}
    assert f"lesson-{nights.rejected}" not in ids and nights.rejected not in dom_text
    assert "1 rejected in review" in " ".join(dom.text)
    assert "Open every changed file before approving a pull request." in " ".join(dom.text)
    for status in ("new", "regressed", "recurring", "resolved"):
        card = dom.find(within=f"count-{status}", cls="n")
        assert card, status

    chart = dom.find("svg", within="detector-chart", cls="chart")
    assert len(chart) == 1
    assert len(dom.find("rect", within="detector-chart")) >= 10  # bars and legend swatches
    legend = dom.find("g", within="detector-chart", cls="legend-item")
    con = store.connect(str(nights.db), read_only=True)
    try:
        detectors = con.execute("SELECT count(DISTINCT detector) FROM sightings WHERE night > DATE '2026-11-14' - 30").fetchone()[0]
    finally:
        con.close()
    assert len(legend) == detectors >= 7

    # Trace text is shown as text: nothing in it became an element, and nothing loads or runs.
    assert "console.error(\"xss\")" in " ".join(dom.text)
    assert not dom.find("script") and not dom.find("img") and not dom.find("iframe")
    for element in dom.elements:
        for name in ("src", "href", "xlink:href", "action", "srcset", "poster"):
            value = element["attrs"].get(name)
            assert value is None or value.startswith("#"), (element["tag"], name, value)
        assert not [a for a in element["attrs"] if a.startswith("on")], element


def test_the_report_file_names_no_url(nights: Nights):
    text = (nights.out / "lessons.html").read_text(encoding="utf-8")
    assert re.findall(r"(?i)\b(?:https?|ftp|wss?):|(?:src|href)\s*=\s*[\"']?//", text) == []
    assert re.findall(r"(?i)<(?:script|link|iframe|object|embed|img)\b", text) == []
    assert "Content-Security-Policy" in text and "default-src 'none'" in text


@pytest.mark.slow
def test_the_console_check_catches_a_page_that_loads_or_runs_something(nights: Nights, tmp_path: Path):
    """The empty console above means something: the same report with a remote image and a script in it
    makes Chromium log both, as Content-Security-Policy violations."""
    page = tmp_path / "tampered.html"
    text = (nights.out / "lessons.html").read_text(encoding="utf-8")
    page.write_text(text.replace("</main>", '<img src="https://example.invalid/p.png"><script>console.log(1)</script></main>'),
                    encoding="utf-8")
    _, console = browse(page, tmp_path / "profile", "--dump-dom")
    assert any("example.invalid" in line for line in console), console
    assert any("inline script" in line for line in console), console


@pytest.mark.slow
def test_the_report_screenshots(nights: Nights, tmp_path: Path):
    shot = tmp_path / "report.png"
    _, console = browse(nights.out / "lessons.html", tmp_path / "profile", "--hide-scrollbars",
                        "--window-size=1100,2200", f"--screenshot={shot}")
    assert console == []
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1100, 2200)
    assert len(png) > 50_000  # a blank page compresses to a few kilobytes


def test_trends_are_zero_filled_per_night_from_sightings(nights: Nights):
    con = store.connect(str(nights.db), read_only=True)
    try:
        ctx = render.context(con, nights.run.as_dict())
        sums = dict(((lid, str(night)), n) for lid, night, n in con.execute(
            "SELECT lesson_id, night, sum(occurrences) FROM sightings WHERE lesson_id IS NOT NULL GROUP BY ALL").fetchall())
        per_detector = dict(con.execute("SELECT detector, sum(occurrences) FROM sightings GROUP BY ALL").fetchall())
        regressed = con.execute("SELECT lesson_id FROM lessons WHERE status = 'regressed' LIMIT 1").fetchone()[0]
    finally:
        con.close()
    assert ctx["night"] == "2026-11-14"
    assert ctx["trend_nights"][0] == "2026-11-01" and ctx["trend_nights"][-1] == "2026-11-14"
    assert len(ctx["trend_nights"]) == 14
    for lesson_id, trend in ctx["trends"].items():
        assert [t["night"] for t in trend] == ctx["trend_nights"]
        assert [t["occurrences"] for t in trend] == [sums.get((lesson_id, n), 0) for n in ctx["trend_nights"]]
    nonzero = [t["night"] for t in ctx["trends"][regressed] if t["occurrences"]]
    assert nonzero == ["2026-11-10", "2026-11-14"]
    chart = ctx["detector_nights"]
    assert len(chart["nights"]) == 30 and chart["nights"][-1] == "2026-11-14"
    assert {s["detector"]: s["total"] for s in chart["series"]} == per_detector
    assert all(sum(s["counts"]) == s["total"] for s in chart["series"])
    # the trends sit beside the lessons, not in them: lessons.jsonl keeps the lessons table's fields
    assert all("trend" not in json.loads(line) for line in (nights.out / "lessons.jsonl").read_text().splitlines())


def test_charts_escape_their_labels_and_write_no_long_digit_runs():
    hostile = '<script>alert("x")</script>&'
    svg = charts.bar_chart({hostile: [1, 0, 3], "retry": [2, 2, 0]}, ["2026-11-12", hostile, "2026-11-14"])
    spark = charts.sparkline([0, 5, 1234567], [hostile, "2026-11-13", "2026-11-14"])
    for markup in (svg, spark):
        assert "<script" not in markup and "&lt;script&gt;" in markup and "&amp;" in markup
        assert markup.count("<svg") == 1 and markup.endswith("</svg>")
    # Coordinates never run together into what the audit would read as a card or phone number.
    big = charts.bar_chart({f"d{i}": [(i * 7919 + n * 104729) % 997 for n in range(30)] for i in range(12)},
                           [f"2026-10-{d:02d}" for d in range(1, 31)])
    assert re.search(r"\d(?:[ \-]?\d){12,}", big + spark) is None
    assert "no detections" in charts.bar_chart({}, ["2026-11-14"])


def test_nice_ticks_are_round_and_cover_the_top():
    assert charts.nice_ticks(0) == [0, 1]
    assert charts.nice_ticks(41) == [0, 20, 40, 60]
    assert charts.nice_ticks(7) == [0, 2, 4, 6, 8]
    for top in (1, 3, 9, 10, 99, 1234):
        ticks = charts.nice_ticks(top)
        assert ticks[0] == 0 and ticks[-1] >= top and len(ticks) <= 7
