"""What each `lessonweaver` subcommand does, given its parsed arguments (the parser is in cli.py).

Heavy imports wait for the command that needs them: Prefect only for `run`, `backfill` and `schedule`
through Prefect, the PII libraries only for commands that screen text, so `sql`, `review` and `export`
open quickly.
"""

import argparse
import logging
from collections.abc import Iterator
from contextlib import contextmanager
import os
import sys
from pathlib import Path
from typing import TextIO

from lessonweaver import options
from lessonweaver.config import Settings
from lessonweaver.schedule import ENTRYPOINT as NIGHTLY_FLOW
from lessonweaver.scrub import one_line
from lessonweaver.summary import RunSummary, format_summary
from lessonweaver.words import plural

# The Prefect flows are named as a deployment names them: the package never imports flows/.
BACKFILL_FLOW = "flows/backfill.py:backfill"


def prefect_defaults(quiet: bool) -> None:
    """Offline-friendly Prefect settings unless the user chose otherwise; progress goes to stderr."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "WARNING")
    # Prefect gives its temporary server 20 s to start; a busy 2-core machine sometimes needs more.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    if quiet:
        os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"


def load_flow(entrypoint: str):  # noqa: ANN201 - a Prefect Flow; its type would import Prefect
    """A flow of flows/, found beside this package (in a checkout and in an installed wheel alike)."""
    from prefect.flows import load_flow_from_entrypoint

    path, name = entrypoint.split(":")
    return load_flow_from_entrypoint(f"{Path(__file__).resolve().parents[1] / path}:{name}")


def local_logging(quiet: bool) -> None:
    """Progress lines on stderr for runs without Prefect, in Prefect's layout."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d | %(levelname)-7s | %(message)s", "%H:%M:%S"))
    log = logging.getLogger("lessonweaver")
    log.handlers[:] = [handler]
    log.setLevel(logging.WARNING if quiet else logging.INFO)
    log.propagate = False


@contextmanager
def watched(quiet: bool, in_process: bool) -> Iterator[None]:
    """A progress bar when stderr is a terminal (and not --quiet); the log lines alone otherwise."""
    if in_process:
        local_logging(quiet)
    if quiet or not sys.stderr.isatty():
        yield
        return
    from lessonweaver import progress

    if in_process:
        logging.getLogger("lessonweaver").handlers[:] = []  # the bar prints the lines above itself
    with progress.bar(show_lines=in_process):
        yield


def _settings(given: dict) -> Settings:
    """The run's settings, checked before Prefect starts; the database is checked free after (store.check)."""
    from lessonweaver import pipeline

    settings = options.to_settings(given)
    pipeline.check(settings)
    return settings


def cmd_run(args: argparse.Namespace) -> int:
    from lessonweaver import store
    from lessonweaver.discover import no_traces, without_traces
    from lessonweaver.lessons import STATUSES

    given = options.values(args, options.RUN)
    settings = _settings(given)
    empty = without_traces(settings.paths)
    if len(empty) == len(settings.paths):
        _nothing_to_read(empty, settings.db)
    store.check(settings.db)  # a foreign file or a run in progress, caught before Prefect starts
    from lessonweaver import pipeline

    in_process = args.no_prefect or pipeline.nothing_to_read(settings)
    if in_process:
        with watched(args.quiet, in_process=True):
            run = pipeline.run_local(settings)
    else:
        from lessonweaver import prefect_server

        prefect_server.idle_seconds()  # a wrong LESSONWEAVER_PREFECT_IDLE is told before Prefect loads
        prefect_defaults(args.quiet)
        nightly = load_flow(NIGHTLY_FLOW)  # Prefect sets up its loggers as it loads: the bar joins them after
        with prefect_server.api(None if args.quiet else _note) as server, watched(args.quiet, in_process=False):
            run = nightly(**given)
    print(format_summary(run, STATUSES, "in-process" if in_process else "in the flow"))
    if not in_process:
        print(f"prefect:    {server.describe(prefect_server.idle_seconds())}")
    elif not args.no_prefect:
        print("prefect:    not started: nothing new to read, so the run was recorded in-process")
    _warn_stale(run)
    for path in run.empty_inputs:
        print(f"lessonweaver: warning: {no_traces([path])}", file=sys.stderr)
    return 0


def _note(line: str) -> None:
    print(f"lessonweaver: {line}", file=sys.stderr, flush=True)


def _nothing_to_read(empty: list[str], db: str) -> None:
    """No trace file under any input: a mistake in the command, not a quiet night (that one finds files read
    before). Say so, make no empty database or reports (as tar makes no empty archive), leave an existing
    database as it was, and stop with a usage error (2)."""
    from lessonweaver.discover import InputError, no_traces

    print(f"run: nothing read: no trace file under {', '.join(empty)}; the database {db} "
          + ("is left as it was" if os.path.exists(db) else "was not made") + ", and no report was written")
    raise InputError(no_traces(empty))


def _warn_stale(run: RunSummary) -> None:
    """The detectors out of date for the stored traces, on stderr too: the summary may go to a file."""
    if run.detector_advice:
        print(f"lessonweaver: warning: {run.detector_advice}", file=sys.stderr)


def _night_line(run: RunSummary) -> str:
    from lessonweaver.lessons import STATUSES

    statuses = run.lesson_statuses
    return (f"night {run.night}: run {run.run_id}, {run.records_loaded} records loaded "
            f"({run.records_quarantined} quarantined, {run.records_rejected} rejected), {run.detections} detections; "
            "lessons " + ", ".join(f"{statuses.get(s, 0)} {s}" for s in STATUSES))


def cmd_backfill(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from lessonweaver import store
    from lessonweaver.backfill import night_folders

    nights, _ = night_folders(args.root, args.start, args.end)
    given = options.values(args, options.BACKFILL)
    settings = _settings({**given, "paths": [nights[0][1]]})
    store.check(settings.db)  # a foreign file or a run in progress, caught before Prefect starts
    if args.no_prefect:
        from lessonweaver import pipeline

        with watched(args.quiet, in_process=True):
            runs = [pipeline.run_local(replace(settings, paths=(folder,), night=night.isoformat()))
                    for night, folder in nights]
    else:
        from lessonweaver import prefect_server

        prefect_server.idle_seconds()  # a wrong LESSONWEAVER_PREFECT_IDLE is told before Prefect loads
        prefect_defaults(args.quiet)
        backfill = load_flow(BACKFILL_FLOW)
        with prefect_server.api(None if args.quiet else _note) as server, watched(args.quiet, in_process=False):
            runs = backfill(root=args.root, start=args.start, end=args.end, **given)
        print(f"prefect:    {server.describe(prefect_server.idle_seconds())}")
    for run in runs:
        print(_night_line(run))
    print(f"backfill:   {plural(len(runs), 'night')}, {nights[0][0]} to {nights[-1][0]}")
    print(f"database:   {settings.db}")
    for path in runs[-1].written if runs else []:
        print(f"report:     {path}")
    if runs:
        _warn_stale(runs[-1])
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from lessonweaver import schedule

    given = options.values(args, options.SCHEDULE)
    missing = [p for p in given["paths"] if not Path(p).exists()]
    if missing:
        raise schedule.ScheduleError(f"path does not exist: {missing[0]}")
    options.to_settings(given)  # the same checks as a run's, before the server is asked
    if given["resolve_after"] < 1:
        raise schedule.ScheduleError("--resolve-after must be at least 1")
    prefect_defaults(quiet=True)
    done = schedule.register(given, args.cron, args.timezone, args.pool, args.name)
    p = done["parameters"]
    print(f"deployment {done['deployment']} ({done['id']}) registered on {done['api']}")
    print(f"schedule:   {done['cron']} ({done['timezone']})")
    print(f"work pool:  {done['pool']} (process{', created' if done['pool_created'] else ''})")
    print(f"inputs:     {' '.join(p['paths'])}")
    print(f"database:   {p['db']}")
    print(f"reports:    {p['out']}")
    print(f"start a worker:  prefect worker start --pool {done['pool']}")
    print(f"run it now:      prefect deployment run {done['deployment']}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from lessonweaver import forget

    if not (args.trace or args.tenant or args.source):
        raise ValueError("forget needs --trace ID, --tenant T or --source S")
    gone = forget.forget(_existing_db(args.db), args.trace, args.tenant, args.source, Settings().tenant_salt)
    if not gone.traces:
        print("forget: no stored trace matches; nothing changed")
        return 1
    print(f"forget: {plural(gone.traces, 'trace')}, {plural(gone.events, 'event')} and "
          f"{plural(gone.detections, 'detection')} removed; lessons {gone.lessons_before} -> {gone.lessons_after}. "
          "Reports show it from their next render.")
    return 0


def cmd_redetect(args: argparse.Namespace) -> int:
    """`lessonweaver redetect`: the detectors again over the stored traces; 1 if one of them failed."""
    from lessonweaver import redetect

    from lessonweaver.store import reports_folder

    db = _existing_db(args.db)
    settings = Settings(db=db, out=reports_folder(db, args.out), detector_dirs=tuple(args.detector_dirs),
                        templates=args.templates, tenant=args.tenant)
    done = redetect.redetect(settings, args.only)
    print("\n".join(redetect.summary(done)))
    return 1 if done.failed else 0


def cmd_render(args: argparse.Namespace) -> int:
    """`lessonweaver render`: the reports again from the database alone (no input read), audited."""
    from lessonweaver import pipeline, store

    out = store.reports_folder(_existing_db(args.db), args.out)
    store.require_current_lessons(args.db)
    con = store.connect(args.db, read_only=True)
    try:
        run = pipeline.render_stored(con, out, args.db, args.templates,
                                     pipeline.tenant_key(con, args.tenant, Settings().tenant_salt))
    finally:
        con.close()
    print(f"render: the reports of run {run.run_id} (night {run.night}) from {args.db} as it stands now"
          + (f", tenant {args.tenant}'s lessons only" if args.tenant else "") + ", audited: clean")
    print("\n".join(f"report:     {path}" for path in run.written))
    return 0


def cmd_audit(args: argparse.Namespace) -> int:
    from lessonweaver import audit, store

    out = store.reports_folder(args.db, args.out)
    con = store.connect(args.db, read_only=True)
    try:
        files = audit.outputs(out)
        findings = audit.audit_database(con) + audit.audit_files(con, files)
    finally:
        con.close()
    for finding in findings:
        print(finding)
    print(f"audit: {args.db} and {plural(len(files), 'file')} in {out}/: "
          + (plural(len(findings), "finding") if findings else "clean"))
    return 1 if findings else 0


def cmd_detectors(args: argparse.Namespace) -> int:
    from lessonweaver.detectors import load_detectors

    if args.action == "test":
        return _test_detectors(args.dirs)
    for d in load_detectors(args.detectors):
        print(f"{d.id:<20} {d.severity:<9} {d.title}")
        if args.verbose:
            print(f"{'':<20} {d.description}\n{'':<20} {d.sql.path}\n")
    return 0


def _test_detectors(dirs: list[str]) -> int:
    """`detectors test`: one line per case, then a count; 1 if any case failed."""
    from lessonweaver import cases
    from lessonweaver.detectors import load_detectors

    found = load_detectors(dirs)
    if dirs:  # the user's detectors only: the shipped ones are loaded to catch a clash of ids
        roots = [Path(d).resolve() for d in dirs]
        found = [d for d in found if any(d.sql.path.resolve().is_relative_to(r) for r in roots)]
        if not found:
            raise ValueError(f"no detectors in {', '.join(dirs)}")
    failed = passed = 0
    for outcome in cases.run_all(found):
        print(f"FAIL  {outcome.name}: {outcome.failure}" if outcome.failure else f"ok    {outcome.name}", flush=True)
        failed, passed = failed + bool(outcome.failure), passed + (not outcome.failure)
    print(f"detectors test: {plural(len(found), 'detector')}, {passed} passed, {failed} failed")
    return 1 if failed else 0


def _existing_db(db: str) -> str:
    if not os.path.exists(db):
        raise ValueError(f"no database at {db} (create one with: lessonweaver run --db {db})")
    return db


def _lesson_line(lesson: dict, verbose: bool) -> None:
    print(f"{lesson['lesson_id']}  {lesson['review']:<8}  {lesson['status'] or '':<9}  {lesson['severity']:<8}"
          f"  {lesson['priority'] or 0:>7.2f}  {lesson['occurrences']:>5}x  {one_line(lesson['title'])}")
    if verbose or lesson["lesson"] != lesson["proposed_lesson"]:
        print(f"{'':<15}lesson:   {one_line(lesson['lesson'])}")
    if verbose:
        if lesson["lesson"] != lesson["proposed_lesson"]:
            print(f"{'':<15}proposed: {one_line(lesson['proposed_lesson'])}")
        if lesson["note"]:
            print(f"{'':<15}note:     {one_line(lesson['note'])}")


def _list_lessons(args: argparse.Namespace, db: str) -> int:
    """`review` with no action: the lessons that pass the filters, and how many there are in all."""
    from lessonweaver import review, store
    from lessonweaver.project import db_option

    filters = review.Filters(None if args.all else args.decision, args.detector, args.source, args.severity,
                             args.status)
    con = store.connect(db, read_only=True)
    try:
        shown = review.candidates(con, filters, limit=args.limit)
    finally:
        con.close()
    for lesson in shown:
        _lesson_line(lesson, args.verbose)
    matching = shown[0]["matching"] if shown else 0
    which = plural(matching, "lesson") if args.all else plural(matching, f"{args.decision} lesson")
    narrowed = [f"{k} {v}" for k, v in (("detector", args.detector), ("source", args.source),
                                         ("severity", args.severity), ("status", args.status)) if v]
    print(f"({f'{len(shown)} of ' if len(shown) < matching else ''}{which}"
          + (f" with {', '.join(narrowed)}" if narrowed else "")
          + f"; accept, reject or edit with: lessonweaver review accept|reject|edit ID{db_option(db)})")
    return 0


def _show_in_full(db: str, lesson_id: str) -> int:
    """`review show ID`: one lesson, everything a reviewer needs to decide on it."""
    from lessonweaver import review, store

    con = store.connect(db, read_only=True)
    try:
        lesson_id = review.resolve_id(con, lesson_id)
        (lesson,) = review.candidates(con, review.Filters(decision=None), lesson_id)
        nights = review.sightings(con, lesson_id)
    finally:
        con.close()
    row = "{:<12}{}".format
    print(f"{lesson['lesson_id']}  {one_line(lesson['title'])}")
    print(row("status", f"{lesson['status']} · {lesson['detector']} · severity {lesson['severity']} · "
                        f"{lesson['category']}, {lesson['confidence']} · priority {lesson['priority'] or 0:.2f}"))
    print(row("review", lesson["review"] + (f" ({str(lesson['decided_at'])[:16]})" if lesson["decided_at"] else "")))
    if lesson["note"]:
        print(row("note", one_line(lesson["note"])))
    where = (f"projects {', '.join(lesson['projects'])}" if len(lesson["projects"] or []) > 1
             else f"source {one_line(lesson['source'])}")
    print(row("seen", f"{lesson['frequency'] or plural(lesson['occurrences'], 'occurrence')} · {where}"
                      + (f" · {plural(lesson['wasted_steps'], 'call')} spent before something worked"
                         if lesson["wasted_steps"] else "")))
    if len(lesson["detectors"] or []) > 1:
        print(row("found by", ", ".join(lesson["detectors"])))
    print(row("nights", f"first {lesson['first_night']}, last {lesson['last_night']} "
                        f"({plural(lesson['nights_seen'] or 0, 'night')})"))
    print(row("rule", one_line(lesson["lesson"])))
    if lesson["lesson"] != lesson["proposed_lesson"]:
        print(row("proposed", one_line(lesson["proposed_lesson"])))
    print(row("problem", one_line(lesson["problem"])))
    print(row("worked", one_line(lesson["recovery"]) if lesson["recovery"] else "no fix seen yet"))
    print(row("evidence", one_line(lesson["evidence"])))
    print(row("context", f"task {one_line(lesson['task'])}"))
    print(row("examples", ", ".join(one_line(t) for t in lesson["example_trace_ids"] or [])))
    for i, (night, occurrences, traces) in enumerate(nights):
        print(row("sightings" if i == 0 else "", f"{night}  {plural(occurrences, 'occurrence')} in {plural(traces, 'trace')}"))
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    from lessonweaver import review, store

    db = _existing_db(args.db)
    store.require_current_lessons(db)
    if args.action is None:
        return _list_lessons(args, db)
    if args.action == "show":
        return _show_in_full(db, args.lesson_ids[0])
    decision = {"accept": "accepted", "reject": "rejected", "edit": None}[args.action]
    with store.writing(db, "review") as work:
        con = store.connect(work)
        try:
            decided = review.decide_all(con, args.lesson_ids, decision, args.text, args.note)
        finally:
            con.close()
    for lesson in decided:
        print(f"{lesson['lesson_id']}: {lesson['review']}" + (" (text edited)" if args.text is not None else ""))
    # accepting the generated wording is allowed; say so, and how to put it in one's own words
    from lessonweaver.project import db_option

    for lesson in decided:
        if lesson["review"] == "accepted" and lesson["lesson"] == lesson["proposed_lesson"]:
            print(f"lessonweaver: {lesson['lesson_id']} is accepted with the generated text; to put it in your own "
                  f"words: lessonweaver review edit {lesson['lesson_id']} --text '...'{db_option(db)}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from lessonweaver import export, store

    if (args.check or args.diff) and not args.into:
        raise ValueError("--check and --diff go with --into FILE")
    if args.into and args.format == "jsonl":
        raise ValueError("--into writes Markdown into an instruction file; use --format agents-md (the default)")
    store.require_current_lessons(_existing_db(args.db))
    con = store.connect(args.db, read_only=True)
    try:
        project = export.known_project(con, _project_name(args.project)) if args.project else None
        text = export.export(con, args.format, args.templates, project)
    finally:
        con.close()
    if args.into:
        return _export_into(args, text)
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        from lessonweaver.render import write_atomic

        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(args.output), text)
        print(f"exported to {args.output}", file=sys.stderr)
    return 0


def cmd_rules(args: argparse.Namespace) -> int:
    return _print_rules(_existing_db(args.db), args.grace)


def _print_rules(db: str, grace: int = 2, file: TextIO | None = None) -> int:
    """Print each exported rule's health (to `file`); 1 when one needs a person."""
    from lessonweaver import rules, store

    store.require_current_lessons(db)
    con = store.connect(db, read_only=True)
    try:
        found = rules.health(con, grace)
    finally:
        con.close()
    print("\n".join(rules.report(found)), file=file or sys.stdout)
    return 1 if any(r.needs_person for r in found) else 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from lessonweaver import serve

    lessons = serve.Lessons(_existing_db(args.db), args.tenant, args.pending)
    serve.server(lessons).run()  # stdio, until the client closes it
    return 0


def _project_name(given: str) -> str:
    """A project as `--project` names it: a folder stands for its project by its name, as a coding
    session's folder does (lw_project); anything else is a project's name."""
    return Path(given).resolve().name if Path(given).is_dir() else given


def _export_into(args: argparse.Namespace, text: str) -> int:
    """The lessons as the managed block of an instruction file: written, checked (for CI: exit 1 when the
    file would change or a rule needs a person, with each rule's health printed) or shown as a diff."""
    from lessonweaver import agentfile

    before = agentfile.read(args.into)
    after = agentfile.splice(before, text, args.into)
    if args.diff:
        sys.stdout.write(agentfile.diff(before, after, args.into))
    if args.check:
        print(f"{args.into} is up to date" if after == before else f"{args.into} would change (nothing written)",
              file=sys.stderr)
        return max(int(after != before), _print_rules(args.db, file=sys.stderr))  # stdout: the diff alone
    if after == before:
        print(f"{args.into} is up to date", file=sys.stderr)
        return 0
    if not args.diff:
        agentfile.write(args.into, after)
        print(f"exported into {args.into}", file=sys.stderr)
    return 0


def cmd_sql(args: argparse.Namespace) -> int:
    from lessonweaver import examples, explore

    if args.examples:
        if args.query is not None or args.file is not None or args.param:
            raise ValueError("--examples lists the shipped queries: give it alone")
        print(examples.listing(examples.shipped()))
        return 0
    return explore.main(args.db, args.query, args.file, args.format, args.max_width, params=args.param)


AROUND_EVENTS = 21  # events `show --around SEQ` prints without --limit: SEQ and ten on each side


def cmd_show(args: argparse.Namespace) -> int:
    from lessonweaver import explore, timeline

    limit = args.limit or (AROUND_EVENTS if args.around else None)
    with explore.read_only(args.db) as con:
        (found,) = timeline.timelines(con, [timeline.resolve(con, args.trace_id)], limit, args.width, args.around)
    if args.around and args.around > found.stored:
        raise timeline.TimelineError(f"trace {found.trace_id} has {plural(found.stored, 'event')} (seq 1 to "
                                     f"{found.stored}): --around {args.around} is past its end")
    print("\n".join(timeline.text(found)))
    return 0
