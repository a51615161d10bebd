"""The `lessonweaver` command: its parser and its error handling. What each subcommand does is in
commands.py; the options of `run`, `backfill` and `schedule` come from options.py.

Conventions every parser follows (tests/test_cli_options.py walks them): each command and action has a
description; each option has help and one of the placeholders in METAVARS (or its choices); a number
that must be positive is refused by the parser, in one line, before anything runs.
"""

import argparse
import os
import re
import sys
from collections.abc import Callable

from lessonweaver import __version__, commands, options
from lessonweaver.config import DEFAULT_OUT
from lessonweaver.options import DB_HELP
from lessonweaver.words import plural

# The placeholders `--help` and the README use: a file, a folder, a number, an id, a name, ...
METAVARS = frozenset({"FILE", "DIR", "PATH", "ROOT", "N", "MB", "DATE", "ID", "LESSON_ID", "TRACE_ID", "NAME", "NAME=VALUE",
                      "T", "S", "SEQ", "TEXT", "QUERY", "CRON", "ZONE", "tcp://HOST:PORT"})
STORED_OUT_HELP = f"report folder (default: where the database's runs publish them, else {DEFAULT_OUT}/)"


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `low`, else one line naming the option."""
    def number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value
    return number


class _Formatter(argparse.HelpFormatter):
    """Descriptions wrapped as usual; an epilog (examples, lists) kept line by line as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return super()._fill_text(text, width, indent) if "\n" not in text else text


def _command(sub: "argparse._SubParsersAction", name: str, summary: str, description: str = "",
             parents: tuple[argparse.ArgumentParser, ...] = (), epilog: str | None = None) -> argparse.ArgumentParser:
    """A subcommand: `summary` in the list of commands, and the first line of its own --help."""
    return sub.add_parser(name, help=summary, parents=list(parents), epilog=epilog, formatter_class=_Formatter,
                          description=f"{summary[0].upper()}{summary[1:]}." + (f" {description}" if description else ""))


RUN_EXAMPLES = """\
examples:
  lessonweaver run data/                       the demo traces
  lessonweaver run ~/.claude/projects/my-app/  Claude Code sessions of a project
  lessonweaver run ~/.codex/sessions/          Codex CLI sessions
  lessonweaver run results/ --db bench.duckdb  a benchmark's results (tau2-bench
                                               or OpenHands) in a db of its own
  lessonweaver run run.json --format tau2      one file, read as a format below
  lessonweaver run data/ --no-prefect -q       in this process, the summary only
Run it each night on the same folders: files read before are skipped.
"""


def _formats() -> str:
    """The formats `--format` takes, one a line, from the shipped adapters' headers."""
    from lessonweaver.adapters import load_adapters

    found = load_adapters()
    width = max(len(a.format) for a in found)
    return "formats (--format NAME; without it, each file's format is detected):\n" + "\n".join(
        f"  {a.format:<{width}}  {_clip(re.sub(r' [(][^()]*[)]$', '', a.title), 76 - width)}"
        for a in sorted(found, key=lambda a: a.format))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


def _run_parser(sub: "argparse._SubParsersAction") -> None:
    run = _command(sub, "run", "load trace files, detect, weave lessons and render reports",
                   "Files read before and unchanged are skipped; the reports are audited before they are published.",
                   epilog=f"{RUN_EXAMPLES}\n{_formats()}")
    options.add_arguments(run, options.RUN)
    run.add_argument("--no-prefect", action="store_true",
                     help="run in this process, without Prefect's server, retries and UI (same tables and reports)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the summary and errors")
    run.set_defaults(func=commands.cmd_run)


def _backfill_parser(sub: "argparse._SubParsersAction") -> None:
    p = _command(sub, "backfill", "run past nights from date folders ROOT/YYYY-MM-DD/, oldest first",
                 "Each folder is one nightly run counted for its date, so the lessons' lifecycle comes out as if "
                 "lessonweaver had run every night.")
    p.add_argument("root", metavar="ROOT", help="a folder of date folders, one per night (YYYY-MM-DD)")
    p.add_argument("--from", dest="start", metavar="DATE", help="first night to run, YYYY-MM-DD (default: the oldest folder)")
    p.add_argument("--to", dest="end", metavar="DATE", help="last night to run, YYYY-MM-DD (default: the newest folder)")
    options.add_arguments(p, options.BACKFILL)
    p.add_argument("--no-prefect", action="store_true", help="run each night in this process, without Prefect")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the summary and errors")
    p.set_defaults(func=commands.cmd_backfill)


def _schedule_parser(sub: "argparse._SubParsersAction") -> None:
    from lessonweaver.schedule import DEFAULT_CRON, DEFAULT_NAME, DEFAULT_POOL, DEFAULT_TIMEZONE

    p = _command(sub, "schedule", "register the nightly run as a scheduled Prefect deployment (needs PREFECT_API_URL)",
                 "A worker on the pool then runs it: prefect worker start --pool NAME.")
    options.add_arguments(p, options.SCHEDULE)
    p.add_argument("--cron", default=DEFAULT_CRON, metavar="CRON", help=f"when to run (default: '{DEFAULT_CRON}')")
    p.add_argument("--timezone", default=DEFAULT_TIMEZONE, metavar="ZONE",
                   help=f"the cron's time zone, IANA name (default: {DEFAULT_TIMEZONE})")
    p.add_argument("--pool", default=DEFAULT_POOL, metavar="NAME",
                   help=f"process work pool, created if missing (default: {DEFAULT_POOL})")
    p.add_argument("--name", default=DEFAULT_NAME, metavar="NAME", help=f"deployment name (default: {DEFAULT_NAME})")
    p.set_defaults(func=commands.cmd_schedule)


def _stored_parsers(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    """`redetect` and `render`: commands that work from what the database holds, reading no input."""
    red = _command(sub, "redetect", "run the detectors again over the traces already stored",
                   "Replaces the stored detections of the detectors run (all, or those named with --detector), "
                   "weaves the lessons again and renders the reports; the database's fingerprint of each "
                   "detector run is brought up to date.", parents=(db_option,))
    red.add_argument("--out", metavar="DIR", help=STORED_OUT_HELP)
    red.add_argument("--detectors", dest="detector_dirs", action="append", default=[], metavar="DIR",
                     help="a folder of your own detectors, added to the shipped ones (repeatable)")
    red.add_argument("--detector", dest="only", action="append", default=[], metavar="ID",
                     help="run only this detector (repeatable; default: every detector)")
    red.set_defaults(func=commands.cmd_redetect)
    ren = _command(sub, "render", "render the reports from the database alone, reading no input",
                   "The reports of the latest run, as the database stands now (review decisions included), "
                   "audited like a run's before they are published.", parents=(db_option,))
    ren.add_argument("--out", metavar="DIR", help=STORED_OUT_HELP)
    ren.set_defaults(func=commands.cmd_render)
    for p in (red, ren):
        p.add_argument("--templates", metavar="DIR", help="a folder of templates used before the shipped ones")
        p.add_argument("--tenant", metavar="T", help="render the reports from this tenant's traces only (as the run does)")


def _review_parser(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    from lessonweaver.detectors import SEVERITIES
    from lessonweaver.lessons import STATUSES

    rev = _command(sub, "review", "list lesson candidates; accept, reject, edit or show them",
                   "With no action: the pending lessons, highest priority first.", parents=(db_option,))
    shown = rev.add_mutually_exclusive_group()
    shown.add_argument("--decision", choices=("pending", "accepted", "rejected"), default="pending",
                       help="list the lessons with this decision (default: pending)")
    shown.add_argument("--all", action="store_true", help="list every lesson")
    rev.add_argument("--detector", metavar="ID", help="only this detector's lessons")
    rev.add_argument("--source", metavar="S", help="only lessons of this source (the producer, traces.source)")
    rev.add_argument("--severity", choices=SEVERITIES, help="only lessons of this severity")
    rev.add_argument("--status", choices=STATUSES, help="only lessons with this lifecycle status")
    rev.add_argument("--limit", type=at_least(1), metavar="N", help="at most N lessons")
    rev.add_argument("-v", "--verbose", action="store_true", help="show the lesson text of each")
    # `--db` may come before or after the action; after it, it must not reset a value given before it.
    db_after_action = argparse.ArgumentParser(add_help=False)
    db_after_action.add_argument("--db", default=argparse.SUPPRESS, metavar="FILE", help=DB_HELP)
    actions = rev.add_subparsers(dest="action", metavar="{accept,reject,edit,show}")
    for name, what, many in (("accept", "accept lessons: they are exported and kept", True),
                             ("reject", "reject lessons: reports leave them out, and they never come back as new", True),
                             ("edit", "change a lesson's text, keeping its decision", False),
                             ("show", "show one lesson in full: evidence, examples, nights and review", False)):
        a = _command(actions, name, what, "A lesson is named by its id or a unique start of one"
                     + (" (several at once: all or none are changed)." if many else "."), parents=(db_after_action,))
        a.add_argument("lesson_ids", nargs="+" if many else 1, metavar="LESSON_ID",
                       help="lesson ids, or unique starts of them" if many else "a lesson id, or a unique start of one")
        if name in ("accept", "edit"):
            a.add_argument("--text", required=name == "edit", metavar="TEXT",
                           help="the new lesson text" if name == "edit" else "the lesson text to keep instead of the proposed one")
        if name != "show":
            a.add_argument("--note", metavar="TEXT", help="why (kept with the decision)")
    rev.set_defaults(func=commands.cmd_review, text=None, note=None)


def _sql_parser(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    sql = _command(sub, "sql", "query the database read-only (a query, a file, or a prompt)",
                   "With no QUERY and no --file, a prompt on stdin; --examples lists the shipped queries.",
                   parents=(db_option,))
    sql.add_argument("query", nargs="?", metavar="QUERY", help="SQL to run (several statements: ';' between)")
    sql.add_argument("--file", metavar="FILE", help="run a .sql file (or a shipped example by name: top_lessons)")
    sql.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                     help="a value for the query's $NAME (repeatable; an example's header gives defaults)")
    sql.add_argument("--examples", action="store_true", help="list the shipped example queries and what each answers")
    sql.add_argument("--format", choices=("table", "csv", "json"), default="table",
                     help="table (default), csv, or json (one JSON array per result)")
    sql.add_argument("--max-width", type=at_least(0), default=80, metavar="N",
                     help="cut table cells to N characters (default: 80; 0: never)")
    sql.set_defaults(func=commands.cmd_sql)


def _detectors_parser(sub: "argparse._SubParsersAction") -> None:
    det = _command(sub, "detectors", "list the detectors a run would use, or test them",
                   "With no action: the detectors a run would use, shipped and your own.")
    det.add_argument("--detectors", action="append", default=[], metavar="DIR",
                     help="a folder of your own detectors, added to the shipped ones (repeatable)")
    det.add_argument("-v", "--verbose", action="store_true", help="show descriptions and files")
    actions = det.add_subparsers(dest="action", metavar="{test}")
    test = _command(actions, "test", "run each detector's positive and negative cases (its tests/ folder)",
                    "One line per case; exit 1 if any fails.")
    test.add_argument("dirs", nargs="*", metavar="DIR",
                      help="a folder of detectors, as given to --detectors (default: the shipped detectors)")
    det.set_defaults(func=commands.cmd_detectors)


def _forget_parser(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    fg = _command(sub, "forget", "remove traces from the store everywhere",
                  "Removes the traces named (by id, tenant or source) everywhere in the store: events, detections, "
                  "lesson evidence and examples; reports from their next render. Only a hash of each id is kept, "
                  "so a trace delivered again is not stored again.", parents=(db_option,))
    fg.add_argument("--trace", action="append", default=[], metavar="ID", help="a trace id (repeatable)")
    fg.add_argument("--tenant", action="append", default=[], metavar="T",
                    help="every trace of this tenant, as the producer names it (repeatable)")
    fg.add_argument("--source", action="append", default=[], metavar="S",
                    help="every trace of this source (traces.source; repeatable)")
    fg.set_defaults(func=commands.cmd_forget)


def _read_parsers(sub: "argparse._SubParsersAction", db_option: argparse.ArgumentParser) -> None:
    """`audit`, `export`, `show`, `rules` and `mcp`: commands that read the database (and write elsewhere)."""
    aud = _command(sub, "audit", "scan the database and the reports for secrets, PII and quarantined ids",
                   "Prints each finding, masked; exit 1 if there is any.", parents=(db_option,))
    aud.add_argument("--out", metavar="DIR", help=STORED_OUT_HELP)
    aud.set_defaults(func=commands.cmd_audit)
    exp = _command(sub, "export", "write the accepted lessons as a file agents load",
                   "Only lessons a person accepted, with their edited text: to standard output, a file (-o) or "
                   "a block of their own in an agent instruction file (--into).", parents=(db_option,))
    exp.add_argument("--format", default="agents-md", metavar="NAME",
                     help="agents-md (default) or jsonl, or a template of yours")
    where = exp.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", metavar="FILE", help="write here instead of to standard output")
    where.add_argument("--into", metavar="FILE",
                       help="write them as a managed block into this instruction file (AGENTS.md, CLAUDE.md, "
                            ".github/copilot-instructions.md, .cursor/rules/NAME.mdc), created if missing; "
                            "the rest of the file is left as it is")
    exp.add_argument("--check", action="store_true",
                     help="with --into: write nothing, print each rule's health (as `lessonweaver rules`); exit 1 "
                          "if the file would change or a rule needs a person, 0 otherwise")
    exp.add_argument("--diff", action="store_true", help="with --into: write nothing; show what would change")
    exp.add_argument("--templates", metavar="DIR", help="a folder with export/<format>.j2 templates of your own")
    scope = exp.add_mutually_exclusive_group()
    scope.add_argument("--project", metavar="DIR",
                       help="only the lessons seen in this project (a folder, by its name, or a project's name, "
                            "in any case) and those seen in several projects; exit 2 if no project has that name")
    scope.add_argument("--all", action="store_true", help="every accepted lesson, whatever its project (the default)")
    exp.set_defaults(func=commands.cmd_export)
    show = _command(sub, "show", "a trace's timeline, with its detections marked",
                    "One line per event of a trace, in order (time, type, status, the start of its content; for "
                    "a tool call what it ran: the command, the file, the query), each detection marked at the "
                    "event it points to.", parents=(db_option,))
    show.add_argument("trace_id", metavar="TRACE_ID", help="a trace id, or a unique start of one")
    show.add_argument("--limit", type=at_least(1), metavar="N",
                      help="at most N events: those detections point to and their neighbours first (default: "
                           f"every event; with --around, {commands.AROUND_EVENTS})")
    show.add_argument("--around", type=at_least(1), metavar="SEQ",
                      help="the events nearest to event SEQ (the number in the seq column)")
    show.add_argument("--width", type=at_least(20), default=100, metavar="N",
                      help="cut each event's text to N characters (default: 100)")
    show.set_defaults(func=commands.cmd_show)
    rules = _command(sub, "rules", "the health of every exported rule: still seen, quiet, regressed or duplicated",
                     "One line per accepted lesson: still seen since it was accepted (it has not worked yet), quiet "
                     "for N nights (working, or stale), regressed (seen again after a quiet spell) or duplicated "
                     "by another accepted lesson. Exit 1 when a rule needs a person, 0 otherwise.", parents=(db_option,))
    rules.add_argument("--grace", type=at_least(0), default=2, metavar="N",
                       help="nights after its acceptance a rule may still be seen before it needs a person (default: 2)")
    rules.set_defaults(func=commands.cmd_rules)
    mcp = _command(sub, "mcp", "serve the accepted lessons to agents over MCP (stdio)",
                   "A Model Context Protocol server on standard input and output, for an agent to start: tools to "
                   "search the lessons, list those for the project or path it works in, and show one with its "
                   "evidence and history. Read-only; every answer is audited like a report.", parents=(db_option,))
    mcp.add_argument("--tenant", metavar="T", help="serve this tenant's lessons, with its own evidence (without it: "
                                                   "only the lessons of traces that carry no tenant)")
    mcp.add_argument("--pending", action="store_true", help="serve lessons still pending review too (never rejected ones)")
    mcp.set_defaults(func=commands.cmd_mcp)


DAILY_LOOP = """\
the daily loop:
  lessonweaver run ~/.claude/projects/my-app/  find mistakes in new sessions
  lessonweaver review                          the lessons waiting for a decision
  lessonweaver review show ID                  one: its rule, evidence, examples
  lessonweaver review accept ID                (or reject ID, or edit ID --text)
  lessonweaver export --into CLAUDE.md         the accepted rules, for your agent
Every command takes --db FILE, else $LESSONWEAVER_DB, else the db setting of
the project's lessonweaver.toml (or pyproject.toml), else lessonweaver.duckdb.
`lessonweaver COMMAND --help` says more; `run --help` lists the formats read.
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lessonweaver", description="Find where agents went wrong and weave it into lessons.",
                                epilog=DAILY_LOOP, formatter_class=_Formatter)
    p.add_argument("--version", action="version", version=f"lessonweaver {__version__}",
                   help="show the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    db_option = argparse.ArgumentParser(add_help=False)
    db_option.add_argument("--db", metavar="FILE", help=DB_HELP)  # chosen after parsing: project.database
    _run_parser(sub)
    _backfill_parser(sub)
    _schedule_parser(sub)
    _stored_parsers(sub, db_option)
    _review_parser(sub, db_option)
    _read_parsers(sub, db_option)
    _sql_parser(sub, db_option)
    _detectors_parser(sub)
    _forget_parser(sub, db_option)
    return p


def _reader_gone() -> int:
    """The reader of our output went away (`lessonweaver review | head -1`): stop quietly, as Unix tools
    do. Standard output points at /dev/null from here on, so the interpreter's last flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse, run the command, and turn every failure into one line and an exit status: 2 for a usage
    problem (a bare `lessonweaver` too, which prints the usage), 1 for anything unexpected."""
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        parser().print_help(sys.stderr)
        return 2
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage error (2), or --help or --version (0)
        return exc.code if isinstance(exc.code, int) else 0
    try:
        if hasattr(args, "db"):
            from lessonweaver.project import database
            from lessonweaver.store import check_path

            args.db = database(args.db).path
            check_path(args.db)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here when the output was buffered
        return code
    except BrokenPipeError:
        return _reader_gone()
    except KeyboardInterrupt:
        print("lessonweaver: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        return _failed(exc, args)


# Commands that write the database, through a working copy put in place when they end (store.writing).
WRITERS = frozenset({"run", "backfill", "review", "forget", "redetect"})


def _nothing_lost(args: argparse.Namespace) -> str:
    """What a command that writes the database leaves when the disk fills: the database as it was."""
    if args.command not in WRITERS:
        return ""
    again = "the next run" if args.command in ("run", "backfill") else f"`lessonweaver {args.command}` again"
    state = "is left as it was" if os.path.exists(args.db) else "was not made"
    return f"; nothing was lost: the database {args.db} {state}, and {again} picks up from there once there is room"


def _failed(exc: Exception, args: argparse.Namespace) -> int:
    """A failure as one line on stderr, and the exit status: 2 for a usage problem, 1 for anything else (a
    full disk, a bug, an environment problem): no data, no traceback."""
    from lessonweaver.audit import AuditFailed
    from lessonweaver.discover import InputError
    from lessonweaver.errors import disk_full, safe_error
    from lessonweaver.sqlfile import SqlFileError
    from lessonweaver.store import StoreError

    full = disk_full(exc)
    if full is not None:
        print(f"lessonweaver: error: the disk is full: could not write {full or 'a file'}{_nothing_lost(args)}",
              file=sys.stderr)
        return 1
    if isinstance(exc, AuditFailed):
        for finding in exc.findings:
            print(f"audit: {finding}", file=sys.stderr)
        print(f"lessonweaver: the audit found {plural(len(exc.findings), 'problem')}; the reports were not published",
              file=sys.stderr)
        return 1
    if isinstance(exc, (InputError, SqlFileError, StoreError, ValueError)):
        print(f"lessonweaver: error: {exc}", file=sys.stderr)
        return 2
    print(f"lessonweaver: failed: {exc.__class__.__name__}: {safe_error(exc)}", file=sys.stderr)
    return 1

if __name__ == "__main__":
    sys.exit(main())
