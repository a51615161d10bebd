"""A trace's timeline: its events in order, each detection marked at the event it points to.

Used by `lessonweaver show TRACE_ID` (the terminal) and by the HTML report (a folded timeline for each
example trace of the lessons it shows), so both read a trace the same way. Quarantined traces are not in
the database at all; every text shown passes through the same scrub as the rest of the report, since
screened content may still hold URLs, paths, hosts or token-like strings. The SQL is in sql/timeline/.
"""

import datetime as dt
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

import duckdb

from lessonweaver.queries import execute
from lessonweaver.scrub import one_line
from lessonweaver.words import plural


class TimelineError(ValueError):
    """No single stored trace answers to the id given: one line, saying why."""


@dataclass(frozen=True)
class Mark:
    """A detection as a timeline shows it: where (`seq`, None for the whole trace) and what."""
    detector: str
    severity: str
    problem: str
    lesson_id: str | None  # the lesson holding it
    seq: int | None
    below_floor: bool = False  # a one-off below the noise floor: in no lesson


@dataclass(frozen=True)
class Event:
    seq: int
    when: str  # its time as the timeline shows it ('' when it has none)
    type: str  # canonical; an unknown type with the type as written: `unknown (planner_note)`
    status: str
    content: str  # scrubbed, on one line, cut to the timeline's width
    marks: tuple[Mark, ...]


@dataclass(frozen=True)
class Timeline:
    trace_id: str
    source: str
    task: str
    outcome: str
    started_at: dt.datetime | None
    stored: int  # events the database holds for the trace
    events: tuple[Event, ...]  # those shown: all, or at most the limit asked for
    other_marks: tuple[Mark, ...]  # about the whole trace, or at an event not shown

    @property
    def left_out(self) -> int:
        return self.stored - len(self.events)

    @property
    def timed(self) -> bool:
        """Whether any event shown has a time: a timeline without times needs no column for them."""
        return any(e.when for e in self.events)

    @property
    def detections(self) -> int:
        return len(self.other_marks) + sum(len(e.marks) for e in self.events)

    def pieces(self) -> Iterator[tuple[str, Event | int]]:
        """The events shown, in order, with ("gap", n) where n events between them were left out."""
        last = 0
        for event in self.events:
            if event.seq > last + 1:
                yield "gap", event.seq - last - 1
            yield "event", event
            last = event.seq
        if self.stored > last:
            yield "gap", self.stored - last


def resolve(con: duckdb.DuckDBPyConnection, given: str) -> str:
    """The stored trace that `given` names: its full id, or the start of exactly one trace's id."""
    given = given.strip()
    if not given:
        raise TimelineError("give a trace id (or the start of one)")
    found = execute(con, "timeline/find.sql", given=given).fetchall()
    loaded = [t for t, kind, _ in found if kind == "loaded"]
    if given in loaded or len(loaded) == 1:
        return given if given in loaded else loaded[0]
    if loaded:
        raise TimelineError(f"'{given}' starts more than one trace id ({', '.join(loaded[:2])}, ...): "
                            "give more of it")
    why = {kind: reason for _, kind, reason in found}
    if "quarantined" in why:
        raise TimelineError(f"trace '{given}' was quarantined ({why['quarantined']}): only its id, file "
                            "and reason are stored")
    if "forgotten" in why:
        raise TimelineError(f"trace '{given}' was removed by lessonweaver forget")
    raise TimelineError(f"no trace '{given}' in the database (list them with: "
                        "lessonweaver sql \"SELECT trace_id FROM traces\")")


def timelines(con: duckdb.DuckDBPyConnection, trace_ids: list[str], limit: int | None = None,
              width: int = 100, around: int | None = None) -> list[Timeline]:
    """The timelines of the stored traces among `trace_ids`, in that order. With `limit`, at most that
    many events each: those nearest to event `around`, else those detections point to and their
    neighbours first; content cut to `width`."""
    ids = list(dict.fromkeys(trace_ids))
    heads = {r[0]: r for r in execute(con, "timeline/traces.sql", traces=ids).fetchall()}
    marks: dict[str, list[Mark]] = {}
    for trace_id, seq, detector, severity, problem, lesson_id, below in execute(
            con, "timeline/detections.sql", traces=ids).fetchall():
        marks.setdefault(trace_id, []).append(Mark(detector, severity or "", one_line(problem, 200), lesson_id, seq, below))
    rows: dict[str, list[tuple]] = {}
    for row in execute(con, "timeline/events.sql", traces=ids, limit=limit, around=around).fetchall():
        rows.setdefault(row[0], []).append(row)
    return [_timeline(heads[t], rows.get(t, []), marks.get(t, []), width) for t in ids if t in heads]


def _timeline(head: tuple, rows: list[tuple], marks: list[Mark], width: int) -> Timeline:
    trace_id, source, task, outcome, started_at = head
    times = [r[2] for r in rows if r[2] is not None]
    one_day = len({t.date() for t in times}) <= 1
    at: dict[int, list[Mark]] = {}
    for mark in marks:
        at.setdefault(mark.seq, []).append(mark)
    events = tuple(
        Event(seq, "" if ts is None else ts.strftime("%H:%M:%S" if one_day else "%m-%d %H:%M:%S"),
              f"unknown ({one_line(raw, 40)})" if kind == "unknown" and raw else kind or "", one_line(status, 24),
              one_line(_with_tool(tool, call_text(call) or content), width), tuple(at.pop(seq, ())))
        for _, seq, ts, kind, raw, status, tool, content, call, _ in rows)
    others = tuple(m for seq in sorted(at, key=lambda s: -1 if s is None else s) for m in at[seq])
    return Timeline(trace_id, one_line(source, 80), one_line(task, 200), one_line(outcome, 80),
                    started_at or (min(times) if times else None), rows[0][9] if rows else 0, events, others)


def _with_tool(tool: str | None, content: str | None) -> str:
    """A tool event's content led by the tool's name, unless it already starts with it."""
    content = content or ""
    return f"{tool}: {content}" if tool and not content.lstrip().startswith(tool) else content


# The argument that says most about what a call did, in this order: shown first, without its name.
MAIN_ARGUMENTS = ("command", "cmd", "file_path", "path", "filename", "file", "notebook_path", "url", "query",
                  "pattern", "q", "prompt")
# An absolute path and its last part: a reader needs the file's name, while the folders above it (a home
# folder, a user's name) are what the scrub masks as <PATH>.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|~?/)(?:[\w.\-]+[/\\])+([\w.\-]+)")


def call_text(call: str | None) -> str:
    """What a tool call did, as a person reads it: a shell's command (events.sql picks it), else the
    file, URL or query it named, then its other arguments as name=value; an absolute path as `…/` and
    its file's name. The timeline then scrubs and clips it like any content."""
    if not call:
        return ""
    try:
        args = json.loads(call)
    except ValueError:
        args = None
    if isinstance(args, dict):
        main = next((k for k in MAIN_ARGUMENTS if isinstance(args.get(k), str) and args[k].strip()), None)
        rest = [f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, separators=(',', ':'))}"
                for k, v in args.items() if k != main and v not in (None, "", [], {})]
        call = " ".join(([args[main]] if main else []) + rest)
    return _ABSOLUTE_PATH.sub(r"…/\1", call)


_ANCHOR_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def anchors(trace_ids: list[str]) -> dict[str, str]:
    """An element id per trace for its timeline in a page: `trace-` and the id with any other character
    as `-` (readable, and the same in every report), numbered when two ids come out alike."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for trace_id in dict.fromkeys(trace_ids):
        base = "trace-" + (_ANCHOR_UNSAFE.sub("-", trace_id)[:80] or "x")
        anchor, n = base, 1
        while anchor in taken:
            n += 1
            anchor = f"{base}-{n}"
        taken.add(anchor)
        out[trace_id] = anchor
    return out


def text(t: Timeline) -> list[str]:
    """The timeline as terminal lines: a heading, then one line per event (a `>` where a detection points,
    and a `^` line under it per detection)."""
    lines = [f"trace {t.trace_id} · source {t.source or '-'} · outcome {t.outcome or '-'} · "
             f"{plural(t.stored, 'event')} · {plural(t.detections, 'detection')}"]
    if t.task:
        lines.append(f"task: {t.task}")
    if t.started_at:
        lines.append(f"started {t.started_at:%Y-%m-%d %H:%M:%S} UTC")
    for mark in t.other_marks:
        where = "whole trace" if mark.seq is None else f"event {mark.seq} (not shown)"
        lines.append(f"{where}: {_mark(mark)}")
    seq_w = max([3] + [len(str(e.seq)) for e in t.events])
    when_w = max([0] + [len(e.when) for e in t.events]) if t.timed else 0
    type_w = max([4] + [len(e.type) for e in t.events])
    status_w = max([6] + [len(e.status) for e in t.events])
    lines.append("")
    lines.append(f"  {'seq':>{seq_w}}  " + (f"{'time':<{when_w}}  " if when_w else "")
                 + f"{'type':<{type_w}}  {'status':<{status_w}}  content")
    for kind, item in t.pieces():
        if kind == "gap":
            lines.append(f"  {'':>{seq_w}}  ... {plural(item, 'event')} left out")
            continue
        head = f"{'>' if item.marks else ' '} {item.seq:>{seq_w}}  " + (f"{item.when:<{when_w}}  " if when_w else "")
        lines.append(f"{head}{item.type:<{type_w}}  {item.status:<{status_w}}  {item.content}".rstrip())
        lines += [f"  {'':>{seq_w}}  ^ {_mark(m)}" for m in item.marks]
    return lines


def _mark(mark: Mark) -> str:
    lesson = f", lesson {mark.lesson_id}" if mark.lesson_id else ", below the noise floor" if mark.below_floor else ""
    return f"{mark.detector} ({mark.severity}{lesson}): {mark.problem}"
