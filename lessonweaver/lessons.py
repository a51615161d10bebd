"""Weave: group detections into lesson candidates.

A lesson is one problem however often it happens: its key is the detector, the trace's source and
task, and the evidence normalised (case, punctuation, numbers and ids folded, see lw_normalise). The
lesson_id is a hash of that key, so tomorrow's run updates today's lesson instead of adding another.
Lessons are rebuilt from all detections on every run; that is cheap, since detections are few next to
events, and it keeps them exact.
"""

import duckdb

from lessonweaver.crashpoints import reached
from lessonweaver.detectors import SEVERITIES, Detector

EXAMPLES = 5  # example trace ids kept per lesson


def register_detectors(con: duckdb.DuckDBPyConnection, detectors: list[Detector]) -> None:
    con.execute("DELETE FROM detectors")
    con.executemany(
        "INSERT INTO detectors VALUES (?, ?, ?, ?, ?)",
        [(d.id, d.title, d.severity, d.description, str(d.sql.path)) for d in detectors],
    )


def weave(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """Rebuild `lessons` from `detections` in one transaction; returns (new lessons, total lessons)."""
    rank = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(SEVERITIES))
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE previous_lessons AS SELECT lesson_id FROM lessons")
        con.execute("DELETE FROM lessons")
        con.execute(
            f"""
            INSERT INTO lessons BY NAME
            WITH d AS (
                SELECT d.*, t.source, t.task, t.tenant, CASE d.severity {rank} ELSE 2 END AS sev_rank
                FROM detections d JOIN traces t USING (trace_id)
                WHERE d.lesson_id IS NOT NULL
            )
            SELECT d.lesson_id,
                   any_value(d.detector) AS detector,
                   arg_max(d.severity, d.sev_rank) AS severity,
                   any_value(d.source) AS source,
                   any_value(d.task) AS task,
                   any_value(d.tenant) AS tenant,
                   coalesce(any_value(k.title), any_value(d.detector)) || ': ' || coalesce(any_value(d.task), '(no task)') AS title,
                   arg_min(coalesce(d.problem, d.evidence), (d.detected_at, d.trace_id, d.seq)) AS problem,
                   arg_min(d.lesson, (d.detected_at, d.trace_id, d.seq)) AS lesson,
                   arg_min(d.evidence, (d.detected_at, d.trace_id, d.seq)) AS evidence,
                   list_sort(list_distinct(list(d.trace_id)))[1:{EXAMPLES}] AS example_trace_ids,
                   count(*) AS occurrences,
                   count(DISTINCT d.trace_id) AS trace_count,
                   min(d.detected_at) AS first_seen,
                   max(d.detected_at) AS last_seen
            FROM d LEFT JOIN detectors k ON k.detector = d.detector
            GROUP BY d.lesson_id
            """
        )
        new, total = con.execute(
            """
            SELECT count(*) FILTER (WHERE lesson_id NOT IN (SELECT lesson_id FROM previous_lessons)), count(*)
            FROM lessons
            """
        ).fetchone()
        con.execute("DROP TABLE previous_lessons")
        reached("weave")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return new, total
