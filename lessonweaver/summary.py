"""What a run did: one typed value that the pipeline fills, the `runs` table stores, and the CLI, the
Prefect artifacts, backfill and the report templates read.

The fields that carry a `column` are the columns of `runs`: the table is made from this class
(`runs_schema`), so a new count is one line here.
"""

import datetime as dt
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from lessonweaver.discover import TRACE_NAMES
from lessonweaver.words import plural

# A run's status, as `runs.status` records it.
STATUSES = {
    "loaded": "the load committed; weaving and rendering were still to come",
    "completed": "loaded, woven, rendered, audited and published",
    "failed": "stopped after the load (weave, render or publish failed); what it loaded stays",
    "audit_failed": "the audit found what no quarantine explains: the reports were withheld",
}


def _column(kind: str, comment: str, default: Any = 0) -> Any:
    return field(default=default, metadata={"column": kind, "comment": comment})


def _shown(default_factory: Any) -> Any:
    """A value the summary shows but `runs` does not store (it is in the run's own rows)."""
    return field(default_factory=default_factory)


@dataclass
class RunSummary:
    run_id: str = _column("VARCHAR", "when it started (UTC) and a random suffix", "")
    started_at: dt.datetime | None = _column("TIMESTAMP", "UTC", None)
    finished_at: dt.datetime | None = _column("TIMESTAMP", "UTC; empty until the reports are published", None)
    status: str = _column("VARCHAR", " | ".join(STATUSES), "started")
    inputs: list[str] = field(default_factory=list, metadata={"column": "VARCHAR[]", "comment": "the paths given"})
    night: dt.date | None = _column("DATE", "the night the run counts for in the lessons' lifecycle", None)
    files_seen: int = _column("BIGINT", "files found under the inputs")
    files_read: int = _column("BIGINT", "files read (new, or changed since they were ingested)")
    files_skipped: int = _column("BIGINT", "already ingested with the same content, or nothing to read")
    files_unread: int = _column("BIGINT", "files in the input folders whose names are not trace files: not read")
    records: int = _column("BIGINT", "records read: loaded + quarantined + rejected")
    records_loaded: int = _column("BIGINT", "records that made a stored trace")
    records_quarantined: int = _column("BIGINT", "records of sensitive traces, kept out")
    records_rejected: int = _column("BIGINT", "records that could not be read as a trace (rejects)")
    traces_loaded: int = _column("BIGINT", "new traces stored by this run")
    traces_duplicate: int = _column("BIGINT", "traces delivered again with the same content, not stored again")
    traces_conflicting: int = _column("BIGINT", "same trace_id as a stored trace, other content: rejected")
    traces_quarantined: int = _column("BIGINT", "traces kept out as sensitive")
    traces_redacted: int = _column("BIGINT", "traces of this run stored with their secrets replaced by markers")
    events_loaded: int = _column("BIGINT", "events of the new traces")
    unknown_event_types: int = _column("BIGINT", "events whose raw_type maps to no canonical type")
    detections: int = _column("BIGINT", "detections in the new traces")
    events_dropped: int = _column("BIGINT", "events of old traces dropped after the load (--retain-days)")
    lessons_new: int = _column("BIGINT", "lessons first seen in this run")
    lessons_total: int = _column("BIGINT", "lessons in the database after this run")
    findings_below_floor: int = _column("BIGINT", "findings below the noise floor after this run: one-offs, "
                                        "kept in detections but no lesson")

    records_unaccounted: int = 0  # records no stage accounted for: always 0 unless there is a bug
    detectors: list[str] = _shown(list)
    timings: dict[str, float] = _shown(dict)  # seconds per stage
    detector_errors: dict[str, str] = _shown(dict)  # detector id -> why it was skipped
    file_notes: list[tuple[str, str]] = _shown(list)  # (path, note)
    unread_examples: list[str] = _shown(list)  # the first few of files_unread
    empty_inputs: list[str] = _shown(list)  # input paths with no trace file under them
    quarantine_reasons: dict[str, int] = _shown(dict)
    redaction_kinds: dict[str, int] = _shown(dict)  # kind of secret -> stored traces of this run it was redacted in
    rejects_by_file: list[tuple[str, int, list[str]]] = _shown(list)  # (path, count, first reasons)
    lesson_statuses: dict[str, int] = _shown(dict)
    lessons_night: dt.date | None = None  # the night the lesson statuses are as of (the newest night run)
    detections_by_detector: dict[str, int] = _shown(dict)
    unknown_types: list[tuple[str, int]] = _shown(list)  # (raw_type, count)
    unrecognised: list[tuple[str, int, str, int]] = _shown(list)  # (keys, count, first file, files)
    written: list[str] = _shown(list)  # the report files published
    nothing_new: bool = False  # nothing to read, and the lessons and reports in place were kept as they are
    stale_detectors: dict[str, str] = _shown(dict)  # changed or added since the stored traces were detected
    detector_advice: str = ""  # what to do about them, one line (lessonweaver.versions.advice)
    regrain_note: str = ""  # the lessons moved to a new grain in this run, and what became of the reviews
    db: str = ""

    def as_dict(self) -> dict[str, Any]:
        """Plain values, for templates (which may use `run.get(...)`) and Prefect artifacts."""
        return asdict(self)

    def row(self) -> list[Any]:
        """The values of the `runs` columns, in RUN_COLUMNS order."""
        return [getattr(self, name) for name in RUN_COLUMNS]


RUN_COLUMNS = {f.name: f.metadata["column"] for f in fields(RunSummary) if "column" in f.metadata}


def runs_schema(existing: set[str]) -> str:
    """What makes or upgrades the `runs` table (whose columns are `existing`) to RunSummary's columns,
    each with its meaning as its comment; empty when it is up to date."""
    statements = [] if existing else ["CREATE TABLE runs (run_id VARCHAR)"]
    for f in fields(RunSummary):
        if "column" in f.metadata and f.name not in existing:
            comment = f.metadata["comment"].replace("'", "''")
            if f.name != "run_id":  # made with the table
                statements.append(f"ALTER TABLE runs ADD COLUMN {f.name} {f.metadata['column']}")
            statements.append(f"COMMENT ON COLUMN runs.{f.name} IS '{comment}'")
    return ";\n".join(statements)


def _counted(pairs: list[tuple[str, int]], shown: int = 6) -> str:
    """`recovery_state ×8, agent_progress ×2, … (3 more)`"""
    text = ", ".join(f"{name} ×{n}" for name, n in pairs[:shown])
    return text + (f", … ({len(pairs) - shown} more)" if len(pairs) > shown else "")


def _counts(run: RunSummary) -> list[str]:
    return [
        f"run {run.run_id}: {run.status}",
        f"files:      {run.files_seen} found, {run.files_read} read, {run.files_skipped} unchanged (skipped)",
        f"records:    {run.records} = {run.records_loaded} loaded + {run.records_quarantined} quarantined"
        f" + {run.records_rejected} rejected",
        f"traces:     {run.traces_loaded} loaded, {run.traces_duplicate} delivered again (kept once),"
        f" {run.traces_conflicting} conflicting (rejected), {run.traces_quarantined} quarantined"
        + (f", {run.traces_redacted} of those loaded with secrets redacted" if run.traces_redacted else ""),
        f"events:     {run.events_loaded} loaded ({run.unknown_event_types} of unknown type, kept"
        + (": " + _counted(run.unknown_types) if run.unknown_types else "") + ")",
    ]


def _kept_out(run: RunSummary) -> list[str]:
    lines = [f"  quarantined {n:>5}  {reason}" for reason, n in run.quarantine_reasons.items()]
    lines += [f"  redacted    {n:>5}  secret:{kind} (the value replaced in place, the trace kept)"
              for kind, n in run.redaction_kinds.items()]
    audited = sum(n for reason, n in run.quarantine_reasons.items() if reason.startswith("audit:"))
    if audited:
        lines.append(f"  (the audit of what was staged or rendered kept {audited} of them out; "
                     "the night's rows and reports are without them)")
    shown = run.rejects_by_file[:10]
    for path, n, examples in shown:
        lines.append(f"  rejected {n:>5}  {path}: " + "; ".join(examples) + ("; ..." if n > len(examples) else ""))
    if len(run.rejects_by_file) > len(shown):
        lines.append(f"  ... and {plural(len(run.rejects_by_file) - len(shown), 'more file', 'more files')} with rejects")
    if run.rejects_by_file:
        lines.append("  (every rejected record, with its line and reason, is in the rejects table)")
    lines += [f"  note: {path}: {note}" for path, note in run.file_notes]
    lines += [f"  no trace file under {path} (trace files are named {TRACE_NAMES}): nothing read there"
              for path in run.empty_inputs]
    if run.files_unread:
        lines.append(f"  not read {run.files_unread:>5}  {'file' if run.files_unread == 1 else 'files'} not named like trace "
                     f"files ({TRACE_NAMES}): " + ", ".join(run.unread_examples)
                     + (", ..." if run.files_unread > len(run.unread_examples) else "")
                     + "; name a file to read it whatever its name")
    for keys, n, first, files in run.unrecognised[:5]:
        lines.append(f"  not understood {n:>5}  {'record' if n == 1 else 'records'} with keys {{{keys}}} in {first}"
                     + (f" and {plural(files - 1, 'more file', 'more files')}" if files > 1 else ""))
    return lines


def _lessons_line(run: RunSummary, lesson_statuses: tuple[str, ...]) -> str:
    """`lessons: 42 (3 first seen in this run); on night 2026-11-02: 3 new, 0 regressed, 12 recurring, 27 open, 0 resolved`"""
    statuses = run.lesson_statuses
    as_of = run.lessons_night or run.night
    line = (f"lessons:    {run.lessons_total} ({run.lessons_new} first seen in this run); on night {as_of}: "
            + ", ".join(f"{statuses.get(s, 0)} {s}" for s in lesson_statuses))
    if run.findings_below_floor:
        line += (f"\n  {plural(run.findings_below_floor, 'finding')} below the noise floor (one-offs: in "
                 "detections, not lessons)")
    if run.night and as_of and run.night < as_of:
        line += f"\n  (this run counted for night {run.night}, before the newest night run: it adds to the history)"
    return line


def format_summary(run: RunSummary, lesson_statuses: tuple[str, ...], where: str = "in the flow") -> str:
    """The summary `lessonweaver run` prints: what came in, where it went, what was found and written."""
    lines = _counts(run) + _kept_out(run)
    if run.nothing_new:
        lines.insert(1, "nothing new tonight: no file was new or changed, so the lessons and the reports stay as "
                        "the last run left them")
    lines.append(f"detections: {run.detections}")
    lines += [f"  {detector:<22} {n:>5}" for detector, n in run.detections_by_detector.items()]
    lines += [f"  {detector:<22} FAILED: {message}" for detector, message in sorted(run.detector_errors.items())]
    if run.detector_advice:
        lines.append(f"  {run.detector_advice}")
    if run.regrain_note:
        lines.append(f"  {run.regrain_note}")
    lines.append(_lessons_line(run, lesson_statuses))
    t = run.timings
    lines.append(f"time:       {sum(t.values()):.1f} s {where} (" + ", ".join(f"{k} {v:.1f}" for k, v in t.items()) + ")")
    lines.append(f"database:   {run.db}")
    lines += [f"report:     {path}" for path in run.written]
    return "\n".join(lines)
