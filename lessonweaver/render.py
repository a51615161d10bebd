"""Render: every `*.j2` template into the output folder, from what the database holds.

The output of `lessons.md.j2` is `lessons.md`. Templates whose name starts with `_` are partials and
are not rendered on their own; those in subfolders (export/) only on request. A folder given with
--templates is searched before the shipped one, so a team can replace one template or add its own
without copying the rest. HTML templates autoescape.
Each file is written to a temporary name and renamed, so a reader never sees half a report.
"""

import datetime as dt
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb
import jinja2
from markupsafe import Markup

from lessonweaver import charts
from lessonweaver.lessons import STATUSES
from lessonweaver.resources import resource_dir
from lessonweaver.words import plural

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>!|#~{}()])")
_AUTOLINK = re.compile(r"(?i)\b(?:(h)tt(ps?:)|(f)t(p:)|(www)\.)")

# What an exception text or traceback may carry that a report must not repeat verbatim.
_TRACEBACK = re.compile(r"(?s)Traceback \(most recent call last\):.*")
_HOST_HINT = re.compile(r"(?i)\.(?:com|net|org|io|dev|cloud|internal|local|lan|corp|svc|cluster)\b")
# (a cheap test that the pattern may match at all, the pattern, its mask): most text has no URL, path or
# host, and the tests cost a tenth of the patterns (46 MB of lesson text: 0.3 s against 9 s).
_SCRUB = (
    (lambda t: "://" in t, re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+"), "<URL>"),
    (lambda t: "/" in t or "\\" in t,
     re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|~?/)(?:[\w.\-]+[/\\])+[\w.\-]*"), "<PATH>"),
    (_HOST_HINT.search, re.compile(
        r"(?i)\b(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|cloud|internal|local|lan|corp|svc|cluster)\b"),
     "<HOST>"),
    (lambda t: True, re.compile(r"\b[0-9a-fA-F]{32,}\b|\b[A-Za-z0-9+/_\-]{40,}={0,2}"), "<TOKEN>"),
)


def scrub(value: Any) -> str:
    """Report text with tracebacks cut and URLs, paths, host names and token-like strings masked."""
    text = str(value if value is not None else "")
    if "Traceback (most recent call last):" in text:
        text = _TRACEBACK.sub("(traceback withheld)", text)
    for may_match, pattern, mask in _SCRUB:
        if may_match(text):
            text = pattern.sub(mask, text)
    return text


def md_inline(value: Any) -> str:
    """Trace text made inert inside Markdown: one line, with link, image, HTML and code syntax escaped,
    and would-be autolinks defanged (`hxxps:`, `fxp:`, `www[.]`) so no renderer turns them into links."""
    text = " ".join(str(value if value is not None else "").split())
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return _AUTOLINK.sub(_defang, text)


def _defang(m: re.Match) -> str:
    if m[5]:
        return f"{m[5]}\\[.\\]"
    return f"{m[1]}xx{m[2]}" if m[1] else f"{m[3]}x{m[4]}"


def _plain(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def rows(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None) -> list[dict[str, Any]]:
    """Query into a polars DataFrame, handed to templates as plain rows (timestamps as ISO text)."""
    frame = con.sql(query, params=params or None).pl()
    return [{k: _plain(v) for k, v in row.items()} for row in frame.to_dicts()]


def environment(templates: str | None = None) -> jinja2.Environment:
    folders = ([templates] if templates else []) + [str(resource_dir("templates"))]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folders),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html", "html.j2", "htm.j2")),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = md_inline
    env.filters["when"] = lambda v: str(v or "")[:16].replace("T", " ")
    env.filters["json"] = lambda v: json.dumps(v, ensure_ascii=False, sort_keys=True)
    env.globals["plural"] = plural
    return env


TEXT_FIELDS = ("title", "problem", "lesson", "proposed_lesson", "evidence")


def context(con: duckdb.DuckDBPyConnection, run: dict[str, Any], tenant: str | None = None) -> dict[str, Any]:
    """Everything a template may use. No row here carries content of a quarantined or rejected record;
    lesson text is scrubbed of tracebacks, URLs, paths, hosts and tokens. With `tenant` (a tenant hash),
    only that tenant's lessons."""
    lessons = rows(con, """
        SELECT * FROM lessons WHERE (?::VARCHAR IS NULL OR tenant = ?::VARCHAR) AND review IS DISTINCT FROM 'rejected'
        ORDER BY priority DESC, occurrences DESC, last_seen DESC, lesson_id""", [tenant, tenant])
    scrubbed: dict[str, str] = {}  # lessons share much of their text (a lesson and its proposal, a title)
    for lesson in lessons:
        for k in TEXT_FIELDS:
            if (value := lesson.get(k)) is not None:
                lesson[k] = scrubbed.get(value) or scrubbed.setdefault(value, scrub(value))
    shown = lessons[:REPORT_LESSONS]
    return {
        "run": {k: _plain(v) for k, v in run.items()},
        "tenant": tenant,
        "lessons": lessons,
        "shown": shown,
        "detectors": rows(con, """
            SELECT k.detector, k.title, k.severity, k.description,
                   count(d.trace_id) AS detections,
                   count(d.trace_id) FILTER (WHERE d.run_id = ?) AS detections_this_run,
                   count(DISTINCT d.lesson_id) AS lessons
            FROM detectors k LEFT JOIN detections d USING (detector)
            GROUP BY ALL ORDER BY detections DESC, k.detector""", [run["run_id"]]),
        "quarantine": rows(con, """
            SELECT reason, count(DISTINCT trace_id) AS traces,
                   count(DISTINCT trace_id) FILTER (WHERE run_id = ?) AS traces_this_run
            FROM quarantine GROUP BY reason ORDER BY traces DESC, reason""", [run["run_id"]]),
        "files": rows(con, """
            SELECT path, format, records, loaded, quarantined, rejected, note FROM ingested_files
            WHERE run_id = ? AND (quarantined > 0 OR rejected > 0 OR note IS NOT NULL)
            ORDER BY rejected DESC, quarantined DESC, path LIMIT 50""", [run["run_id"]]),
        "rejects": rows(con, """
            SELECT file, count(*) AS records, count(*) FILTER (WHERE run_id = ?) AS records_this_run
            FROM rejects GROUP BY file ORDER BY records DESC, file""", [run["run_id"]]),
        "statuses": {s: sum(1 for lesson in lessons if lesson["status"] == s) for s in STATUSES},
        "reviewed": rows(con, """
            SELECT count(*) FILTER (WHERE review = 'accepted') AS accepted,
                   count(*) FILTER (WHERE review = 'rejected') AS rejected
            FROM lessons WHERE ?::VARCHAR IS NULL OR tenant = ?::VARCHAR""", [tenant, tenant])[0],
        "totals": rows(con, """
            SELECT (SELECT count(*) FROM traces) AS traces, (SELECT count(*) FROM events) AS events,
                   (SELECT count(*) FROM detections) AS detections, (SELECT count(*) FROM lessons) AS lessons,
                   (SELECT count(DISTINCT trace_id) FROM quarantine) AS quarantined,
                   (SELECT count(*) FROM rejects) AS rejected""")[0],
        **history(con, run, [lesson["lesson_id"] for lesson in shown], tenant),
    }


# The HTML and Markdown reports show this many lessons, highest priority first: people read a page, not
# 90,000 cards (a corpus of many tenants and tasks makes that many). lessons.jsonl, `lessonweaver review`
# and the database hold them all.
REPORT_LESSONS = 200
TREND_NIGHTS = 14  # nights in a lesson's sparkline, ending at the run's night
CHART_NIGHTS = 30  # nights in the detections-per-detector chart


def history(con: duckdb.DuckDBPyConnection, run: dict[str, Any], lesson_ids: list[str],
            tenant: str | None = None) -> dict[str, Any]:
    """Per-night counts from `sightings` for the HTML report, and the charts drawn from them.

    `trends` maps each of `lesson_ids` (the lessons the report shows) to its last TREND_NIGHTS nights ({night, occurrences}, zero-filled,
    ending at the run's night); `detector_nights` holds detections per detector per night over the last
    CHART_NIGHTS nights. They sit beside the lesson rows, not in them, so lessons.jsonl keeps the
    lessons table's fields. The SVGs are built by `charts`, which escapes every label itself."""
    given = run.get("night")
    night = con.execute("SELECT coalesce(try_cast(?::VARCHAR AS DATE), (SELECT max(night) FROM sightings), current_date)",
                        [None if given is None else str(given)]).fetchall()[0][0]
    window = """
        WITH days AS (SELECT unnest(generate_series($night::DATE - ($days - 1)::INTEGER, $night::DATE,
                                                     INTERVAL 1 DAY))::DATE AS night),
             shown AS (SELECT lesson_id FROM lessons WHERE $tenant::VARCHAR IS NULL OR tenant = $tenant::VARCHAR),
             seen AS (SELECT s.* FROM sightings s
                      WHERE s.night BETWEEN $night::DATE - ($days - 1)::INTEGER AND $night::DATE
                        AND ($tenant::VARCHAR IS NULL OR s.lesson_id IN (SELECT lesson_id FROM shown)))
    """
    per_lesson = con.execute(window + """
        , counts AS (SELECT lesson_id, night, sum(occurrences) AS n FROM seen WHERE lesson_id IS NOT NULL GROUP BY ALL)
        SELECT l.lesson_id, list(coalesce(c.n, 0)::BIGINT ORDER BY d.night)
        FROM (SELECT unnest($ids::VARCHAR[]) AS lesson_id) l CROSS JOIN days d
        LEFT JOIN counts c ON c.lesson_id = l.lesson_id AND c.night = d.night
        GROUP BY l.lesson_id""", {"night": night, "days": TREND_NIGHTS, "tenant": tenant, "ids": lesson_ids}).fetchall()
    per_detector = con.execute(window + """
        , counts AS (SELECT detector, night, sum(occurrences) AS n FROM seen GROUP BY ALL)
        SELECT k.detector, list(coalesce(c.n, 0)::BIGINT ORDER BY d.night), sum(coalesce(c.n, 0))::BIGINT AS total
        FROM (SELECT DISTINCT detector FROM counts) k CROSS JOIN days d
        LEFT JOIN counts c ON c.detector = k.detector AND c.night = d.night
        GROUP BY k.detector ORDER BY total DESC, k.detector""",
                                 {"night": night, "days": CHART_NIGHTS, "tenant": tenant}).fetchall()
    trend_nights, chart_nights = (
        [(night - dt.timedelta(days=back)).isoformat() for back in range(days - 1, -1, -1)]
        for days in (TREND_NIGHTS, CHART_NIGHTS))
    series = {detector: counts for detector, counts, _ in per_detector}
    return {
        "night": night.isoformat(),
        "trend_nights": trend_nights,
        "trends": {lid: [{"night": n, "occurrences": c} for n, c in zip(trend_nights, counts)]
                   for lid, counts in per_lesson},
        "sparklines": {lid: Markup(charts.sparkline(counts, trend_nights)) for lid, counts in per_lesson},
        "detector_nights": {"nights": chart_nights,
                            "series": [{"detector": d, "counts": c, "total": t} for d, c, t in per_detector]},
        "detector_chart": Markup(charts.bar_chart(series, chart_nights)),
    }


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write `text` (a string, or its pieces as a template yields them) under a temporary name, then
    rename it into place: a reader never sees half a file, and a large report is never one string."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.writelines([text] if isinstance(text, str) else text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def clear_pending(out: str) -> None:
    """Remove what a run that died while rendering left aside (`.pending-*` folders)."""
    for leftover in Path(out).glob(".pending-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def publish(files: list[str], out: str) -> list[str]:
    """Move rendered files into `out`, each by an atomic rename; returns their new paths."""
    Path(out).mkdir(parents=True, exist_ok=True)
    moved = []
    for f in files:
        target = Path(out) / Path(f).name
        os.replace(f, target)
        moved.append(str(target))
    return moved


def render(con: duckdb.DuckDBPyConnection, run: dict[str, Any], out: str, templates: str | None = None,
           tenant: str | None = None) -> list[str]:
    """Render every template into `out`; returns the paths written."""
    env = environment(templates)
    names = sorted(n for n in env.list_templates(extensions=["j2"]) if "/" not in n and not n.startswith("_"))
    ctx = context(con, run, tenant)
    Path(out).mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        target = Path(out) / Path(name).name.removesuffix(".j2")
        write_atomic(target, env.get_template(name).generate(**ctx))
        written.append(str(target))
    return written
