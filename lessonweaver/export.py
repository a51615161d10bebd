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
