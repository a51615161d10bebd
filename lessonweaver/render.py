"""Render: every `*.j2` template into the output folder, from what the database holds.

The output of `lessons.md.j2` is `lessons.md`. Templates whose name starts with `_` are partials and
are not rendered on their own. A folder given with --templates is searched before the shipped one, so
a team can replace one template or add its own without copying the rest. HTML templates autoescape.
Each file is written to a temporary name and renamed, so a reader never sees half a report.
"""

import datetime as dt
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import jinja2

from lessonweaver.resources import resource_dir

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>!|#~{}()])")
_AUTOLINK = re.compile(r"(?i)\b(?:(h)tt(ps?:)|(f)t(p:)|(www)\.)")

# What an exception text or traceback may carry that a report must not repeat verbatim.
_TRACEBACK = re.compile(r"(?s)Traceback \(most recent call last\):.*")
_SCRUB = (
    (re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+"), "<URL>"),
    (re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|~?/)(?:[\w.\-]+[/\\])+[\w.\-]*"), "<PATH>"),
    (re.compile(r"(?i)\b(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|cloud|internal|local|lan|corp|svc|cluster)\b"), "<HOST>"),
    (re.compile(r"\b[0-9a-fA-F]{32,}\b|\b[A-Za-z0-9+/_\-]{40,}={0,2}"), "<TOKEN>"),
)


def scrub(value: Any) -> str:
    """Report text with tracebacks cut and URLs, paths, host names and token-like strings masked."""
    text = _TRACEBACK.sub("(traceback withheld)", str(value if value is not None else ""))
    for pattern, mask in _SCRUB:
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
    return env


TEXT_FIELDS = ("title", "problem", "lesson", "evidence")


def context(con: duckdb.DuckDBPyConnection, run: dict[str, Any], tenant: str | None = None) -> dict[str, Any]:
    """Everything a template may use. No row here carries content of a quarantined or rejected record;
    lesson text is scrubbed of tracebacks, URLs, paths, hosts and tokens. With `tenant` (a tenant hash),
    only that tenant's lessons."""
    lessons = rows(con, """
        SELECT * FROM lessons WHERE ?::VARCHAR IS NULL OR tenant = ?::VARCHAR
        ORDER BY occurrences DESC, trace_count DESC, last_seen DESC, lesson_id""", [tenant, tenant])
    for lesson in lessons:
        lesson.update({k: scrub(lesson[k]) for k in TEXT_FIELDS if lesson.get(k) is not None})
    return {
        "run": {k: _plain(v) for k, v in run.items()},
        "tenant": tenant,
        "lessons": lessons,
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
        "totals": rows(con, """
            SELECT (SELECT count(*) FROM traces) AS traces, (SELECT count(*) FROM events) AS events,
                   (SELECT count(*) FROM detections) AS detections, (SELECT count(*) FROM lessons) AS lessons,
                   (SELECT count(DISTINCT trace_id) FROM quarantine) AS quarantined,
                   (SELECT count(*) FROM rejects) AS rejected""")[0],
    }


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
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
    names = sorted(n for n in env.list_templates(extensions=["j2"]) if not Path(n).name.startswith("_"))
    ctx = context(con, run, tenant)
    Path(out).mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        target = Path(out) / Path(name).name.removesuffix(".j2")
        _write_atomic(target, env.get_template(name).render(**ctx))
        written.append(str(target))
    return written
