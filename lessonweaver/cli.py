"""The `lessonweaver` command."""

import argparse
import os
import sys
from pathlib import Path

from lessonweaver import __version__
from lessonweaver.config import DEFAULT_DB, DEFAULT_INPUT, DEFAULT_OUT, Settings, memory_bytes, parse_night


def _prefect_defaults(quiet: bool) -> None:
    """Offline-friendly Prefect settings unless the user chose otherwise; progress goes to stderr."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "WARNING")
    # Prefect gives its temporary server 20 s to start; a busy 2-core machine sometimes needs more.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    if quiet:
        os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"


def _counted(pairs: list[tuple[str, int]], shown: int = 6) -> str:
    """`recovery_state ×8, agent_progress ×2, … (3 more)`"""
    text = ", ".join(f"{name} ×{n}" for name, n in pairs[:shown])
    return text + (f", … ({len(pairs) - shown} more)" if len(pairs) > shown else "")


def _summary(run: dict) -> str:
    lines = [
        f"run {run['run_id']}: completed",
        f"files:      {run['files_seen']} found, {run['files_read']} read, {run['files_skipped']} unchanged (skipped)",
        f"records:    {run['records']} = {run['records_loaded']} loaded + {run['records_quarantined']} quarantined"
        f" + {run['records_rejected']} rejected",
        f"traces:     {run['traces_loaded']} loaded, {run['traces_duplicate']} delivered again (kept once),"
        f" {run['traces_conflicting']} conflicting (rejected), {run['traces_quarantined']} quarantined",
        f"events:     {run['events_loaded']} loaded ({run['unknown_event_types']} of unknown type, kept"
        + (": " + _counted(run.get("unknown_types", [])) if run.get("unknown_types") else "") + ")",
    ]
    for reason, n in run["quarantine_reasons"].items():
        lines.append(f"  quarantined {n:>5}  {reason}")
    audited = sum(n for reason, n in run["quarantine_reasons"].items() if reason.startswith("audit:"))
    if audited:
        lines.append(f"  (the audit of what was staged or rendered kept {audited} of them out; "
                     "the night's rows and reports are without them)")
    shown = run["rejects_by_file"][:10]
    for path, n, examples in shown:
        lines.append(f"  rejected {n:>5}  {path}: " + "; ".join(examples) + ("; ..." if n > len(examples) else ""))
    if len(run["rejects_by_file"]) > len(shown):
        lines.append(f"  ... and {len(run['rejects_by_file']) - len(shown)} more file(s) with rejects")
    if run["rejects_by_file"]:
        lines.append("  (every rejected record, with its line and reason, is in the rejects table)")
    for path, note in run["file_notes"]:
        lines.append(f"  note: {path}: {note}")
    for keys, n, first, files in run.get("unrecognised", [])[:5]:
        lines.append(f"  not understood {n:>5}  record(s) with keys {{{keys}}} in {first}"
                     + (f" and {files - 1} more file(s)" if files > 1 else ""))
    lines.append(f"detections: {run['detections']}")
    for detector, n in run["detections_by_detector"].items():
        lines.append(f"  {detector:<22} {n:>5}")
    for detector, message in sorted(run.get("detector_errors", {}).items()):
        lines.append(f"  {detector:<22} FAILED: {message}")
    from lessonweaver.lessons import STATUSES

    statuses = run.get("lesson_statuses", {})
    lines.append(f"lessons:    {run['lessons_new']} new, {run['lessons_total']} total; night {run['night']}: "
                 + ", ".join(f"{statuses.get(s, 0)} {s}" for s in STATUSES))
    t = run["timings"]
    lines.append(f"time:       {sum(t.values()):.1f} s in the flow (" + ", ".join(f"{k} {v:.1f}" for k, v in t.items()) + ")")
    lines.append(f"database:   {run['db']}")
    for path in run["written"]:
        lines.append(f"report:     {path}")
    return "\n".join(lines)


def _preflight(args: argparse.Namespace) -> None:
    """Catch a wrong path, a broken detector or a locked database before Prefect starts up."""
    from lessonweaver import adapters, detectors, discover, store

    discover.discover(args.paths or [DEFAULT_INPUT])
    names = [a.format for a in adapters.load_adapters()]
    if args.format and args.format not in names:
        raise ValueError(f"unknown format '{args.format}' (known: {', '.join(names)})")
    detectors.load_detectors(args.detectors)
    if args.dask_address and args.runner != "dask":
        raise ValueError("--dask-address needs --runner dask")
    if args.night:
        parse_night(args.night)
    if args.resolve_after < 1:
        raise ValueError("--resolve-after must be at least 1")
    if args.workers < 1 or args.batch_mb < 1:
        raise ValueError("--workers and --batch-mb must be at least 1")
    memory_bytes(Settings().memory_limit)
    if args.work_dir and not Path(args.work_dir).is_dir():
        raise ValueError(f"work folder does not exist: {args.work_dir}")
    if args.templates and not Path(args.templates).is_dir():
        raise ValueError(f"template folder does not exist: {args.templates}")
    store.connect(args.db).close()
    with store.run_lock(args.db):
        pass


def cmd_run(args: argparse.Namespace) -> int:
    _preflight(args)
    _prefect_defaults(args.quiet)
    from flows.nightly import nightly, task_runner  # Prefect is slow to import; only `run` needs it

    runner = task_runner(args.runner, args.workers, args.dask_address)
    run = nightly.with_options(task_runner=runner)(
        paths=args.paths or [DEFAULT_INPUT],
        db=args.db,
        out=args.out,
        detector_dirs=args.detectors,
        templates=args.templates,
        format=args.format,
        pii=args.pii,
        tenant=args.tenant,
        batch_mb=args.batch_mb,
        work_dir=args.work_dir,
        night=args.night,
        resolve_after=args.resolve_after,
        workers=args.workers,
        remote_workers=bool(args.dask_address),
    )
    run["db"] = args.db
    print(_summary(run))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from lessonweaver import audit, store

    con = store.connect(args.db, read_only=True)
    try:
        files = audit.outputs(args.out)
        findings = audit.audit_database(con) + audit.audit_files(con, files)
    finally:
        con.close()
    for finding in findings:
        print(finding)
    print(f"audit: {args.db} and {len(files)} file(s) in {args.out}/: "
          + (f"{len(findings)} finding(s)" if findings else "clean"))
    return 1 if findings else 0


def cmd_detectors(args: argparse.Namespace) -> int:
    from lessonweaver.detectors import load_detectors

    for d in load_detectors(args.detectors):
        print(f"{d.id:<20} {d.severity:<9} {d.title}")
        if args.verbose:
            print(f"{'':<20} {d.description}\n{'':<20} {d.sql.path}\n")
    return 0


def _existing_db(db: str) -> str:
    if not os.path.exists(db):
        raise ValueError(f"no database at {db} (create one with: lessonweaver run --db {db})")
    return db


def _show_lesson(lesson: dict, verbose: bool) -> None:
    print(f"{lesson['lesson_id']}  {lesson['review']:<8}  {lesson['status'] or '':<9}  {lesson['severity']:<8}"
          f"  {lesson['priority'] or 0:>7.2f}  {lesson['occurrences']:>5}x  {lesson['title']}")
    if verbose or lesson["lesson"] != lesson["proposed_lesson"]:
        print(f"{'':<15}lesson:   {lesson['lesson']}")
    if verbose:
        if lesson["lesson"] != lesson["proposed_lesson"]:
            print(f"{'':<15}proposed: {lesson['proposed_lesson']}")
        if lesson["note"]:
            print(f"{'':<15}note:     {lesson['note']}")


def cmd_review(args: argparse.Namespace) -> int:
    from lessonweaver import render, review, store

    db = _existing_db(args.db)
    if args.action in (None, "show"):
        con = store.connect(db, read_only=True)
        try:
            if args.action == "show":
                shown = review.candidates(con, None, review.resolve_id(con, args.lesson_id))
            else:
                shown = review.candidates(con, None if args.all else args.decision, limit=args.limit)
        finally:
            con.close()
        for lesson in shown:
            lesson.update({k: render.scrub(lesson[k]) for k in ("title", "lesson", "proposed_lesson")
                           if lesson.get(k) is not None})
            _show_lesson(lesson, args.verbose or args.action == "show")
        if args.action is None:
            which = "lessons" if args.all else f"{args.decision} lessons"
            print(f"({len(shown)} {which}; accept, reject or edit one with: lessonweaver review accept|reject|edit ID)")
        return 0
    decision = {"accept": "accepted", "reject": "rejected", "edit": None}[args.action]
    if args.action == "edit" and args.text is None:
        raise ValueError("review edit needs --text")
    with store.run_lock(db):
        con = store.connect(db)
        try:
            lesson = review.decide(con, args.lesson_id, decision, args.text, args.note)
        finally:
            con.close()
    print(f"{lesson['lesson_id']}: {lesson['review']}" + (" (text edited)" if args.text is not None else ""))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from lessonweaver import export, store

    con = store.connect(_existing_db(args.db), read_only=True)
    try:
        text = export.export(con, args.format, args.templates)
    finally:
        con.close()
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        from lessonweaver.render import write_atomic

        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(args.output), text)
        print(f"exported to {args.output}", file=sys.stderr)
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    from lessonweaver import explore

    return explore.main(args.db, args.query, args.file, args.format, args.max_width)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lessonweaver", description="Find where agents went wrong and weave it into lessons.")
    p.add_argument("--version", action="version", version=f"lessonweaver {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="load trace files, detect, weave lessons and render reports")
    run.add_argument("paths", nargs="*", metavar="PATH", help=f"files or folders (recursive); default: {DEFAULT_INPUT}/")
    run.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    run.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default: {DEFAULT_OUT}/)")
    run.add_argument("--detectors", action="append", default=[], metavar="DIR",
                     help="a folder of your own detector .sql files (repeatable)")
    run.add_argument("--templates", metavar="DIR", help="a folder of templates used before the shipped ones")
    run.add_argument("--format", help="read every file with this adapter instead of detecting the format")
    run.add_argument("--pii", choices=("redact", "quarantine"), default="redact",
                     help="personal data in untagged traces: redact it in place (default) or quarantine the trace")
    run.add_argument("--tenant", metavar="T", help="render the reports from this tenant's traces only")
    run.add_argument("--runner", choices=("threads", "dask"), default="threads",
                     help="where batches are staged: local threads (default) or a Dask cluster")
    run.add_argument("--dask-address", metavar="tcp://HOST:PORT",
                     help="the Dask scheduler to use (default with --runner dask: a local cluster)")
    run.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                     help="batches staged at once, sharing the cores and the memory limit (default: one per core)")
    run.add_argument("--batch-mb", type=int, default=64, metavar="MB", help="input per batch (default: 64)")
    run.add_argument("--work-dir", metavar="DIR",
                     help="where batches leave their results; must be shared with remote Dask workers")
    run.add_argument("--night", metavar="YYYY-MM-DD",
                     help="the night this run counts for in the lessons' lifecycle (default: today, UTC)")
    run.add_argument("--resolve-after", type=int, default=7, metavar="N",
                     help="nights without a sighting before a lesson is resolved (default: 7)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the summary and errors")
    run.set_defaults(func=cmd_run)

    aud = sub.add_parser("audit", help="scan the database and the reports for secrets, PII and quarantined ids")
    aud.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    aud.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default: {DEFAULT_OUT}/)")
    aud.set_defaults(func=cmd_audit)

    db_option = argparse.ArgumentParser(add_help=False)
    db_option.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    rev = sub.add_parser("review", parents=[db_option], help="list lesson candidates; accept, reject or edit one",
                         description="With no action: the pending lessons, highest priority first.")
    shown = rev.add_mutually_exclusive_group()
    shown.add_argument("--decision", choices=("pending", "accepted", "rejected"), default="pending",
                       help="list the lessons with this decision (default: pending)")
    shown.add_argument("--all", action="store_true", help="list every lesson")
    rev.add_argument("--limit", type=int, help="at most this many")
    rev.add_argument("-v", "--verbose", action="store_true", help="show the lesson text of each")
    # `--db` may come before or after the action; after it, it must not reset a value given before it.
    db_after_action = argparse.ArgumentParser(add_help=False)
    db_after_action.add_argument("--db", default=argparse.SUPPRESS,
                                 help=f"database file (default: {DEFAULT_DB})")
    actions = rev.add_subparsers(dest="action", metavar="{accept,reject,edit,show}")
    for name, text_help in (("accept", "the lesson text to keep instead of the proposed one"),
                            ("reject", None), ("edit", "the new lesson text (keeps the decision)"), ("show", None)):
        a = actions.add_parser(name, parents=[db_after_action], help=f"{name} a lesson")
        a.add_argument("lesson_id", metavar="LESSON_ID", help="a lesson id, or a unique start of one")
        if text_help:
            a.add_argument("--text", help=text_help)
        if name != "show":
            a.add_argument("--note", help="why (kept with the decision)")
    rev.set_defaults(func=cmd_review, text=None, note=None)

    exp = sub.add_parser("export", parents=[db_option], help="write the accepted lessons as a file agents load")
    exp.add_argument("--format", default="agents-md", help="agents-md (default) or jsonl, or a template of yours")
    exp.add_argument("-o", "--output", metavar="FILE", help="write here instead of to standard output")
    exp.add_argument("--templates", metavar="DIR", help="a folder with export/<format>.j2 templates of your own")
    exp.set_defaults(func=cmd_export)

    sql = sub.add_parser("sql", parents=[db_option], help="query the database read-only (a query, a file, or a prompt)",
                         description="Read-only SQL on the database; with no QUERY and no --file, a prompt on stdin.")
    sql.add_argument("query", nargs="?", metavar="QUERY", help="SQL to run (several statements: ';' between)")
    sql.add_argument("--file", metavar="PATH", help="run a .sql file (or a shipped example by name: top_lessons)")
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table",
                     help="table (default), csv, or json (one JSON array per result)")
    sql.add_argument("--max-width", type=int, default=80, metavar="N",
                     help="cut table cells to N characters (default: 80; 0: never)")
    sql.set_defaults(func=cmd_sql)

    det = sub.add_parser("detectors", help="list the detectors a run would use")
    det.add_argument("--detectors", action="append", default=[], metavar="DIR")
    det.add_argument("-v", "--verbose", action="store_true", help="show descriptions and files")
    det.set_defaults(func=cmd_detectors)

    from lessonweaver import backfill, schedule

    schedule.add_parser(sub)
    backfill.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from lessonweaver.discover import InputError
    from lessonweaver.sqlfile import SqlFileError
    from lessonweaver.store import StoreError

    from lessonweaver.audit import AuditFailed

    try:
        return args.func(args)
    except AuditFailed as exc:
        for finding in exc.findings:
            print(f"audit: {finding}", file=sys.stderr)
        print(f"lessonweaver: the audit found {len(exc.findings)} problem(s); the reports were not published",
              file=sys.stderr)
        return 1
    except (InputError, SqlFileError, StoreError, ValueError) as exc:
        print(f"lessonweaver: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lessonweaver: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug or an environment problem: one clean line, no data, no traceback
        from lessonweaver.privacy import safe_error

        print(f"lessonweaver: failed: {exc.__class__.__name__}: {safe_error(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
