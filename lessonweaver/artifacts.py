"""What a nightly run shows in the Prefect UI: a Markdown summary of the night and a table of its top lessons.

Both are built from the database after the reports passed their audit, and follow the reports' rules:
the summary carries counts, ids and our own report paths only; lesson titles are scrubbed like report
text (`render.scrub`); nothing comes from quarantined or rejected records (lessons never do). With a
tenant, only that tenant's lessons, as in the reports. Rejected lessons are left out, as in the reports.
The keys are stable, so each night adds a version of the same two artifacts.
"""

from typing import Any

import duckdb

from lessonweaver.lessons import STATUSES
from lessonweaver.render import md_inline
from lessonweaver.scrub import one_line
from lessonweaver.summary import RunSummary

SUMMARY_KEY = "lessonweaver-summary"
TOP_LESSONS_KEY = "lessonweaver-top-lessons"
TOP_LESSONS = 20  # rows in the table artifact
TOP_LESSON_COLUMNS = ("lesson_id", "status", "severity", "priority", "occurrences", "traces", "title")

_OPEN_LESSONS = "FROM lessons_for(?::VARCHAR) WHERE review IS DISTINCT FROM 'rejected'"


def lesson_statuses(con: duckdb.DuckDBPyConnection, tenant: str | None = None) -> dict[str, int]:
    """Lessons per lifecycle status (every status present, zero when none), as the reports count them."""
    found = dict(con.execute(f"SELECT status, count(*) {_OPEN_LESSONS} GROUP BY status", [tenant]).fetchall())
    return {s: int(found.get(s, 0)) for s in STATUSES}


def top_lessons(con: duckdb.DuckDBPyConnection, tenant: str | None = None, limit: int = TOP_LESSONS) -> list[dict[str, Any]]:
    """The highest-priority lessons as plain rows for a table artifact; titles scrubbed and on one line."""
    cur = con.execute(
        f"""
        SELECT lesson_id, status, severity, round(coalesce(priority, 0), 2) AS priority,
               occurrences, trace_count AS traces, title
        {_OPEN_LESSONS}
        ORDER BY priority DESC NULLS LAST, occurrences DESC, lesson_id
        LIMIT ?
        """,
        [tenant, limit],
    )
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    for row in rows:
        row["title"] = one_line(row["title"])
        row["priority"] = float(row["priority"])
    return rows


def summary_markdown(run: RunSummary, statuses: dict[str, int]) -> str:
    """The night in a few lines of Markdown: counts per stage and detector, lesson lifecycle, report paths."""
    by_detector = run.detections_by_detector
    lines = [
        f"# lessonweaver: night {run.night}",
        "",
        f"Run `{run.run_id}`, status {run.status}.",
        "",
        "| records | count |",
        "|---|---:|",
        f"| loaded | {run.records_loaded} |",
        f"| quarantined | {run.records_quarantined} |",
        f"| rejected | {run.records_rejected} |",
        "",
        f"**Detections this run:** {sum(by_detector.values())}",
        "",
    ]
    if by_detector:
        lines += ["| detector | detections |", "|---|---:|"]
        lines += [f"| {md_inline(d)} | {n} |" for d, n in sorted(by_detector.items(), key=lambda kv: (-kv[1], kv[0]))]
        lines.append("")
    if run.stale_detectors:
        lines += ["**Detectors changed or added since the stored traces were detected:** "
                  + ", ".join(f"{md_inline(d)} ({why})" for d, why in run.stale_detectors.items())
                  + "; `lessonweaver redetect` runs them over every stored trace.", ""]
    lines += [
        f"**Lessons:** {statuses['new']} new, {statuses['regressed']} regressed, {statuses['resolved']} resolved, "
        f"{statuses['recurring']} recurring, {statuses['open']} open; {sum(statuses.values())} total.",
        "",
        "**Reports:**",
        "",
    ]
    lines += [f"- `{path}`" for path in run.written] or ["- (none written)"]
    return "\n".join(lines) + "\n"
