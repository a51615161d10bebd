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
import secrets
import shutil
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import zip_longest
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import polars as pl
from markupsafe import Markup

from lessonweaver import charts, timeline
from lessonweaver.config import DEFAULT_DB, Settings, parse_night
from lessonweaver.detectors import SEVERITIES
from lessonweaver.lessons import STATUSES, as_of
from lessonweaver.project import db_option
from lessonweaver.resources import resource_dir
from lessonweaver.scrub import flatten, scrub
from lessonweaver.words import plural

# What Markdown would read as syntax in a line of trace text, and nothing more: a backslash before
# punctuation, emphasis, a link or image's opening bracket, a table cell's bar, strikethrough. Code spans
# stay code (they are inert); an unbalanced backtick is escaped. `<` before a letter, `/`, `!` or `?` would
# open HTML or an autolink: it becomes `&lt;`.
_MD_SPECIAL = re.compile(r"(\\(?=[!-/:-@\[-`{-~])|[*\[|]|~~|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_AUTOLINK = re.compile(r"(?i)\b(?:(h)tt(ps?:)|(f)t(p:)|(www)\.)")


# A mask the scrub or the screen put in place of what was withheld: <PATH>, <URL>, <EMAIL>, ...
_MASK = re.compile(r"(<[A-Z][A-Z_]*>)")


def md_inline(value: Any) -> str:
    """Trace text made inert inside Markdown, escaping only what Markdown would read as syntax: one line,
    links, images and HTML neutralised, emphasis and table bars escaped, code spans kept as code, and
    would-be autolinks defanged (`hxxps:`, `fxp:`, `www[.]`) so no renderer turns them into links. A mask
    (`<PATH>`) reads as itself, raw and rendered: a code span of its own (`&lt;PATH>` would show as such
    to whoever reads the file raw, and a bare `<PATH>` is an HTML tag a renderer drops)."""
    parts = flatten(value).split("`")
    spans = len(parts) % 2 == 1  # balanced backticks make code spans; an unbalanced one is escaped
    out = []
    for i, part in enumerate(parts):
        if spans and i % 2:  # inside a code span: literal already, only the autolink defang applies
            out.append(part)
        else:
            pieces = _MASK.split(part)
            touches = (i > 0 and pieces[0] == "", i < len(parts) - 1 and pieces[-1] == "")
            out.append("".join(_md_mask(piece, touches[0] and j == 1, touches[1] and j == len(pieces) - 2)
                               if j % 2 else _md_text(piece) for j, piece in enumerate(pieces)))
    return _AUTOLINK.sub(_defang, ("`" if spans else "\\`").join(out))


def _md_text(text: str) -> str:
    return _MD_TAG.sub("&lt;", _MD_SPECIAL.sub(lambda m: "".join("\\" + c for c in m[0]), text))


def _md_mask(mask: str, after_tick: bool, before_tick: bool) -> str:
    """A mask as a code span, unless it touches a backtick of the text's own (two would then make one
    longer delimiter): escaped then."""
    return "\\" + mask if after_tick or before_tick else f"`{mask}`"


def html_inline(value: Any) -> Markup:
    """Text for an HTML page with its Markdown code spans (`pytest`) shown as code, not as backticks;
    everything else escaped. Unbalanced backticks stay as they are."""
    parts = str(value if value is not None else "").split("`")
    if len(parts) % 2 == 0:
        return Markup.escape(value if value is not None else "")
    return Markup("").join(Markup("<code>{}</code>").format(p) if i % 2 else Markup.escape(p)
                           for i, p in enumerate(parts))


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


def _plain_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """A frame's rows as dicts, dates and times (alone or in lists) as ISO text; only those columns are
    looked at (a quarter of a million lessons have 25 fields each)."""
    temporal = [c for c, t in frame.schema.items()
                if t.is_temporal() or (isinstance(t, pl.List) and not t.inner.is_numeric() and t.inner != pl.String)]
    found = frame.to_dicts()
    for row in found if temporal else ():
        for c in temporal:
            row[c] = _plain(row[c])
    return found


def rows(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None) -> list[dict[str, Any]]:
    """Query into a polars DataFrame, handed to templates as plain rows (timestamps as ISO text)."""
    return _plain_rows(con.sql(query, params=params or None).pl())


# One encoder for every row: json.dumps with options builds a new one per call (a lesson per line in lessons.jsonl).
_JSON = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


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
    env.filters["code"] = html_inline
    # text for an agent to read as it is: one line (a lesson is one bullet), no Markdown escapes, which an
    # agent would read as literal backslashes
    env.filters["oneline"] = flatten
    env.filters["when"] = lambda v: str(v or "")[:16].replace("T", " ")
    env.filters["json"] = _JSON.encode
    env.filters["swatch"] = lambda v: Markup(charts.swatch(str(v)))
    env.globals["plural"] = plural
    return env


TEXT_FIELDS = ("title", "problem", "lesson", "proposed_lesson", "evidence", "recovery")


# The lessons of a report, as its tenant sees them (all lessons without one: lessons_for in sql/views.sql).
LESSONS = """
    SELECT * FROM lessons_for(?::VARCHAR) WHERE review IS DISTINCT FROM 'rejected'
    ORDER BY priority DESC, occurrences DESC, last_seen DESC, lesson_id"""
STREAM_BATCH = 5000  # lessons a template is handed at a time
REVIEW_FIRST = 5  # the new or regressed lessons pending review that open the HTML report


def _scrubbed(lessons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    memo: dict[str, str] = {}  # lessons share much of their text (a lesson and its proposal, a title)
    for lesson in lessons:
        for k in TEXT_FIELDS:
            if (value := lesson.get(k)) is not None:
                lesson[k] = memo.get(value) or memo.setdefault(value, scrub(value))
    return lessons


class LessonStream:
    """Every lesson of a report, read from the database in batches as a template iterates them and
    scrubbed as they come, so a report of 300,000 lessons (lessons.jsonl) never holds them all in memory.
    `len()` is how many there are (`count`, known to the caller); each iteration reads them again, in
    priority order."""

    def __init__(self, con: duckdb.DuckDBPyConnection, tenant: str | None, count: int):
        self.con, self.params, self.count = con, [tenant], count

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        cursor = self.con.cursor()  # a result of its own: the template may run other queries meanwhile
        try:
            batches = cursor.sql(LESSONS, params=self.params).to_arrow_reader(STREAM_BATCH)
            for batch in batches:
                yield from _scrubbed(_plain_rows(pl.from_arrow(batch)))
        finally:
            cursor.close()


def context(con: duckdb.DuckDBPyConnection, run: dict[str, Any], tenant: str | None = None,
            db: str = DEFAULT_DB) -> dict[str, Any]:
    """Everything a template may use. No row here carries content of a quarantined or rejected record;
    lesson text is scrubbed of tracebacks, URLs, paths, hosts and tokens. With `tenant` (a tenant hash),
    only that tenant's lessons, with that tenant's texts. `lessons` (all of them) streams; `shown` (the
    `report_lessons` first, as the latest run was told: --report-lessons) is a list. `db_option` names the
    database in the commands a report tells a person to type, when it is not the default."""
    statuses = {s: 0 for s in STATUSES} | dict(con.execute(
        f"SELECT status, count(*) FROM ({LESSONS}) GROUP BY status", [tenant]).fetchall())
    lessons = LessonStream(con, tenant, sum(statuses.values()))
    shown = _scrubbed(rows(con, f"{LESSONS} LIMIT {report_lessons(con)}", [tenant]))
    return {
        "run": {k: _plain(v) for k, v in run.items()},
        "tenant": tenant,
        "db_option": db_option(db),
        "lessons": lessons,
        "shown": shown,
        "review_first": REVIEW_FIRST,
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
        "statuses": statuses,
        "reviewed": rows(con, """
            SELECT count(*) FILTER (WHERE review = 'accepted') AS accepted,
                   count(*) FILTER (WHERE review = 'rejected') AS rejected
            FROM lessons_for(?::VARCHAR)""", [tenant])[0],
        # findings under the noise floor: one-offs kept in detections, listed as no lesson
        "below_floor": con.execute("""
            SELECT count(*) FROM detections d JOIN traces t USING (trace_id)
            WHERE d.lesson_id IS NOT NULL AND d.lesson_id NOT IN (SELECT lesson_id FROM lessons)
              AND (?::VARCHAR IS NULL OR t.tenant = ?::VARCHAR)""", [tenant, tenant]).fetchall()[0][0],
        "totals": rows(con, """
            SELECT (SELECT count(*) FROM traces) AS traces, (SELECT count(*) FROM events) AS events,
                   (SELECT count(*) FROM detections) AS detections, (SELECT count(*) FROM lessons) AS lessons,
                   (SELECT count(DISTINCT trace_id) FROM quarantine) AS quarantined,
                   (SELECT count(*) FROM rejects) AS rejected""")[0],
        **history(con, run, shown, tenant),
        **navigation(con, shown),
    }


def report_lessons(con: duckdb.DuckDBPyConnection) -> int:
    """How many lessons the HTML and Markdown reports list, highest priority first (--report-lessons of the
    latest run, default 25): a person reads a short list, not every cause; lessons.jsonl, `lessonweaver
    review` and the database hold them all."""
    found = con.execute("SELECT max(value) FROM settings WHERE key = 'report_lessons'").fetchall()[0][0]
    return int(found) if found else Settings().report_lessons
TREND_NIGHTS = 14  # nights in a lesson's sparkline: the last nights with a run, up to the report's night
CHART_NIGHTS = 30  # nights in the detections-per-detector chart, counted the same way
MIN_TREND_NIGHTS = 3  # fewer nights than this make no line worth drawing: no sparklines then
# The HTML report holds the timelines of the example traces of the lessons it shows: of at most
# REPORT_TIMELINES traces (the first example of each lesson before any second), each of at most
# TIMELINE_EVENTS events (those detections point to, and their neighbours, first), an event's content cut
# to TIMELINE_WIDTH characters: 7,200 events at most, about 260 bytes each (100,000 generated traces:
# 300 timelines of 4,982 events added 1.3 MB to a 0.5 MB report). Reading them costs about one scan of
# the events' content (1.5-3 s at 1.46M events on 2 cores).
REPORT_TIMELINES = 300
TIMELINE_EVENTS = 24
TIMELINE_WIDTH = 160


def nights(con: duckdb.DuckDBPyConnection, night: dt.date, count: int) -> list[dt.date]:
    """The last `count` nights up to `night` that a run counted for (or that sightings hold), oldest
    first, and `night` itself: a chart's time axis spans the nights that exist, not a fixed window."""
    return [r[0] for r in con.execute("""
        SELECT night FROM (SELECT night FROM sightings UNION SELECT night FROM runs UNION SELECT $night::DATE)
        WHERE night <= $night::DATE ORDER BY night DESC LIMIT $count""",
                                      {"night": night, "count": count}).fetchall()][::-1]


def history(con: duckdb.DuckDBPyConnection, run: dict[str, Any], shown: list[dict[str, Any]],
            tenant: str | None = None) -> dict[str, Any]:
    """Per-night counts from `sightings` for the HTML report, and the charts drawn from them.

    `sparklines` draws each lesson of `shown` over the last TREND_NIGHTS nights with a run (zero-filled,
    ending at the run's night), in the colour of its detector, once there are MIN_TREND_NIGHTS such nights
    or more; `detector_nights` holds detections per detector over the last CHART_NIGHTS of them. They sit
    beside the lesson rows, not in them, so lessons.jsonl keeps the lessons table's fields. The SVGs are
    built by `charts`, which escapes every label itself."""
    given = run.get("night")
    night = as_of(con, None if given is None else parse_night(str(given)))  # as the statuses are (lessons.weave)
    trend_nights, chart_nights = nights(con, night, TREND_NIGHTS), nights(con, night, CHART_NIGHTS)
    trends = _counts(con.execute("""
        SELECT lesson_id, night, sum(occurrences) FROM sightings
        WHERE night BETWEEN ? AND ? AND lesson_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL""",
                                 [trend_nights[0], night, [lesson["lesson_id"] for lesson in shown]]).fetchall(),
                     trend_nights)
    series = _counts(con.execute("""
        SELECT detector, night, sum(occurrences) FROM sightings
        WHERE night BETWEEN $first AND $night
          AND ($tenant::VARCHAR IS NULL OR lesson_id IN (SELECT lesson_id FROM lessons_for($tenant::VARCHAR)))
        GROUP BY ALL""", {"first": chart_nights[0], "night": night, "tenant": tenant}).fetchall(), chart_nights)
    series = dict(sorted(series.items(), key=lambda kv: (-sum(kv[1]), kv[0])))
    trend_labels = [n.isoformat() for n in trend_nights]
    detector_of = {lesson["lesson_id"]: lesson["detector"] for lesson in shown}
    return {
        "night": night.isoformat(),
        "tonight": night_counts(con, night, run.get("run_id")),
        "trend_nights": trend_labels,
        "sparklines": {lid: Markup(charts.sparkline(trends.get(lid, [0] * len(trend_nights)), trend_labels,
                                                    colour=charts.colour(detector)))
                       for lid, detector in detector_of.items()} if len(trend_nights) >= MIN_TREND_NIGHTS else {},
        "detector_nights": {"nights": [n.isoformat() for n in chart_nights],
                            "series": [{"detector": d, "counts": c, "total": sum(c)} for d, c in series.items()]},
        # drawn twice: for a page as wide as a laptop's, and for a phone's (the page's CSS shows one)
        "detector_chart": Markup(charts.bar_chart(series, [n.isoformat() for n in chart_nights], css="wide")
                                 + charts.bar_chart(series, [n.isoformat() for n in chart_nights], css="narrow",
                                                    width=380, height=260)),
        "detector_legend": Markup(charts.legend(series)),
    }


def night_counts(con: duckdb.DuckDBPyConnection, night: dt.date, run_id: str | None) -> dict[str, Any]:
    """What every run that counted for `night` brought in, summed, and the latest of them: the night a
    report's statuses are as of, so its counts and its list of lessons describe the same thing (a re-run
    that read nothing does not make a night of new lessons look empty). Detections are counted as the
    database now holds them (after a redetect or a forget)."""
    row = con.execute("""
        WITH r AS (SELECT * FROM runs WHERE night = $night AND (status = 'completed' OR run_id = $run))
        SELECT count(*) AS runs, arg_max(run_id, started_at) AS latest, max(started_at) AS latest_started,
               coalesce(sum(files_read), 0) AS files_read, coalesce(sum(records), 0) AS records,
               coalesce(sum(records_loaded), 0) AS records_loaded,
               coalesce(sum(records_quarantined), 0) AS records_quarantined,
               coalesce(sum(records_rejected), 0) AS records_rejected,
               coalesce(sum(traces_loaded), 0) AS traces_loaded, coalesce(sum(events_loaded), 0) AS events_loaded,
               (SELECT count(*) FROM detections SEMI JOIN r USING (run_id)) AS detections
        FROM r""", {"night": night, "run": run_id or ""}).fetchone()
    names = [d[0] for d in con.description]
    return {k: _plain(v) for k, v in zip(names, row)}


def _counts(found: list[tuple[str, dt.date, int]], nights: list[dt.date]) -> dict[str, list[int]]:
    """(key, night, count) rows as a count per night of `nights` for each key, zero where none."""
    where = {night: i for i, night in enumerate(nights)}
    out: dict[str, list[int]] = {}
    for key, night, count in found:
        if key is not None and night in where:
            out.setdefault(key, [0] * len(nights))[where[night]] += int(count)
    return out


def navigation(con: duckdb.DuckDBPyConnection, shown: list[dict[str, Any]]) -> dict[str, Any]:
    """What the HTML report needs to be browsed: its filters, each lesson's filter classes, and the
    timelines of the example traces of the lessons shown (see REPORT_TIMELINES), with the element id each
    is found at and how many example traces there are in all."""
    groups, classes = filters(shown)
    rounds = zip_longest(*(lesson.get("example_trace_ids") or [] for lesson in shown))
    examples = list(dict.fromkeys(t for traces in rounds for t in traces if t is not None))
    found = timeline.timelines(con, examples[:REPORT_TIMELINES], limit=TIMELINE_EVENTS, width=TIMELINE_WIDTH)
    return {"filters": groups, "filter_classes": classes, "timelines": found, "timeline_events": TIMELINE_EVENTS,
            "trace_anchors": timeline.anchors([t.trace_id for t in found]), "examples": len(examples)}


# The report's filters: (name, lesson field, prefix of its tokens, the order of its values).
FILTERS = (("detector", "detector", "fd", ()), ("status", "status", "fs", STATUSES),
           ("severity", "severity", "fv", tuple(reversed(SEVERITIES))))


def filters(shown: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The options of each filter (detector, status, severity) among the lessons shown, each with a
    token (`fd0`, `fs2`, ...) that names its radio button and marks the lessons it keeps: the page's
    CSS hides the others (`body:has(#fd0:checked) .lesson:not(.fd0)`), no script needed. Tokens, not
    values, go into the CSS, so a detector's id is never CSS."""
    groups, classes = [], {lesson["lesson_id"]: [] for lesson in shown}
    for name, field, prefix, order in FILTERS:
        counts = Counter(str(lesson[field] or "") for lesson in shown)
        values = sorted(counts, key=lambda v: (order.index(v) if v in order else len(order), v))
        options = [{"value": v, "token": f"{prefix}{i}", "count": counts[v]} for i, v in enumerate(values)]
        token = {o["value"]: o["token"] for o in options}
        for lesson in shown:
            classes[lesson["lesson_id"]].append(token[str(lesson[field] or "")])
        groups.append({"name": name, "options": options})
    return groups, {lid: " ".join(tokens) for lid, tokens in classes.items()}


def write_atomic(path: Path, text: str | Iterable[str], newline: str | None = None) -> None:
    """Write `text` (a string, or its pieces as a template yields them) under a temporary name, then
    rename it into place: a reader never sees half a file, and a large report is never one string.

    The file gets the permission bits of the file it replaces, and a new one those of a plain open()
    (0644 under the usual umask), not mkstemp's 0600: reports and exports are meant to be read.
    `newline=""` writes line endings as they are in `text`."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the umask applies, as to open()
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            fh.writelines([text] if isinstance(text, str) else text)
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
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
           tenant: str | None = None, db: str = DEFAULT_DB) -> list[str]:
    """Render every template into `out`; returns the paths written."""
    env = environment(templates)
    names = sorted(n for n in env.list_templates(extensions=["j2"]) if "/" not in n and not n.startswith("_"))
    ctx = context(con, run, tenant, db)
    Path(out).mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        target = Path(out) / Path(name).name.removesuffix(".j2")
        write_atomic(target, env.get_template(name).generate(**ctx))
        written.append(str(target))
    return written
