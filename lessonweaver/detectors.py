"""Detect: run the SQL detectors over canonical `traces` and `events`.

A detector is one SQL file with a header (id, title, severity, description; optionally `lesson`, a
template for the proposed lesson with {evidence}, {task} and {source}; `category` and `confidence`, the
defaults for its findings) and one SELECT. The query must return `trace_id` and `evidence`; it may return
`event_id`, `seq`, `severity`, `problem`, `lesson`, `category`, `confidence` and `lesson_key`.
Shipped detectors live in sql/detectors/; a user adds one by dropping a file into a folder passed
with --detectors.
"""

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.errors import safe_error
from lessonweaver.resources import sql_path
from lessonweaver.sqlfile import SqlFile, SqlFileError, read_sql_file

SEVERITIES = ("info", "low", "medium", "high", "critical")
# Whose problem a finding is: the agent's, its environment's (a provider, a key, the network: for
# operators), a policy's, or a flag its producer set. How sure: read from a record (certain) or inferred
# from the conversation (likely). Reports rank by both.
CATEGORIES = ("agent", "environment", "policy", "producer_flag")
CONFIDENCES = ("certain", "likely")
REQUIRED_COLUMNS = ("trace_id", "evidence")
OPTIONAL_COLUMNS = ("event_id", "seq", "severity", "problem", "lesson", "category", "confidence", "lesson_key")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")

DETECTIONS_TABLE = """
CREATE OR REPLACE TABLE detections (
    detector VARCHAR, trace_id VARCHAR, event_id VARCHAR, seq INTEGER, severity VARCHAR,
    evidence VARCHAR, problem VARCHAR, lesson VARCHAR, lesson_id VARCHAR,
    category VARCHAR, confidence VARCHAR, lesson_key VARCHAR
);
"""

# A lesson is a detector, source, task and normalised evidence; its id is a hash of that key, set as a
# detection is inserted (with the detector id as the last parameters, its trace as `t` and its lesson key
# as {key}). A detector that returns a lesson key groups by it instead (one provider outage over
# many tasks is one lesson). A tenant's traces make their own lessons, so no lesson shows one tenant's
# evidence under another's. Traces whose producer set lesson_candidate to false keep their detections but
# join no lesson; a detection of a trace that is not staged joins none either.
LESSON_ID = """
    CASE WHEN t.trace_id IS NULL OR lw_falsy(t.metadata->>'lesson_candidate') THEN NULL
         ELSE 'L' || substr(md5(coalesce(
                   '|key|' || ? || '|' || {key},
                   concat_ws('|', ?, coalesce(t.source, ''), coalesce(t.task, ''),
                             lw_normalise(CAST(o.evidence AS VARCHAR))))
                || coalesce('|' || t.tenant, '')), 1, 12)
    END"""


@dataclass(frozen=True)
class Detector:
    id: str
    title: str
    severity: str
    description: str
    lesson: str
    sql: SqlFile
    category: str = "agent"
    confidence: str = "certain"


def _detector(f: SqlFile) -> Detector:
    f.require("id", "title", "severity", "description")
    h = f.header
    if not _ID.match(h["id"]):
        raise SqlFileError(f"{f.path}: id must be lowercase letters, digits and '_', starting with a letter")
    if h["severity"] not in SEVERITIES:
        raise SqlFileError(f"{f.path}: severity must be one of {', '.join(SEVERITIES)}")
    for key, allowed in (("category", CATEGORIES), ("confidence", CONFIDENCES)):
        if h.get(key, allowed[0]) not in allowed:
            raise SqlFileError(f"{f.path}: {key} must be one of {', '.join(allowed)}")
    return Detector(h["id"], h["title"], h["severity"], h["description"], h.get("lesson", ""), f,
                    h.get("category", "agent"), h.get("confidence", "certain"))


def load_detectors(extra_dirs: tuple[str, ...] | list[str] = ()) -> list[Detector]:
    """The shipped detectors plus those in `extra_dirs`, by id; two files with one id is an error."""
    found: dict[str, Detector] = {}
    for folder in (sql_path("detectors"), *map(Path, extra_dirs)):
        if not folder.is_dir():
            raise SqlFileError(f"detector folder does not exist: {folder}")
        for path in sorted(folder.glob("*.sql")):
            d = _detector(read_sql_file(path))
            if d.id in found:
                raise SqlFileError(f"detector id '{d.id}' is defined twice: {found[d.id].sql.path} and {path}")
            found[d.id] = d
    return [found[k] for k in sorted(found)]


def run_detector(con: duckdb.DuckDBPyConnection, d: Detector) -> int:
    """Run one detector into `detections`; returns its row count. Raises SqlFileError on a bad result."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE detector_out AS {d.sql.body}")
    columns = {row[0] for row in con.execute("DESCRIBE detector_out").fetchall()}
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise SqlFileError(f"{d.sql.path}: the query must return column(s) {', '.join(missing)}")
    pick = {c: (f"CAST(o.{c} AS VARCHAR)" if c in columns else "NULL") for c in OPTIONAL_COLUMNS}
    pick["seq"] = "CAST(o.seq AS INTEGER)" if "seq" in columns else "NULL"
    template = d.lesson or "{evidence}"
    key = f"nullif(trim({pick['lesson_key']}), '')"
    con.execute(
        f"""
        INSERT INTO detections (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id,
                                category, confidence, lesson_key)
        SELECT ?, CAST(o.trace_id AS VARCHAR), {pick['event_id']}, {pick['seq']},
               coalesce(lower({pick['severity']}), ?),
               CAST(o.evidence AS VARCHAR),
               {pick['problem']},
               coalesce({pick['lesson']},
                        replace(replace(replace(?, '{{evidence}}', coalesce(CAST(o.evidence AS VARCHAR), '')),
                                        '{{task}}', coalesce(t.task, '')),
                                '{{source}}', coalesce(t.source, ''))),
               {LESSON_ID.format(key=key)},
               CASE WHEN lower({pick['category']}) IN {CATEGORIES} THEN lower({pick['category']}) ELSE ? END,
               CASE WHEN lower({pick['confidence']}) IN {CONFIDENCES} THEN lower({pick['confidence']}) ELSE ? END,
               {key}
        FROM detector_out o LEFT JOIN traces t ON t.trace_id = CAST(o.trace_id AS VARCHAR)
        """,
        [d.id, d.severity, template, d.id, d.id, d.category, d.confidence],
    )
    n = con.execute("SELECT count(*) FROM detector_out").fetchone()[0]
    con.execute("DROP TABLE detector_out")
    return n


def detect(con: duckdb.DuckDBPyConnection, detectors: list[Detector]) -> dict[str, str]:
    """Run every detector over the staged traces; returns {detector id: error} for those that failed."""
    con.execute(DETECTIONS_TABLE)
    errors: dict[str, str] = {}
    for d in detectors:
        try:
            run_detector(con, d)
        except SqlFileError as exc:
            errors[d.id] = str(exc)
        except duckdb.Error as exc:
            errors[d.id] = f"{d.sql.path}: {safe_error(exc)}"
    return errors
