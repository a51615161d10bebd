"""The `lessonweaver` command: its parser and its error handling. What each subcommand does is in
commands.py; the options of `run`, `backfill` and `schedule` come from options.py."""

import argparse
import sys

from lessonweaver import __version__, commands, options
from lessonweaver.config import DEFAULT_DB, DEFAULT_OUT
from lessonweaver.words import plural


def _backfill_parser(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("backfill", help="run past nights from date folders ROOT/YYYY-MM-DD/, oldest first")
    p.add_argument("root", metavar="ROOT", help="a folder of date folders, one per night (YYYY-MM-DD)")
    p.add_argument("--from", dest="start", metavar="YYYY-MM-DD", help="first night to run (default: the oldest folder)")
    p.add_argument("--to", dest="end", metavar="YYYY-MM-DD", help="last night to run (default: the newest folder)")
    options.add_arguments(p, options.BACKFILL)
    p.add_argument("--no-prefect", action="store_true", help="run each night in this process, without Prefect")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the summary and errors")
    p.set_defaults(func=commands.cmd_backfill)


def _schedule_parser(sub: "argparse._SubParsersAction") -> None:
    from lessonweaver.schedule import DEFAULT_CRON, DEFAULT_NAME, DEFAULT_POOL, DEFAULT_TIMEZONE

    p = sub.add_parser("schedule",
                       help="register the nightly run as a scheduled Prefect deployment (needs PREFECT_API_URL)")
    options.add_arguments(p, options.SCHEDULE)
    p.add_argument("--cron", default=DEFAULT_CRON, help=f"when to run (default: '{DEFAULT_CRON}')")
    p.add_argument("--timezone", default=DEFAULT_TIMEZONE,
                   help=f"the cron's time zone, IANA name (default: {DEFAULT_TIMEZONE})")
    p.add_argument("--pool", default=DEFAULT_POOL, help=f"process work pool, created if missing (default: {DEFAULT_POOL})")
    p.add_argument("--name", default=DEFAULT_NAME, help=f"deployment name (default: {DEFAULT_NAME})")
    p.set_defaults(func=commands.cmd_schedule)


def _review_parser(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
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
    rev.set_defaults(func=commands.cmd_review, text=None, note=None)


def _sql_parser(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    sql = sub.add_parser("sql", parents=[db_option], help="query the database read-only (a query, a file, or a prompt)",
                         description="Read-only SQL on the database; with no QUERY and no --file, a prompt on stdin.")
    sql.add_argument("query", nargs="?", metavar="QUERY", help="SQL to run (several statements: ';' between)")
    sql.add_argument("--file", metavar="PATH", help="run a .sql file (or a shipped example by name: top_lessons)")
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table",
                     help="table (default), csv, or json (one JSON array per result)")
    sql.add_argument("--max-width", type=int, default=80, metavar="N",
                     help="cut table cells to N characters (default: 80; 0: never)")
    sql.set_defaults(func=commands.cmd_sql)


def _detectors_parser(sub: "argparse._SubParsersAction") -> None:
    det = sub.add_parser("detectors", help="list the detectors a run would use, or test them",
                         description="With no action: the detectors a run would use.")
    det.add_argument("--detectors", action="append", default=[], metavar="DIR",
                     help="a folder of your own detectors, added to the shipped ones (repeatable)")
    det.add_argument("-v", "--verbose", action="store_true", help="show descriptions and files")
    actions = det.add_subparsers(dest="action", metavar="{test}")
    test = actions.add_parser("test", help="run each detector's positive and negative cases (its tests/ folder)",
                              description="Run every detector's cases; one line each, exit 1 if any fails.")
    test.add_argument("dirs", nargs="*", metavar="DIR",
                      help="a folder of detectors, as given to --detectors (default: the shipped detectors)")
    det.set_defaults(func=commands.cmd_detectors)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lessonweaver", description="Find where agents went wrong and weave it into lessons.")
    p.add_argument("--version", action="version", version=f"lessonweaver {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="load trace files, detect, weave lessons and render reports")
    options.add_arguments(run, options.RUN)
    run.add_argument("--no-prefect", action="store_true",
                     help="run in this process, without Prefect's server, retries and UI (same tables and reports)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the summary and errors")
    run.set_defaults(func=commands.cmd_run)

    _backfill_parser(sub)
    _schedule_parser(sub)

    aud = sub.add_parser("audit", help="scan the database and the reports for secrets, PII and quarantined ids")
    aud.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    aud.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default: {DEFAULT_OUT}/)")
    aud.set_defaults(func=commands.cmd_audit)

    db_option = argparse.ArgumentParser(add_help=False)
    db_option.add_argument("--db", default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    _review_parser(sub, db_option)

    exp = sub.add_parser("export", parents=[db_option], help="write the accepted lessons as a file agents load")
    exp.add_argument("--format", default="agents-md", help="agents-md (default) or jsonl, or a template of yours")
    exp.add_argument("-o", "--output", metavar="FILE", help="write here instead of to standard output")
    exp.add_argument("--templates", metavar="DIR", help="a folder with export/<format>.j2 templates of your own")
    exp.set_defaults(func=commands.cmd_export)

    _sql_parser(sub, db_option)
    _detectors_parser(sub)
    _forget_parser(sub, db_option)
    return p


def _forget_parser(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    fg = sub.add_parser("forget", parents=[db_option], help="remove traces from the store everywhere",
                        description="Remove the traces named (by id, tenant or source) everywhere in the store: "
                                    "events, detections, lesson evidence and examples; reports from their next "
                                    "render. Only a hash of each id is kept, so a trace delivered again is not "
                                    "stored again.")
    fg.add_argument("--trace", action="append", default=[], metavar="ID", help="a trace id (repeatable)")
    fg.add_argument("--tenant", action="append", default=[], metavar="T",
                    help="every trace of this tenant, as the producer names it (repeatable)")
    fg.add_argument("--source", action="append", default=[], metavar="S",
                    help="every trace of this source (traces.source; repeatable)")
    fg.set_defaults(func=commands.cmd_forget)


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
        print(f"lessonweaver: the audit found {plural(len(exc.findings), 'problem')}; the reports were not published",
              file=sys.stderr)
        return 1
    except (InputError, SqlFileError, StoreError, ValueError) as exc:
        print(f"lessonweaver: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lessonweaver: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug or an environment problem: one clean line, no data, no traceback
        from lessonweaver.errors import safe_error

        print(f"lessonweaver: failed: {exc.__class__.__name__}: {safe_error(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
