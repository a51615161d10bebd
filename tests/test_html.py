"""The HTML report (`lessons.html`), opened in a real headless Chromium.

Three nights of the real flow over the demo data make every lesson status show up: night 1 reads most
collections, night 2 the coding agent's, night 3 (with --resolve-after 3) a new collection, copies of
two files under new trace ids (their lessons come back: recurring and regressed) and a trace whose
correction carries markup. Between nights 2 and 3 a reviewer rejects one lesson and edits another.
Chromium then loads the report from disk: the DOM must hold the sections, the lessons in the right
places, the charts, nothing that runs or loads, and the browser must log no console message at all
(the page's Content-Security-Policy turns any attempt to load or run something into one). The page is
then used as a reader would: its filters clicked, its width measured at a laptop's and a phone's width,
and screenshots taken.

Chromium's windows are at least 500 pixels wide, so a phone's width is that of an iframe: a harness page
(ours, in the test's folder) holds the report in an iframe of the width wanted and reports what a small
script of the test measured in it. The report itself is never changed.
"""

import html
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
from lessonweaver.cli import main

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND")
SECTIONS = ("review-first", "summary", "detector-chart", "find", "new-lessons", "lessons", "resolved-lessons", "traces",
            "kept-out")
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


def probe(page: Path, folder: Path, width: int, script: str, height: int = 1600) -> dict:
    """Load `page` in an iframe `width` pixels wide and return what `script` returned, as JSON: the body
    of a function of `doc`, the report's document, run once the page has loaded. Chromium must log no
    console message (the report's CSP would log any attempt to load or run something)."""
    harness = folder / f"harness-{width}.html"
    harness.write_text(
        "<!DOCTYPE html><html><head><style>body{margin:0}iframe{border:0;display:block}</style></head><body>"
        f'<iframe id="f" src="{page.as_uri()}" style="width:{width}px;height:{height}px"></iframe>'
        "<script>window.addEventListener('load', () => {"
        "const doc = document.getElementById('f').contentDocument;"
        f"const result = (function (doc) {{ {script} }})(doc);"
        "const out = document.createElement('pre'); out.id = 'probe'; out.textContent = JSON.stringify(result);"
        "document.body.appendChild(out);});</script></body></html>", encoding="utf-8")
    dom, console = browse(harness, folder / "profile", "--allow-file-access-from-files", "--hide-scrollbars",
                          f"--window-size={max(width, 500)},{height}", "--virtual-time-budget=5000", "--dump-dom")
    assert console == [], console
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found[1]))


def screenshot(page: Path, folder: Path, width: int, height: int) -> bytes:
    """A PNG of `page` at `width` x `height` pixels (in an iframe of that size, left-aligned in the window:
    Chromium crops its screenshot to the window size asked for)."""
    harness = folder / f"shot-{width}.html"
    harness.write_text("<!DOCTYPE html><html><head><style>body{margin:0}iframe{border:0;display:block}</style></head>"
                       f'<body><iframe src="{page.as_uri()}" style="width:{width}px;height:{height}px"></iframe></body></html>',
                       encoding="utf-8")
    shot = folder / f"report-{width}.png"
    _, console = browse(harness, folder / "profile", "--hide-scrollbars", f"--window-size={width},{height}",
                        f"--screenshot={shot}")
    assert console == [], console
    return shot.read_bytes()


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
    places = {"new-lessons": found["new"] | found["regressed"], "lessons": found["recurring"] | found.get("open", {}),
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
    for status in ("new", "regressed", "recurring", "open", "resolved"):
        card = dom.find(within=f"count-{status}", cls="n")
        assert card, status

    chart = dom.find("svg", within="detector-chart", cls="chart")
    assert [c["attrs"]["class"] for c in chart] == ["chart wide", "chart narrow"]  # CSS shows one
    assert len(dom.find("rect", within="detector-chart")) >= 10  # bars and legend swatches
    legend = dom.find("li", within="detector-chart", cls="legend-item")
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


@pytest.mark.slow
def test_the_report_has_contents_an_index_by_detector_folded_cards_and_trace_timelines(nights: Nights, tmp_path: Path):
    dom_text, console = browse(nights.out / "lessons.html", tmp_path / "profile", "--dump-dom")
    assert console == []
    dom = Dom(dom_text)
    ids = set(dom.ids())
    assert [e["attrs"]["href"] for e in dom.find("a", within="contents")] == [f"#{s}" for s in SECTIONS]
    assert [h for h in (e["attrs"]["href"] for e in dom.find("a")) if h[1:] not in ids] == []  # every link lands

    shown = {e["attrs"]["id"].removeprefix("lesson-") for e in dom.find("article", cls="lesson")}
    con = store.connect(str(nights.db), read_only=True)
    try:
        examples = dict(con.execute("SELECT lesson_id, example_trace_ids FROM lessons WHERE list_contains(?, lesson_id)",
                                    [sorted(shown)]).fetchall())
        seqs = {}
        for trace_id, seq in con.execute("SELECT trace_id, seq FROM detections WHERE seq IS NOT NULL").fetchall():
            seqs.setdefault(trace_id, set()).add(seq)
    finally:
        con.close()
    for lesson_id in shown:  # a folded card: its summary says what it is, the rest unfolds
        within = f"lesson-{lesson_id}"
        assert len(dom.find("details", within=within)) == 1 and len(dom.find("summary", within=within)) == 1
        assert len(dom.find("h3", within=within)) == 1 and dom.find("dl", within=within)
        assert "open" not in dom.find("details", within=within)[0]["attrs"]
    # the index by detector links every lesson shown, once
    assert sorted(e["attrs"]["href"].removeprefix("#lesson-") for e in dom.find("a", within="by-detector")) == sorted(shown)
    # every example trace links to its folded timeline, which marks the events detections point to
    timelines = [e["attrs"]["id"] for e in dom.find("details", within="traces", cls="timeline")]
    traces = {f"trace-{t}": t for ids_ in examples.values() for t in ids_}  # the demo's ids need no escaping
    assert sorted(timelines) == sorted(traces) and len(timelines) > 20
    for lesson_id, trace_ids in examples.items():
        links = [e["attrs"]["href"] for e in dom.find("a", within=f"lesson-{lesson_id}")]
        assert links == [f"#trace-{t}" for t in trace_ids]
    blocks = dict(re.findall(r'<details class="timeline" id="([^"]+)">(.*?)</details>', dom_text, re.S))
    assert len(blocks) == len(timelines)
    for anchor, block in blocks.items():
        shown_seqs = [int(n) for n in re.findall(r'<span class="seq">(\d+)</span>', block)]
        flagged = [int(n) for n in re.findall(r'<li class="event flagged"><span class="seq">(\d+)</span>', block)]
        assert shown_seqs == sorted(shown_seqs) and shown_seqs[0] == 1, anchor  # short traces: every event
        assert set(flagged) == seqs.get(traces[anchor], set()), anchor
        assert block.count('<span class="mark">') >= len(flagged)


def test_the_report_opens_with_the_lessons_to_review_first_within_a_laptops_first_screen(nights: Nights, tmp_path: Path):
    """At 1280 x 800 the first screen holds the contents and the first lessons to decide on, each with its
    rule and how often it was seen, above the night's pipeline counts; those lessons are the new or
    regressed ones pending review, by priority, and their titles show code as code, not as backticks."""
    seen = probe(nights.out / "lessons.html", tmp_path, 1280, """
        const bottom = e => e.getBoundingClientRect().bottom;
        const firsts = [...doc.querySelectorAll('#review-first li')];
        return {ids: firsts.map(li => li.querySelector('a').getAttribute('href').slice(8)),
                rules: firsts.map(li => li.querySelector('p.rule').textContent),
                seen: firsts.map(li => li.querySelector('.count').textContent),
                titles: [...doc.querySelectorAll('#review-first li > a, article.lesson h3')].map(e => e.textContent),
                coded: doc.querySelectorAll('#review-first li > a code, article.lesson h3 code').length,
                first: bottom(firsts[0]), second: bottom(firsts[1]), counts: bottom(doc.getElementById('count-new')),
                contents: bottom(doc.getElementById('contents')),
                order: [...doc.querySelectorAll('main > section, body > section')].map(s => s.id)};""", height=800)
    assert seen["first"] <= 800 and seen["second"] <= 800 and seen["contents"] <= 800, seen
    assert seen["counts"] > seen["first"], seen
    assert seen["order"][:3] == ["review-first", "summary", "detector-chart"]
    con = store.connect(str(nights.db), read_only=True)
    try:
        waiting = con.execute(
            "SELECT lesson_id, lesson, frequency FROM lessons WHERE status IN ('new', 'regressed') AND review = 'pending' "
            "ORDER BY priority DESC, occurrences DESC, last_seen DESC, lesson_id LIMIT 5").fetchall()
        titled = con.execute("SELECT count(*) FROM lessons WHERE title LIKE '%`%`%'").fetchall()[0][0]
    finally:
        con.close()
    assert seen["ids"] == [r[0] for r in waiting] and len(waiting) == 5
    assert seen["rules"] == [r[1].replace("`", "") for r in waiting] and seen["seen"] == [r[2] for r in waiting]
    assert titled and seen["coded"] >= 1 and not any("`" in t for t in seen["titles"]), seen["titles"]


@pytest.mark.slow
def test_the_filters_show_only_the_lessons_chosen_in_chromium(nights: Nights, tmp_path: Path):
    """Each filter is clicked as a reader would (its label), alone and with another: only the lessons it
    names stay visible; `all` brings every lesson back. Pure CSS: the page runs no script."""
    seen = probe(nights.out / "lessons.html", tmp_path, 1280, """
        const visible = () => [...doc.querySelectorAll('article.lesson')]
            .filter(a => getComputedStyle(a).display !== 'none').map(a => a.id.slice(7)).sort();
        const click = id => doc.querySelector(`label[for="${id}"]`).click();
        const out = {all: visible(), groups: {}};
        for (const fieldset of doc.querySelectorAll('fieldset.filter')) {
            const options = {};
            for (const input of fieldset.querySelectorAll('input:not([id$="-all"])')) {
                click(input.id);
                const label = doc.querySelector(`label[for="${input.id}"]`).textContent.trim();
                options[label.replace(/\\s+\\d+$/, '')] = visible();
            }
            click(fieldset.querySelector('input[id$="-all"]').id);
            out.groups[fieldset.querySelector('legend').textContent.trim()] = options;
        }
        click('fd0'); click('fv0');
        out.both = {detector: doc.querySelector('label[for="fd0"]').textContent.trim().replace(/\\s+\\d+$/, ''),
                    severity: doc.querySelector('label[for="fv0"]').textContent.trim().replace(/\\s+\\d+$/, ''),
                    shown: visible()};
        click('detector-all'); click('severity-all');
        out.after = visible();
        return out;""")
    con = store.connect(str(nights.db), read_only=True)
    try:
        fields = {r[0]: {"detector": r[1], "status": r[2], "severity": r[3]} for r in con.execute(
            "SELECT lesson_id, detector, status, severity FROM lessons WHERE list_contains(?, lesson_id)",
            [seen["all"]]).fetchall()}
    finally:
        con.close()
    assert len(seen["all"]) == len(fields) > 20 and seen["after"] == seen["all"]
    assert set(seen["groups"]) == {"detector", "status", "severity"}
    for name, options in seen["groups"].items():
        assert set(options) == {f[name] for f in fields.values()}
        for value, visible in options.items():
            assert visible == sorted(i for i, f in fields.items() if f[name] == value), (name, value)
    both = seen["both"]
    assert both["shown"] == sorted(i for i, f in fields.items()
                                   if f["detector"] == both["detector"] and f["severity"] == both["severity"])


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 420])
def test_no_horizontal_scrolling_at_a_laptops_or_a_phones_width(nights: Nights, tmp_path: Path, width: int):
    """Folded as it opens, and with every card, index and timeline unfolded."""
    seen = probe(nights.out / "lessons.html", tmp_path, width, """
        const measure = () => ({scroll: doc.documentElement.scrollWidth, client: doc.documentElement.clientWidth,
            wider: [...doc.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > doc.documentElement.clientWidth + 0.5)
                   .slice(0, 5).map(e => e.tagName + '#' + e.id)});
        const folded = measure();
        doc.querySelectorAll('details').forEach(d => { d.open = true; });
        return {folded, unfolded: measure(), details: doc.querySelectorAll('details[open]').length};""")
    assert seen["details"] > 50
    for state in ("folded", "unfolded"):
        assert seen[state]["client"] == width
        assert seen[state]["scroll"] <= seen[state]["client"], (state, seen[state])
        assert seen[state]["wider"] == [], (state, seen[state])


def test_a_detector_keeps_its_colour_across_reports_that_rank_it_differently(tmp_path: Path, capsys):
    """Two databases, each of one night: support-bot's traces find failed evaluations most and human
    corrections next; the coding agent's find human corrections most. human_correction has the same
    colour, its id's, in both reports: in the chart, its legend, and its lessons' swatches. One night makes
    one bar on the time axis, and no sparklines."""
    legends = {}
    for name, folder in (("support", "support-bot"), ("coding", "coding-agent")):
        out = tmp_path / name / "reports"
        assert main(["run", str(REPO / "data" / folder), "--no-prefect", "-q", "--db", str(tmp_path / name / "lw.duckdb"),
                     "--out", str(out), "--night", "2026-11-20"]) == 0
        page = (out / "lessons.html").read_text(encoding="utf-8")
        legend = re.findall(r'<li class="legend-item"><svg class="swatch"[^>]*><rect [^>]*fill="(#\w+)"/></svg>'
                            r'<code>(\w+)</code>', page)
        legends[name] = [(d, c) for c, d in legend]
        for detector, colour in legends[name]:
            assert colour == charts.colour(detector)
            bars = re.findall(rf'<rect [^>]*fill="(#\w+)" stroke="#ffffff" stroke-width="0.8"><title>{detector}, ', page)
            assert bars and set(bars) == {colour}
        wide = re.search(r'<svg class="chart wide".*?</svg>', page, re.S)[0]
        assert re.findall(r'fill="#616e7c">(\d\d-\d\d)</text>', wide) == ["11-20"]
        assert 'class="spark"' not in page and "One night, 2026-11-20" in page
    capsys.readouterr()
    ranks = {name: [d for d, _ in legend] for name, legend in legends.items()}
    common = [d for d in ranks["support"] if d in ranks["coding"]]
    assert "human_correction" in common
    assert ranks["support"].index("human_correction") != ranks["coding"].index("human_correction")
    assert {d: c for d, c in legends["support"] if d in common} == {d: c for d, c in legends["coding"] if d in common}


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
@pytest.mark.parametrize("width", [1280, 420])
def test_the_report_screenshots_at_a_laptops_and_a_phones_width(nights: Nights, tmp_path: Path, width: int):
    png = screenshot(nights.out / "lessons.html", tmp_path, width, 2400)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (width, 2400)
    assert len(png) > 30_000 * width // 420  # a blank page compresses to a few kilobytes


def test_trends_and_the_chart_span_the_nights_with_a_run(nights: Nights):
    """Nights 11-10, 11-12 and 11-14 had a run: the time axes are those three nights, not 14 or 30 days
    with a bar at the edge, and each lesson's trend is zero-filled over them from `sightings`."""
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
    assert ctx["trend_nights"] == ["2026-11-10", "2026-11-12", "2026-11-14"]
    def trend(lesson_id: str) -> list[tuple[str, int]]:
        """A sparkline's numbers, as its title spells them out: (night, occurrences), oldest first."""
        title = re.search(r"<title>\d+ occurrences from .*? \((.*?)\)</title>", str(ctx["sparklines"][lesson_id]))[1]
        return [(day, int(n)) for day, n in (pair.split(": ") for pair in title.split("; "))]

    assert set(ctx["sparklines"]) == {lesson["lesson_id"] for lesson in ctx["shown"]}  # three nights: lines
    for lesson_id in ctx["sparklines"]:
        assert trend(lesson_id) == [(n[5:], sums.get((lesson_id, n), 0)) for n in ctx["trend_nights"]]
    assert [day for day, n in trend(regressed) if n] == ["11-10", "11-14"]
    chart = ctx["detector_nights"]
    assert chart["nights"] == ["2026-11-10", "2026-11-12", "2026-11-14"]
    assert {s["detector"]: s["total"] for s in chart["series"]} == per_detector
    assert all(sum(s["counts"]) == s["total"] for s in chart["series"])
    totals = [s["total"] for s in chart["series"]]
    assert totals == sorted(totals, reverse=True)
    # the page's axes: the three nights, in both drawings of the chart
    page = (nights.out / "lessons.html").read_text(encoding="utf-8")
    for svg in re.findall(r'<svg class="chart \w+".*?</svg>', page, re.S):
        labels = re.findall(r'fill="#616e7c">(\d\d-\d\d)</text>', svg)
        assert labels == ["11-10", "11-12", "11-14"], labels
        assert {m for m in re.findall(r"<title>\w+, (2026-\d\d-\d\d): \d+</title>", svg)} <= set(chart["nights"])
    assert "The 3 nights with a run, 2026-11-10 to 2026-11-14" in page
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
    legend = charts.legend({hostile: [1, 2], "retry": [3]})
    assert "<script" not in legend and "&lt;script&gt;" in legend and legend.count("<li") == 2
    assert charts.swatch(hostile).count("<svg") == 1 and "script" not in charts.swatch(hostile)


def test_a_detectors_colour_comes_from_its_id():
    shipped = sorted(p.name for p in (REPO / "sql" / "detectors").iterdir() if p.is_dir())
    assert sorted(charts.SHIPPED) == shipped  # every shipped detector has a colour of its own
    assert len({charts.colour(d) for d in shipped}) == len(shipped)
    assert charts.colour("retry") == charts.colour("retry") in charts.PALETTE
    chart = charts.bar_chart({"retry": [1, 2], "loop": [3, 0]}, ["2026-11-13", "2026-11-14"])
    swapped = charts.bar_chart({"loop": [3, 0], "retry": [1, 2]}, ["2026-11-13", "2026-11-14"])
    for svg in (chart, swapped):  # rank does not change a colour
        for detector in ("retry", "loop"):
            assert re.findall(rf'fill="(#\w+)" stroke="#ffffff" stroke-width="0.8"><title>{detector},', svg) \
                == [charts.colour(detector)] * (2 if detector == "retry" else 1)


def test_nice_ticks_are_round_and_cover_the_top():
    assert charts.nice_ticks(0) == [0, 1]
    assert charts.nice_ticks(41) == [0, 20, 40, 60]
    assert charts.nice_ticks(7) == [0, 2, 4, 6, 8]
    for top in (1, 3, 9, 10, 99, 1234):
        ticks = charts.nice_ticks(top)
        assert ticks[0] == 0 and ticks[-1] >= top and len(ticks) <= 7
