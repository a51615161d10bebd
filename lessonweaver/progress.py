"""A progress bar for runs watched on a terminal: batches and megabytes staged, the stage the run is in,
time elapsed and left (rich). The pipeline says how far it is through its log records (an `lw_progress`
extra), so the same calls serve the log lines of a run nobody watches and the bar of one somebody does.
"""

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

# Loggers whose records carry progress: our own (in-process runs) and Prefect's (flow and task runs).
LOGGERS = ("lessonweaver", "prefect.flow_runs", "prefect.task_runs")


def note(total_batches: int | None = None, total_bytes: int | None = None, staged_bytes: int | None = None,
         phase: str | None = None) -> dict[str, Any]:
    """The `extra` of a log record that moves the bar."""
    return {"lw_progress": {"batches": total_batches, "bytes": total_bytes, "staged": staged_bytes, "phase": phase}}


class _Bar(logging.Handler):
    """Moves the bar on records that carry progress; prints every other record above it."""

    def __init__(self, progress: Progress, show_lines: bool):
        super().__init__(logging.INFO)
        self.progress, self.show_lines = progress, show_lines
        self.task = progress.add_task("reading", total=None, counts="")
        self.batches = [0, 0]  # staged, in all
        self.megabytes = [0.0, 0.0]
        self.setFormatter(logging.Formatter("%(asctime)s | %(levelname)-7s | %(message)s", "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        moved = getattr(record, "lw_progress", None)
        if moved:
            self._move(moved)
        if self.show_lines:
            self.progress.console.print(self.format(record), markup=False, highlight=False)

    def _move(self, moved: dict[str, Any]) -> None:
        if moved["batches"] is not None:  # a run's plan (a backfill makes one per night): start again
            self.batches, self.megabytes = [0, moved["batches"]], [0.0, (moved["bytes"] or 0) / 1e6]
            self.progress.reset(self.task, total=max(1, moved["bytes"] or 0), description="staging")
        if moved["staged"] is not None:
            self.batches[0] += 1
            self.megabytes[0] += moved["staged"] / 1e6
            self.progress.advance(self.task, moved["staged"])
        if moved["phase"]:
            self.progress.update(self.task, description=moved["phase"])
        self.progress.update(self.task, counts=f"{self.batches[0]}/{self.batches[1]} batches, "
                                               f"{self.megabytes[0]:,.1f}/{self.megabytes[1]:,.1f} MB")


@contextmanager
def bar(show_lines: bool) -> Iterator[None]:
    """Show the bar on stderr while the block runs; `show_lines` prints the run's log lines above it (an
    in-process run's own log; Prefect prints its own)."""
    console = Console(stderr=True)
    progress = Progress(TextColumn("{task.description:<16}"), BarColumn(), TextColumn("{task.fields[counts]}"),
                        TimeElapsedColumn(),
                        TextColumn("left"), TimeRemainingColumn(), console=console, transient=True)
    handler = _Bar(progress, show_lines)
    loggers = [logging.getLogger(name) for name in LOGGERS]
    with progress:
        for logger in loggers:
            logger.addHandler(handler)
        try:
            yield
        finally:
            for logger in loggers:
                logger.removeHandler(handler)
