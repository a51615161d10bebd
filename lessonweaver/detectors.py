"""Detect: run the SQL detectors over canonical `traces` and `events`.

A detector is one SQL file with a header (id, title, severity, description; optionally `lesson`, a
template for the proposed lesson with {evidence}, {task} and {source}; `category` and `confidence`, the
defaults for its findings) and one SELECT. The query must return `trace_id` and `evidence`; it may return
`event_id`, `seq`, `severity`, `problem`, `lesson`, `category`, `confidence` and `lesson_key`.

A detector meant for some formats only says so in its header (`formats: gdev, otlp`), not in its
query: the query then runs inside two CTEs named `traces` and `events` that hold only those formats'
traces and their events. It reads nothing it would throw away, and whatever it counts over traces
counts only its own.

Shipped detectors live in sql/detectors/<id>/<id>.sql beside their tests (lessonweaver.cases); a user
adds one by dropping a file, or a folder of that shape, into a folder passed with --detectors.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.adapters import load_adapters
from lessonweaver.errors import safe_error
from lessonweaver.packs import find_packs
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
CREATE OR REPLACE {kind} TABLE {table} (
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
    formats: tuple[str, ...] = ()  # read only traces of these formats; empty: every format
    tests: Path | None = None  # its folder of positive and negative cases (lessonweaver.cases)
    fingerprint: str = ""  # a hash of its header and query: tells a changed detector (lessonweaver.versions)


def _detector(f: SqlFile, tests: Path | None, known_formats: list[str]) -> Detector:
    f.require("id", "title", "severity", "description")
    h = f.header
    if not _ID.match(h["id"]):
        raise SqlFileError(f"{f.path}: id must be lowercase letters, digits and '_', starting with a letter")
    if h["severity"] not in SEVERITIES:
        raise SqlFileError(f"{f.path}: severity must be one of {', '.join(SEVERITIES)}")
    for key, allowed in (("category", CATEGORIES), ("confidence", CONFIDENCES)):
        if h.get(key, allowed[0]) not in allowed:
            raise SqlFileError(f"{f.path}: {key} must be one of {', '.join(allowed)}")
    if tests and h["id"] != f.path.parent.name:
        raise SqlFileError(f"{f.path}: id '{h['id']}' must be its folder's name, '{f.path.parent.name}'")
    formats = tuple(dict.fromkeys(x.strip() for x in h.get("formats", "").split(",") if x.strip()))
    unknown = [x for x in formats if x not in known_formats]
    if unknown:
        raise SqlFileError(f"{f.path}: formats: unknown format {', '.join(unknown)} (known: {', '.join(known_formats)})")
    fingerprint = hashlib.sha256(json.dumps([h, f.body], sort_keys=True).encode()).hexdigest()[:16]
    return Detector(h["id"], h["title"], h["severity"], h["description"], h.get("lesson", ""), f,
                    h.get("category", "agent"), h.get("confidence", "certain"), formats, tests, fingerprint)


def load_detectors(extra_dirs: tuple[str, ...] | list[str] = ()) -> list[Detector]:
    """The shipped detectors plus those in `extra_dirs`, by id; two files with one id is an error."""
    found: dict[str, Detector] = {}
    known_formats = [a.format for a in load_adapters()]
    read: set[Path] = set()
    for folder in (sql_path("detectors"), *map(Path, extra_dirs)):
        if not folder.is_dir():
            raise SqlFileError(f"detector folder does not exist: {folder}")
        if folder.resolve() in read:  # a folder named twice (the shipped one again, say) is read once
            continue
        read.add(folder.resolve())
        for pack in find_packs(folder):
            d = _detector(read_sql_file(pack.sql), pack.tests, known_formats)
            if d.id in found:
                raise SqlFileError(f"detector id '{d.id}' is defined twice: {found[d.id].sql.path} and {pack.sql}")
            found[d.id] = d
    return [found[k] for k in sorted(found)]


def scoped_query(d: Detector) -> str:
    """The detector's query, over only the traces (and their events) of its formats when it names some."""
    if not d.formats:
        return d.sql.body
    names = ", ".join(f"'{f}'" for f in d.formats)  # adapter format names: letters, digits, '-' and '_'
    # The body goes on lines of its own: a comment on its last line must not swallow the parenthesis.
    return (f"WITH traces AS (SELECT * FROM main.traces WHERE format IN ({names})),\n"
            "events AS (SELECT * FROM main.events SEMI JOIN traces USING (trace_id))\n"
            f"SELECT * FROM (\n{d.sql.body.rstrip().removesuffix(';')}\n)")


def run_detector(con: duckdb.DuckDBPyConnection, d: Detector, into: str = "detections") -> int:
    """Run one detector into the table `into` (shaped as DETECTIONS_TABLE); returns its row count. Raises
    SqlFileError on a bad result."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE detector_out AS {scoped_query(d)}")
    columns = {row[0] for row in con.execute("DESCRIBE detector_out").fetchall()}
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise SqlFileError(f"{d.sql.path}: the query must return {'column' if len(missing) == 1 else 'columns'} "
                           f"{', '.join(missing)}")
    pick = {c: (f"CAST(o.{c} AS VARCHAR)" if c in columns else "NULL") for c in OPTIONAL_COLUMNS}
    pick["seq"] = "CAST(o.seq AS INTEGER)" if "seq" in columns else "NULL"
    template = d.lesson or "{evidence}"
    key = f"nullif(trim({pick['lesson_key']}), '')"
    con.execute(
        f"""
        INSERT INTO {into} (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id,
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


def detect(con: duckdb.DuckDBPyConnection, detectors: list[Detector], into: str = "detections",
           temporary: bool = False) -> dict[str, str]:
    """Run every detector over the traces and events the connection sees (a batch's staged ones, or a
    database's stored ones for redetect) into the table `into`, made afresh; returns {detector id: error}
    for those that failed, which leave no rows."""
    con.execute(DETECTIONS_TABLE.format(kind="TEMP" if temporary else "", table=into))
    errors: dict[str, str] = {}
    for d in detectors:
        try:
            run_detector(con, d, into)
        except SqlFileError as exc:
            errors[d.id] = str(exc)
        except duckdb.Error as exc:
            errors[d.id] = f"{d.sql.path}: {safe_error(exc)}"
    return errors
