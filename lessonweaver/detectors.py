"""Detect: run the SQL detectors over canonical `traces` and `events`.

A detector is one SQL file with a header (id, title, severity, description; optionally `lesson`, a
template for the proposed lesson with {evidence}, {task} and {source}; `category` and `confidence`, the
defaults for its findings; `family`, the detectors whose findings of one signature are one cause;
`floor: none`, when even a one-off finding is worth a lesson, its cost being in its nature) and
one SELECT. The query must return `trace_id` and `evidence`; it may return `event_id`, `seq`,
`severity`, `problem`, `lesson`, `category`, `confidence`, and what the lesson is built from: `signature`
(the cause, with what varies masked; `lesson_key` is its older name; default: the evidence masked),
`family` (for a finding whose cause is another family's: a retry of the environment's failure weaves into
the environment's lesson),
`tool` (what the finding is about: a tool, or the program a shell ran), `recovery` and `recovery_kind`
(what worked, see sql/facts/facts.sql), `wasted_steps` (the calls it cost) and `title` (the cause in a
few words; default: the detector's title and the evidence).

A query reads `traces`, `events`, `exposures` (where the agent showed a secret, in traces the screen
quarantined: sql/facts/exposures.sql), `facts` (one row per event with what every detector would otherwise
work out again: who acted, a call's result, whether it failed and why, what worked after; built once
per batch from sql/facts/facts.sql) and `turns` (what each turn of a person or a counterpart means: a
correction, an instruction, an answer...; sql/facts/turns.sql).

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
from lessonweaver.queries import execute
from lessonweaver.resources import sql_path
from lessonweaver.sqlfile import SqlFile, SqlFileError, read_sql_file

SEVERITIES = ("info", "low", "medium", "high", "critical")
# Whose problem a finding is: the agent's, its environment's (a provider, a key, the network: for
# operators), a policy's, or a flag its producer set. How sure: read from a record (certain) or inferred
# from the conversation (likely). Reports rank by both.
CATEGORIES = ("agent", "environment", "policy", "producer_flag")
CONFIDENCES = ("certain", "likely")
REQUIRED_COLUMNS = ("trace_id", "evidence")
OPTIONAL_COLUMNS = ("event_id", "seq", "severity", "problem", "lesson", "category", "confidence", "signature", "family",
                    "tool", "recovery", "recovery_kind", "wasted_steps", "title")
RECOVERY_KINDS = ("changed", "again", "other", "correction", "final_answer")
_ID = re.compile(r"^[a-z][a-z0-9_]*$")

DETECTIONS_TABLE = """
CREATE OR REPLACE {kind} TABLE {table} (
    detector VARCHAR, trace_id VARCHAR, event_id VARCHAR, seq INTEGER, severity VARCHAR,
    evidence VARCHAR, problem VARCHAR, lesson VARCHAR, lesson_id VARCHAR,
    category VARCHAR, confidence VARCHAR, signature VARCHAR, family VARCHAR, tool VARCHAR,
    recovery VARCHAR, recovery_kind VARCHAR, wasted_steps INTEGER, title VARCHAR
);
"""

# A cause is a family of detectors and a signature (what went wrong, with what varies masked): the
# task, the source and the tenant are context, never identity, so one cause seen in many tasks,
# sessions and tenants is one lesson (per-tenant reports filter it: lessons.py). Its id is a hash of that
# key, set as a detection is inserted (the family as {family}, its trace as `t`, the signature as
# {signature}); the weave may merge it into a lesson worded alike (lesson_variants). Traces whose producer
# set lesson_candidate to false keep their detections but join no lesson; a detection of a trace that is
# not staged joins none either, unless it is sealed (a quarantined trace's, under a hash: secret_exposed).
LESSON_ID = """
    CASE WHEN starts_with(CAST(o.trace_id AS VARCHAR), 'sealed-') AND t.trace_id IS NULL
              THEN 'L' || substr(md5({family} || '|' || {signature}), 1, 12)
         WHEN t.trace_id IS NULL OR lw_falsy(t.metadata->>'lesson_candidate') THEN NULL
         ELSE 'L' || substr(md5({family} || '|' || {signature}), 1, 12)
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
    family: str = ""  # detectors whose findings of one signature are one cause (default: its own id)
    floor: bool = True  # a one-off finding of it is no lesson (the noise floor); `floor: none` in the header: always one
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
    family = h.get("family", h["id"]).strip()
    if not _ID.match(family):
        raise SqlFileError(f"{f.path}: family must be lowercase letters, digits and '_', starting with a letter")
    if h.get("floor", "").strip() not in ("", "none"):
        raise SqlFileError(f"{f.path}: floor may only be 'none' (every finding a lesson, even once)")
    return Detector(h["id"], h["title"], h["severity"], h["description"], h.get("lesson", ""), f,
                    category=h.get("category", "agent"), confidence=h.get("confidence", "certain"), formats=formats,
                    tests=tests, fingerprint=fingerprint, family=family, floor=h.get("floor", "").strip() != "none")


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
            "events AS (SELECT * FROM main.events SEMI JOIN traces USING (trace_id)),\n"
            "facts AS (SELECT * FROM temp.main.facts SEMI JOIN traces USING (trace_id)),\n"
            "turns AS (SELECT * FROM temp.main.turns SEMI JOIN traces USING (trace_id))\n"
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
    if "signature" not in columns and "lesson_key" in columns:  # its older name
        con.execute("ALTER TABLE detector_out RENAME COLUMN lesson_key TO signature")
        columns = (columns - {"lesson_key"}) | {"signature"}
    pick = {c: (f"CAST(o.{c} AS VARCHAR)" if c in columns else "NULL") for c in OPTIONAL_COLUMNS}
    pick["seq"] = "CAST(o.seq AS INTEGER)" if "seq" in columns else "NULL"
    pick["wasted_steps"] = "TRY_CAST(o.wasted_steps AS INTEGER)" if "wasted_steps" in columns else "NULL"
    template = d.lesson or "{evidence}"
    # the cause: what the detector says it is, else its evidence with what varies masked
    signature = f"coalesce(nullif(trim({pick['signature']}), ''), lw_mask(CAST(o.evidence AS VARCHAR)))"
    # the family: the row's, where its cause is another family's, else the header's (or the detector's id)
    family = f"coalesce(nullif(trim({pick['family']}), ''), ?)"
    kinds = ", ".join(f"'{k}'" for k in RECOVERY_KINDS)
    con.execute(
        f"""
        INSERT INTO {into} (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id,
                            category, confidence, signature, family, tool, recovery, recovery_kind, wasted_steps,
                            title)
        SELECT ?, CAST(o.trace_id AS VARCHAR), {pick['event_id']}, {pick['seq']},
               coalesce(lower({pick['severity']}), ?),
               CAST(o.evidence AS VARCHAR),
               {pick['problem']},
               coalesce({pick['lesson']},
                        replace(replace(replace(?, '{{evidence}}', coalesce(CAST(o.evidence AS VARCHAR), '')),
                                        '{{task}}', coalesce(t.task, '')),
                                '{{source}}', coalesce(t.source, ''))),
               {LESSON_ID.format(family=family, signature=signature)},
               CASE WHEN lower({pick['category']}) IN {CATEGORIES} THEN lower({pick['category']}) ELSE ? END,
               CASE WHEN lower({pick['confidence']}) IN {CONFIDENCES} THEN lower({pick['confidence']}) ELSE ? END,
               {signature}, {family}, nullif(trim({pick['tool']}), ''), nullif(trim({pick['recovery']}), ''),
               CASE WHEN lower({pick['recovery_kind']}) IN ({kinds}) THEN lower({pick['recovery_kind']}) END,
               {pick['wasted_steps']}, nullif(trim({pick['title']}), '')
        FROM detector_out o LEFT JOIN traces t ON t.trace_id = CAST(o.trace_id AS VARCHAR)
        """,
        [d.id, d.severity, template, d.family or d.id, d.family or d.id, d.category, d.confidence, d.family or d.id],
    )
    n = con.execute("SELECT count(*) FROM detector_out").fetchone()[0]
    con.execute("DROP TABLE detector_out")
    return n


def detect(con: duckdb.DuckDBPyConnection, detectors: list[Detector], into: str = "detections",
           temporary: bool = False) -> dict[str, str]:
    """Run every detector over the traces and events the connection sees (a batch's staged ones, or a
    database's stored ones for redetect) into the table `into`, made afresh; returns {detector id: error}
    for those that failed, which leave no rows."""
    # here, not at the top: review, export and show read detector files, and need not load the scan's
    # validators (phonenumbers, stdnum) that privacy brings
    from lessonweaver import privacy

    con.execute(DETECTIONS_TABLE.format(kind="TEMP" if temporary else "", table=into))
    execute(con, "facts/exposures.sql")
    privacy.exposures_of_kept(con)
    execute(con, "facts/facts.sql")
    execute(con, "facts/turns.sql")  # kept after the facts go: a batch writes it out, a redetect stores it
    errors: dict[str, str] = {}
    for d in detectors:
        try:
            run_detector(con, d, into)
        except SqlFileError as exc:
            errors[d.id] = str(exc)
        except duckdb.Error as exc:
            errors[d.id] = f"{d.sql.path}: {safe_error(exc)}"
    con.execute("DROP TABLE facts")
    return errors
