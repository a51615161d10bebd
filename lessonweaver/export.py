"""Export: accepted lessons as a file an agent loads (a rules section for AGENTS.md, or JSON lines).

Only lessons a person accepted (`lessonweaver review accept`) are exported, with the text as edited.
The formats are Jinja templates in templates/export/ (`<format>.j2`), so a team can add its own with
--templates; text is scrubbed like every report.

Lessons come most severe first, then by id: not by priority, which moves every night, so the rules an
agent reads (`export --into`) change when a reviewer's decisions do, not when counts grow.
"""

from pathlib import Path

import duckdb

from lessonweaver import render
from lessonweaver.detectors import SEVERITIES


def formats(templates: str | None = None) -> list[str]:
    """The export formats there are templates for."""
    env = render.environment(templates)
    return sorted(Path(n).name.removesuffix(".j2") for n in env.list_templates(extensions=["j2"])
                  if n.startswith("export/"))


PROJECTS_SHOWN = 20  # projects a refused --project lists


def projects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every project of the stored traces, named as lessons name them (lw_project; a sealed trace keeps its own)."""
    return [r[0] for r in con.execute("""
        SELECT project FROM (SELECT lw_project(metadata, source) AS project FROM traces
                             UNION SELECT project FROM sealed_traces)
        WHERE project IS NOT NULL ORDER BY project""").fetchall()]


def known_project(con: duckdb.DuckDBPyConnection, given: str) -> str:
    """The project `given` names: the one of that name, else the only one that differs from it only in case
    (folder names do, from one machine to another). A name that matches none is a usage error that says
    which projects there are: exporting only the cross-project rules for a typo would look like success."""
    names = projects(con)
    if given in names:
        return given
    same = [n for n in names if n.casefold() == given.casefold()]
    if len(same) == 1:
        return same[0]
    if same:
        raise ValueError(f"--project {given}: several projects differ from it only in case: {', '.join(same)}")
    if not names:
        raise ValueError(f"--project {given}: the database holds no trace yet, so no project")
    shown = ", ".join(names[:PROJECTS_SHOWN]) + (f" and {len(names) - PROJECTS_SHOWN} more" if len(names) > PROJECTS_SHOWN else "")
    raise ValueError(f"--project {given}: no such project; the database's projects: {shown}")


def export(con: duckdb.DuckDBPyConnection, fmt: str, templates: str | None = None, project: str | None = None) -> str:
    """The accepted lessons, most severe first, rendered in format `fmt`; with `project`, only those seen
    in that project and those seen in several (a rule learnt in one repository may not hold in another)."""
    known = formats(templates)
    if fmt not in known:
        raise ValueError(f"unknown export format '{fmt}' (known: {', '.join(known)})")
    lessons = render.rows(con, """
        SELECT lesson_id, detector, severity, category, confidence, priority, status, source, task, title, lesson, occurrences,
               trace_count, first_night, last_night
        FROM lessons WHERE review = 'accepted'
          AND (?::VARCHAR IS NULL OR list_contains(projects, ?::VARCHAR) OR len(projects) > 1)
        ORDER BY list_position(?::VARCHAR[], severity) DESC NULLS LAST, lesson_id""", [project, project, list(SEVERITIES)])
    for lesson in lessons:
        lesson.update({k: render.scrub(lesson[k]) for k in ("title", "lesson") if lesson.get(k) is not None})
    env = render.environment(templates)
    return env.get_template(f"export/{fmt}.j2").render(lessons=lessons)
