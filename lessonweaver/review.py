"""Review: a person accepts, rejects or edits a lesson candidate.

Decisions live in the `reviews` table, one row per lesson, and the weave reads them on every run: a
rejected lesson stays rejected (reports leave it out, and it never comes back as new), an accepted one
keeps its edited text. A decision also updates the `lessons` row at once, so reports and exports made
before the next run already show it. Edited text is screened like trace content: a reviewer cannot
paste a secret or personal data into what lessonweaver publishes.
"""

from dataclasses import asdict, dataclass
from typing import Any

import duckdb

DECISIONS = ("pending", "accepted", "rejected")
MAX_TEXT = 2000


class ReviewError(ValueError):
    """A review request that cannot be carried out (unknown lesson, bad text)."""


def resolve_id(con: duckdb.DuckDBPyConnection, lesson_id: str) -> str:
    """The lesson a full id or a unique prefix of one names."""
    found = [r[0] for r in con.execute(
        "SELECT lesson_id FROM lessons WHERE starts_with(lesson_id, ?) ORDER BY lesson_id LIMIT 3",
        [lesson_id.strip()]).fetchall()] if lesson_id.strip() else []
    if not found:
        raise ReviewError(f"no lesson '{lesson_id}' (list them with: lessonweaver review)")
    if len(found) > 1 and lesson_id not in found:
        raise ReviewError(f"'{lesson_id}' names more than one lesson ({', '.join(found[:2])}, ...): give more of the id")
    return lesson_id if lesson_id in found else found[0]


def check_text(con: duckdb.DuckDBPyConnection, text: str) -> str:
    """Reviewer text, trimmed; refused (without repeating it) when empty, too long, or sensitive."""
    text = " ".join(text.split())
    if not text:
        raise ReviewError("the lesson text is empty")
    if len(text) > MAX_TEXT:
        raise ReviewError(f"the lesson text is {len(text)} characters; at most {MAX_TEXT}")
    from lessonweaver import privacy  # the PII libraries load only when a text is checked

    privacy.find(con, "SELECT 1 AS k, ?::VARCHAR AS text", ("k",), [text])
    kinds = sorted({k for (k,) in con.execute("SELECT DISTINCT kind FROM scan_hits").fetchall()})
    if kinds:
        raise ReviewError("the lesson text looks like it holds sensitive data (" + ", ".join(kinds)
                          + "); it was not saved")
    return text


def decide(con: duckdb.DuckDBPyConnection, lesson_id: str, decision: str | None = None,
           text: str | None = None, note: str | None = None) -> dict[str, Any]:
    """Record a decision on one lesson (see decide_all); returns the lesson as it now stands."""
    return decide_all(con, [lesson_id], decision, text, note)[0]


def decide_all(con: duckdb.DuckDBPyConnection, lesson_ids: list[str], decision: str | None = None,
               text: str | None = None, note: str | None = None) -> list[dict[str, Any]]:
    """Record a decision (or, with decision None, keep the current one) and optionally new lesson text, on
    every lesson named, in one transaction: when one id names no lesson (or several), none is changed.
    New text goes with one lesson only. Returns the lessons as they now stand, in the order named."""
    if decision is not None and decision not in DECISIONS:
        raise ReviewError(f"decision must be one of {', '.join(DECISIONS)}")
    ids = list(dict.fromkeys(resolve_id(con, lesson_id) for lesson_id in lesson_ids))
    if text is not None and len(ids) != 1:
        raise ReviewError("--text goes with one lesson: give one lesson id")
    if text is not None:
        text = check_text(con, text)
    if note is not None:
        note = check_text(con, note)
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            """
            CREATE OR REPLACE TEMP TABLE review_new AS
            SELECT i.lesson_id, coalesce($decision::VARCHAR, r.decision, 'pending') AS decision,
                   coalesce($text::VARCHAR, r.text) AS text, coalesce($note::VARCHAR, r.note) AS note,
                   now()::TIMESTAMP AS decided_at
            FROM (SELECT unnest($ids::VARCHAR[]) AS lesson_id) i LEFT JOIN reviews r USING (lesson_id)
            """, {"decision": decision, "text": text, "note": note, "ids": ids})
        con.execute("DELETE FROM reviews WHERE lesson_id IN (SELECT lesson_id FROM review_new)")
        con.execute("INSERT INTO reviews BY NAME SELECT * FROM review_new")
        con.execute(
            """
            UPDATE lessons SET review = r.decision, lesson = coalesce(r.text, lessons.proposed_lesson)
            FROM review_new r WHERE lessons.lesson_id = r.lesson_id
            """
        )
        con.execute("DROP TABLE review_new")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return [candidates(con, Filters(decision=None), lesson_id)[0] for lesson_id in ids]


@dataclass(frozen=True)
class Filters:
    """Which lessons a listing shows; None: any."""
    decision: str | None = "pending"
    detector: str | None = None
    source: str | None = None
    severity: str | None = None
    status: str | None = None


def candidates(con: duckdb.DuckDBPyConnection, filters: Filters = Filters(), lesson_id: str | None = None,
               limit: int | None = None) -> list[dict[str, Any]]:
    """Lessons by priority, with their review state, that pass `filters` (or the one lesson `lesson_id`);
    each row carries `matching`, how many lessons pass before `limit` cuts the list."""
    return con.sql(
        """
        SELECT l.lesson_id, l.review, l.status, l.severity, l.priority, l.occurrences, l.trace_count,
               l.detector, l.source, l.task, l.category, l.confidence, l.title, l.problem, l.evidence,
               l.lesson, l.proposed_lesson, l.example_trace_ids, l.first_night, l.last_night, l.nights_seen,
               l.variants, l.recovery, l.frequency, l.projects, l.detectors, l.wasted_steps,
               r.note, r.decided_at, count(*) OVER () AS matching
        FROM lessons l LEFT JOIN reviews r USING (lesson_id)
        WHERE ($decision::VARCHAR IS NULL OR l.review = $decision) AND ($id::VARCHAR IS NULL OR l.lesson_id = $id)
          AND ($detector::VARCHAR IS NULL OR list_contains(coalesce(l.detectors, [l.detector]), $detector))
          AND ($source::VARCHAR IS NULL OR l.source = $source)
          AND ($severity::VARCHAR IS NULL OR l.severity = $severity)
          AND ($status::VARCHAR IS NULL OR l.status = $status)
        ORDER BY l.priority DESC, l.lesson_id
        LIMIT $limit
        """,
        params={**asdict(filters), "id": lesson_id, "limit": limit if limit is not None else 1 << 62},
    ).pl().to_dicts()


def sightings(con: duckdb.DuckDBPyConnection, lesson_id: str) -> list[tuple[Any, int, int]]:
    """What each night saw of a lesson: (night, occurrences, traces), oldest first."""
    return con.execute("SELECT night, sum(occurrences)::BIGINT, sum(traces)::BIGINT FROM sightings "
                       "WHERE lesson_id = ? GROUP BY night ORDER BY night", [lesson_id]).fetchall()
