"""One batch of files through read, adapt, screen and detect, in a private in-memory database.

The batch never touches the lessonweaver database: it writes what survived the screen (and the
accounting) as Parquet into its own folder, and the load stage takes it from there. That keeps raw,
unscreened content in memory only, and lets batches run in parallel or on other machines.
"""

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from lessonweaver import adapters, detectors, privacy, read
from lessonweaver.config import Settings, batch_memory_limit, batch_threads
from lessonweaver.discover import InputFile, split_lines
from lessonweaver.errors import safe_error
from lessonweaver.queries import execute, query

# The Parquet files a batch leaves behind (written by sql/stage/outputs.sql, read by sql/load/).
OUTPUTS = ("traces", "trace_records", "events", "turns", "detections", "quarantine", "sealed", "rejects", "files")


class BatchError(RuntimeError):
    """A batch that failed for a reason other than its input (input problems become rejects)."""


class OutOfMemory(BatchError):
    """A batch ran out of its memory limit."""


class MemoryShareExceeded(OutOfMemory):
    """A batch ran out of its share of the run's memory limit (see config.batch_memory_limit)."""


@dataclass
class BatchResult:
    folders: list[str]  # where its Parquet outputs are: its own folder, or one per piece it was staged in
    detector_errors: dict[str, str] = field(default_factory=dict)
    alone: bool = False  # ran out of its share of memory and was staged again with the whole limit
    pieces: int = 1  # ran out of memory even alone, and was staged in this many pieces


def connect_staging(settings: Settings, spill: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB bounded by the batch's share of the run's threads and memory limit, with the
    shared macros. Past the limit it spills to `spill` (the batch's own folder), never to the current
    directory."""
    config: dict[str, object] = {"threads": batch_threads(settings), "memory_limit": batch_memory_limit(settings)}
    if spill:
        config["temp_directory"] = spill
    con = duckdb.connect(config=config)
    con.execute(query("macros.sql"))
    return con


def account(con: duckdb.DuckDBPyConnection) -> None:
    """Per file: every record is loaded, quarantined or rejected, exactly once."""
    execute(con, "stage/account.sql")


def write_outputs(con: duckdb.DuckDBPyConnection, folder: str) -> None:
    """Write the batch's outputs (OUTPUTS) as Parquet into `folder`, each trace with its content hash."""
    execute(con, "stage/outputs.sql", **{name: (Path(folder) / f"{name}.parquet").as_posix() for name in OUTPUTS})


def split_traces(folders: list[str], gathering_formats: list[str],
                 memory_limit: str | None = None) -> tuple[list[str], list[str]]:
    """Traces of gathering formats whose records were staged in more than one batch, with different
    content in each: (their ids, the files their records came from). Those files are staged again together.

    Only traces with a record of a gathering format are grouped, so a night of one-trace-per-line files
    costs one scan of the batches' trace ids; `memory_limit` bounds the grouping (it spills next to the
    batches' folders)."""
    if len(folders) < 2 or not gathering_formats:
        return [], []
    paths = [(Path(f) / "traces.parquet").as_posix() for f in folders]
    config: dict[str, object] = {"threads": 1}
    if memory_limit:
        config.update(memory_limit=memory_limit, temp_directory=str(Path(folders[0]).parent / "split-spill"))
    con = duckdb.connect(config=config)
    try:
        ids = [r[0] for r in execute(con, "stage/split_traces.sql", traces=paths, formats=gathering_formats).fetchall()]
        if not ids:
            return [], []
        records = [(Path(f) / "trace_records.parquet").as_posix() for f in folders]
        files = [r[0] for r in con.execute(
            "SELECT DISTINCT file FROM read_parquet(?) WHERE list_contains(?, trace_id) ORDER BY file",
            [records, ids]).fetchall()]
        return ids, files
    finally:
        con.close()


def run_batch(files: list[InputFile], settings: Settings, folder: str,
              known_hashes: frozenset[str] = frozenset(), only_traces: frozenset[str] | None = None) -> BatchResult:
    """Stage `files` and write the batch's Parquet outputs into `folder`.

    With `only_traces`, a merge batch: the files were staged before, in other batches, and are staged
    again together so that traces split between those batches are gathered whole. It keeps only those
    traces and accounts for no record (the first batches did).

    A batch that runs out of its share of the memory limit (a very large trace) is staged once more
    with the whole limit, on one thread, rather than failing the night; for that moment the run may use
    more than its limit. One that still does not fit is staged in two pieces, each in a folder of its
    own, and so on down to a single file, or a single line of a file of one trace per line: what a JSON
    function parses stays in memory for every record of a vector (up to 2,048), so many large records at
    once (a night of LLM completion logs) can need far more memory than their bytes."""
    try:
        return _stage(files, settings, folder, known_hashes, only_traces)
    except OutOfMemory as exc:
        failed = exc
    alone = replace(settings, workers=1, threads=1)
    if isinstance(failed, MemoryShareExceeded):
        try:
            result = _stage(files, alone, folder, known_hashes, only_traces)
            result.alone = True
            return result
        except OutOfMemory as exc:
            failed = exc
    halves = None if only_traces is not None else _halves(files, settings)
    if halves is None:
        raise failed
    pieces = [run_batch(half, alone, f"{folder}-{i}", known_hashes) for i, half in enumerate(halves, 1)]
    return BatchResult(folders=[f for p in pieces for f in p.folders],
                       detector_errors={k: v for p in pieces for k, v in p.detector_errors.items()},
                       alone=True, pieces=sum(p.pieces for p in pieces))


def _halves(files: list[InputFile], settings: Settings) -> tuple[list[InputFile], list[InputFile]] | None:
    """Two pieces of about half the bytes each: the files in two groups, or a lone file of one trace per
    line cut at a line end. None when it cannot be cut (one record, or a file whose lines are not traces)."""
    if len(files) == 1:
        f = files[0]
        lines = f.is_part or (f.layout_hint == "jsonl" and not f.compressed
                              and adapters.one_trace_per_line(f.path, adapters.load_adapters(), settings.format))
        files = split_lines(f, f.length // 2 + 1) if lines else files
        if len(files) == 1:
            return None
    sizes = [f.length for f in files]
    total, seen, cut = sum(sizes), 0, 1
    for i, size in enumerate(sizes[:-1], 1):
        seen += size
        cut = i
        if seen * 2 >= total:
            break
    return files[:cut], files[cut:]


def stage_in(con: duckdb.DuckDBPyConnection, files: list[InputFile], settings: Settings,
             known_hashes: frozenset[str] = frozenset(), detector_list: list[detectors.Detector] | None = None,
             on_step: Callable[[str, float], None] | None = None) -> dict[str, str]:
    """The staging sequence on a staging connection: read, scan, adapt, screen, detect, audit what was
    staged, and account for every record. Returns the detectors that failed (id -> why); `on_step`
    hears each step's seconds (the benchmarks' breakdown)."""
    found = detector_list if detector_list is not None else detectors.load_detectors(settings.detector_dirs)
    errors: dict[str, str] = {}
    sequence: list[tuple[str, Callable[[], object]]] = [
        ("read", lambda: read.read_files(con, files, known_hashes)),
        ("scan", lambda: privacy.scan(con, settings.pii, settings.secrets, settings.tenant_salt)),
        ("adapt", lambda: adapters.adapt(con, adapters.load_adapters(), settings.format)),
        ("screen", lambda: privacy.screen(con, settings.pii, settings.tenant_salt, settings.secrets)),
        ("detect", lambda: errors.update(detectors.detect(con, found))),
        ("audit staged", lambda: privacy.audit_staged(con)),
        ("account", lambda: account(con)),
    ]
    for name, step in sequence:
        started = time.perf_counter()
        step()
        if on_step:
            on_step(name, time.perf_counter() - started)
    return errors


def _stage(files: list[InputFile], settings: Settings, folder: str, known_hashes: frozenset[str],
           only_traces: frozenset[str] | None) -> BatchResult:
    os.makedirs(folder, exist_ok=True)
    con = connect_staging(settings, str(Path(folder) / "spill"))
    try:
        errors = stage_in(con, files, settings, known_hashes)
        if only_traces is not None:
            execute(con, "stage/keep_only.sql", trace_ids=sorted(only_traces))
        write_outputs(con, folder)
    except duckdb.Error as exc:
        # The database's message may quote raw record text; never let it reach a log line.
        names = ", ".join(f.path for f in files[:3]) + (" …" if len(files) > 3 else "")
        if not isinstance(exc, duckdb.OutOfMemoryException):
            raise BatchError(f"staging failed for {names}: {safe_error(exc)}") from None
        share = settings.shared_machine and settings.workers > 1
        raise (MemoryShareExceeded if share else OutOfMemory)(
            f"staging failed for {names}: {safe_error(exc)} (a larger LESSONWEAVER_MEMORY_LIMIT lets it fit)") from None
    finally:
        con.close()
    return BatchResult(folders=[folder], detector_errors=errors)
