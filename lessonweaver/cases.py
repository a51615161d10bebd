"""A detector's own cases, run through the real staging sequence: `lessonweaver detectors test` and the
test suite both use this, so a user's detectors are tested exactly as the shipped ones are.

A case is one JSON file in the detector's `tests/positive/` or `tests/negative/` folder. It holds
`traces` (lessonweaver trace objects) or `records` (raw records of any format, written one per line to
a file named by `file`, default `records.jsonl`; a `file` ending in `.json` gets the records as one JSON
array, or a single record as a document). A positive case has `expect`, findings that must be among the
detector's (a `trace_id` and a piece of the `evidence`; optionally an `event_id`, a `severity`, a `tool`
and a `recovery_kind`, equal; a piece of the `problem`, `lesson`, `signature`, `recovery` or `title`; no
other field), and `count`, the exact number of findings; a negative case must yield none. Every record must
load.
"""

import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb

from lessonweaver.batch import connect_staging, stage_in
from lessonweaver.config import Settings
from lessonweaver.detectors import Detector
from lessonweaver.discover import discover
from lessonweaver.errors import safe_error
from lessonweaver.sqlfile import SqlFileError
from lessonweaver.words import plural

KINDS = ("positive", "negative")


@dataclass(frozen=True)
class Case:
    detector: Detector
    kind: str
    path: Path

    @property
    def name(self) -> str:
        return f"{self.detector.id}/{self.kind}/{self.path.stem}"


@dataclass(frozen=True)
class Outcome:
    name: str
    failure: str | None  # why it failed; None when it passed


def cases(d: Detector) -> list[Case]:
    """The detector's cases, positive first, by name."""
    if d.tests is None:
        return []
    return [Case(d, kind, p) for kind in KINDS for p in sorted((d.tests / kind).glob("*.json"))]


def write_given(spec: dict, folder: Path) -> Path:
    """Write a case's traces or records into `folder` as a trace file; returns its path."""
    name, records = ("traces.jsonl", spec["traces"]) if "traces" in spec else (spec.get("file", "records.jsonl"),
                                                                                spec["records"])
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if name.endswith(".json"):
        path.write_text(json.dumps(records if len(records) != 1 else records[0]), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def findings(d: Detector, path: Path) -> tuple[list[dict], list[str]]:
    """Stage the file at `path` in a private in-memory database, as a batch would, with only detector `d`:
    its findings, and the reasons any record was rejected. A detector that fails raises its error."""
    settings = Settings(threads=1, workers=1)
    con = connect_staging(settings)
    try:
        errors = stage_in(con, discover([str(path)]), settings, detector_list=[d])
        if errors:
            raise SqlFileError(errors[d.id])
        # a sealed finding (a quarantined trace's) is expected under the id its case gave the trace
        cur = con.execute(f"SELECT coalesce(x.trace_id, d.trace_id) AS trace_id, {', '.join('d.' + c for c in EXACT + PIECES)} "
                          "FROM detections d LEFT JOIN (SELECT DISTINCT sealed, trace_id FROM exposures) x "
                          "ON x.sealed = d.trace_id ORDER BY ALL")
        names = [c[0] for c in cur.description]
        found = [dict(zip(names, row)) for row in cur.fetchall()]
        rejects = [r[0] for r in con.execute("SELECT reason FROM rejects ORDER BY file_id, record").fetchall()]
    finally:
        con.close()
    return found, rejects


EXACT = ("event_id", "severity", "tool", "recovery_kind")  # an expected finding's fields that must be equal
PIECES = ("evidence", "problem", "lesson", "signature", "recovery", "title")  # and those it must hold a piece of


def _like(found: dict, want: dict) -> bool:
    return (found["trace_id"] == want["trace_id"]
            and all(found[k] == want[k] for k in EXACT if k in want)
            and all(str(want[k]) in (found[k] or "") for k in PIECES if k in want))


def judge(kind: str, spec: dict, found: list[dict]) -> str | None:
    """Why the findings `found` fail the case; None when they pass."""
    if kind == "negative":
        return f"expected no finding, found {len(found)}, the first: {found[0]['evidence']}" if found else None
    if not spec.get("expect"):
        return "a positive case needs `expect`: the findings it must yield"
    if not isinstance(spec.get("count"), int):
        return "a positive case needs `count`: the exact number of findings it yields"
    if not all(isinstance(want, dict) and want.get("evidence") for want in spec["expect"]):
        return "every expected finding needs a piece of its `evidence`: without one it matches any finding"
    # a misspelt field would be left unchecked, and the case pass on what it does not test
    unknown = sorted({k for want in spec["expect"] for k in want} - {"trace_id", *EXACT, *PIECES})
    if unknown:
        return (f"an expected finding names `{unknown[0]}`, which no finding has "
                f"(known: {', '.join(('trace_id', *EXACT, *PIECES))})")
    if not found:
        return "found nothing"
    for want in spec["expect"]:
        if not any(_like(f, want) for f in found):
            return f"no finding like {json.dumps(want)}; found {len(found)}"
    if len(found) != spec["count"]:
        return f"expected {plural(spec['count'], 'finding')}, found {len(found)}"
    if not all(f["evidence"] and f["lesson"] for f in found):
        return "a finding without evidence or lesson"
    return None


def run_case(case: Case) -> Outcome:
    """Run one case; a case that cannot be read or staged fails with the reason."""
    try:
        spec = json.loads(case.path.read_text(encoding="utf-8"))
        if not isinstance(spec, dict) or not ("traces" in spec or "records" in spec):
            return Outcome(case.name, "a case is a JSON object with `traces` or `records`")
        with tempfile.TemporaryDirectory(prefix="lessonweaver-case-") as folder:
            found, rejects = findings(case.detector, write_given(spec, Path(folder)))
    except (OSError, ValueError) as exc:  # a JSON error or the detector's SqlFileError
        return Outcome(case.name, str(exc))
    except duckdb.Error as exc:
        return Outcome(case.name, safe_error(exc))
    if rejects:
        return Outcome(case.name, f"{plural(len(rejects), 'record')} rejected, the first: {rejects[0]}")
    return Outcome(case.name, judge(case.kind, spec, found))


def run_all(detectors: list[Detector]) -> Iterator[Outcome]:
    """Every case of every detector in turn, and a failure for a detector without both kinds of case."""
    for d in detectors:
        found = cases(d)
        for kind in KINDS:
            if not any(c.kind == kind for c in found):
                where = d.tests / kind if d.tests else f"{d.sql.path.parent / d.id}/tests/{kind}"
                yield Outcome(f"{d.id}/{kind}", f"no {kind} case: add one as {where}/<case>.json")
        for case in found:
            yield run_case(case)
