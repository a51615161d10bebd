"""What the lessons and reports in place were made from, as one hash.

A run that reads nothing new, for the same night, with the same detectors, options and templates, over
the same detections and lesson decisions, would weave the same lessons and render the same reports.
The run compares this hash with the one the last published run stored and, when they match, skips the
weave and the render: at millions of traces those cost minutes and change nothing. Everything in the
hash is cheap to read: a few aggregates over detections and lessons, file contents of the detectors
and templates, and the options.
"""

import os
from pathlib import Path

import duckdb
import xxhash

from lessonweaver import __version__
from lessonweaver.detectors import Detector
from lessonweaver.resources import resource_dir

KEY = "published_fingerprint"  # its row in the `settings` table


def _files(folder: Path) -> list[tuple[str, bytes]]:
    return [(str(p.relative_to(folder)), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]


def _reports(out: str) -> list[tuple[str, int, int]]:
    """The published report files as they stand: a report deleted or edited since is rendered again."""
    folder = Path(out)
    if not folder.is_dir():
        return []
    return [(p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".")]


def compute(con: duckdb.DuckDBPyConnection, detectors: list[Detector], *, night: object, options: tuple,
            templates: str | None, out: str) -> str:
    """The hash of what the weave and the render read; `options` are the run options they depend on."""
    data = con.execute("""
        SELECT (SELECT (count(*), sum(hash(trace_id, detector, seq, evidence, lesson_id))) FROM detections),
               (SELECT (count(*), sum(hash(lesson_id, status, review, lesson, priority))) FROM lessons),
               (SELECT (count(*), max(decided_at)) FROM reviews),
               (SELECT count(*) FROM traces)
    """).fetchone()
    h = xxhash.xxh3_128()
    for part in (__version__, str(night), repr(options), os.path.abspath(out), repr(data),
                 repr(sorted((d.id, d.fingerprint) for d in detectors)),
                 repr(_files(resource_dir("templates"))), repr(_files(Path(templates)) if templates else None),
                 repr(_reports(out))):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()
