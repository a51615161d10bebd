"""Serve: the lessons a person accepted, to agents that ask for them, over the Model Context Protocol.

`lessonweaver mcp --db X` runs a stdio MCP server (the official `mcp` SDK) with three read-only tools: search
the lessons by words, tool, file or project; list the lessons for the project or path an agent works in;
show one lesson with its evidence and history. The plain functions below do the work and the server only
wraps them, so they are tested on their own as well as through an MCP client.

What comes out passes the same guards as a report: lesson text is scrubbed (render.scrub), a tenant sees
only its own findings (lessons_for), and every answer is audited (audit.audit_text: secrets, PII and
quarantined trace ids) before it leaves; an answer that fails is withheld. The database is opened read-only
for each call and closed after it, so a server left running never holds the file a nightly run writes.
"""

import json
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

import duckdb

from lessonweaver import audit, render, review, store

FIELDS = ("lesson_id", "title", "lesson", "severity", "status", "detector", "tool", "projects", "frequency",
          "last_night")
DETAIL = FIELDS + ("problem", "evidence", "recovery", "category", "confidence", "review", "occurrences",
                   "trace_count", "first_night", "nights_seen", "example_trace_ids")
TEXT = ("title", "lesson", "problem", "evidence", "recovery")
MAX_LIMIT = 50
INSTRUCTIONS = ("Lessons learnt from this team's agent runs, each a rule a person reviewed. Before you start "
                "work in a project, call lessons_for_path with its folder; search_lessons finds rules about a "
                "tool, file or error; show_lesson gives one rule's evidence and history.")


class ServeError(ValueError):
    """A request the lessons cannot answer (an unknown id, a limit out of range): one line."""


class Lessons:
    """The lessons one server answers from: a database; a tenant (its lessons, with its own findings' texts),
    or none (then only lessons no tenant's traces showed: nothing of a tenant comes out unless it is named);
    and whether lessons still pending review are served besides the accepted ones."""

    def __init__(self, db: str, tenant: str | None = None, pending: bool = False):
        self.db, self.pending = db, pending
        con = self._open()
        try:
            from lessonweaver import pipeline

            from lessonweaver.config import Settings

            self.tenant = pipeline.tenant_key(con, tenant, Settings().tenant_salt) if tenant else None
        finally:
            con.close()

    def _open(self) -> duckdb.DuckDBPyConnection:
        store.require_current_lessons(self.db)
        return store.connect(self.db, read_only=True)

    def _query(self, where: str, params: list[Any], limit: int) -> list[dict[str, Any]]:
        reviews = ["accepted", "pending"] if self.pending else ["accepted"]
        con = self._open()
        try:
            found = render.rows(con, f"""
                SELECT * FROM lessons_for(?::VARCHAR)
                WHERE list_contains(?::VARCHAR[], review) AND (?::VARCHAR IS NOT NULL OR tenants = 0) AND ({where})
                ORDER BY priority DESC, lesson_id LIMIT {int(limit)}""", [self.tenant, reviews, self.tenant, *params])
        finally:
            con.close()
        for lesson in found:
            lesson.update({k: render.scrub(lesson[k]) for k in TEXT if lesson.get(k) is not None})
            lesson["example_trace_ids"] = [t for t in lesson.get("example_trace_ids") or []]
        return found

    def search(self, words: str = "", tool: str = "", file: str = "", project: str = "", limit: int = 10) -> dict:
        """Lessons holding every one of `words` (in their title, rule, problem or evidence), about `tool`,
        naming `file`, or seen in `project`; each given filter must hold."""
        terms = [w.lower() for w in words.split()]
        found = self._query(
            """coalesce(list_bool_and(list_transform(?::VARCHAR[], lambda w: contains(lower(concat_ws(' ', title, lesson,
                                                             problem, evidence, detector, tool)), w))), true)
               AND (?::VARCHAR = '' OR lower(tool) = lower(?::VARCHAR) OR starts_with(lower(tool), lower(?::VARCHAR) || ' '))
               AND (?::VARCHAR = '' OR contains(lower(concat_ws(' ', lesson, evidence, problem, recovery)), lower(?::VARCHAR)))
               AND (?::VARCHAR = '' OR list_contains(projects, ?::VARCHAR))""",
            [terms, tool, tool, tool, file, file, project, project], _limit(limit))
        return {"lessons": [_pick(x, FIELDS) for x in found], "count": len(found)}

    def for_path(self, path: str, limit: int = 20) -> dict:
        """The lessons for where an agent works: those seen in a project named by a folder of `path`, those
        seen in several projects (rules that hold across repositories), and those naming its file."""
        parts = [p for p in PurePath(path).parts if p not in ("/", "\\", "") and not p.endswith(":\\")]
        name = PurePath(path).name if PurePath(path).suffix else ""
        found = self._query(
            """len(list_intersect(projects, ?::VARCHAR[])) > 0 OR len(projects) > 1
               OR (?::VARCHAR <> '' AND contains(concat_ws(' ', lesson, evidence), ?::VARCHAR))""",
            [parts, name, name], _limit(limit))
        return {"path": path, "lessons": [_pick(x, FIELDS) for x in found], "count": len(found)}

    def show(self, lesson_id: str) -> dict:
        """One lesson in full: its rule, what went wrong, the evidence, what worked, and the nights it was seen
        (counted over every tenant's runs, so a tenant's server leaves them out)."""
        con = self._open()
        try:
            full = review.resolve_id(con, lesson_id)
            history = None if self.tenant else [{"night": str(n), "occurrences": o, "traces": t}
                                                for n, o, t in review.sightings(con, full)]
        except review.ReviewError as exc:
            raise ServeError(str(exc)) from None
        finally:
            con.close()
        found = self._query("lesson_id = ?", [full], 1)
        if not found:
            raise ServeError(f"lesson {full} is not served here (only accepted lessons"
                             + (" and those pending review" if self.pending else "")
                             + (", of this tenant)" if self.tenant else ", of traces without a tenant: name one with --tenant)"))
        return {**_pick(found[0], DETAIL), "history": history}

    def audited(self, answer: dict) -> str:
        """The answer as JSON, once the audit finds nothing in it; else ServeError, naming only the kinds."""
        text = json.dumps(answer, default=str, ensure_ascii=False, indent=1)
        con = self._open()
        try:
            findings = audit.audit_text(con, "answer", text)
        finally:
            con.close()
        if findings:
            raise ServeError("the answer was withheld: the audit found " + ", ".join(sorted({f.kind for f in findings})))
        return text


def _limit(limit: int) -> int:
    if not 1 <= int(limit) <= MAX_LIMIT:
        raise ServeError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    return int(limit)


def _pick(lesson: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: (str(lesson[k]) if k.endswith("_night") and lesson.get(k) is not None else lesson.get(k)) for k in keys}


def server(lessons: Lessons) -> Any:
    """The MCP server over `lessons`: its tools are read-only and answer in audited JSON."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    from lessonweaver import __version__

    app = MCPServer("lessonweaver", instructions=INSTRUCTIONS, version=__version__)
    read_only = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)

    def answer(make: Callable[[], dict]) -> str:
        try:
            return lessons.audited(make())
        except ServeError as exc:
            return json.dumps({"error": str(exc)})

    @app.tool(annotations=read_only)
    def search_lessons(words: str = "", tool: str = "", file: str = "", project: str = "", limit: int = 10) -> str:
        """Search the team's reviewed lessons. words: all must appear (title, rule, evidence); tool: a tool
        or program (`pytest`, `git push`, `Bash`); file: a file name the rule or evidence names; project: a
        project's name. Returns the matching rules, most important first."""
        return answer(lambda: lessons.search(words, tool, file, project, limit))

    @app.tool(annotations=read_only)
    def lessons_for_path(path: str, limit: int = 20) -> str:
        """The reviewed lessons for the project or file you work in (give its folder or a file's path): rules
        seen in that project, rules seen across projects, and rules naming that file. Read them before you start."""
        return answer(lambda: lessons.for_path(path, limit))

    @app.tool(annotations=read_only)
    def show_lesson(lesson_id: str) -> str:
        """One lesson in full: the rule, what went wrong, the evidence, what worked instead, how often and on
        which nights it was seen. lesson_id: an id from the other tools (a unique start of one is enough)."""
        return answer(lambda: lessons.show(lesson_id))

    return app
