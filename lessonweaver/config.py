"""Run settings: one plain, picklable value passed from the CLI or a flow to the pipeline and its stages.

The options that set them are declared in options.py."""

import datetime as dt
import os
import re
from dataclasses import dataclass, field

DEFAULT_DB = "lessonweaver.duckdb"
DEFAULT_OUT = "reports"
DEFAULT_INPUT = "data"


@dataclass(frozen=True)
class Settings:
    paths: tuple[str, ...] = (DEFAULT_INPUT,)
    db: str = DEFAULT_DB
    out: str = DEFAULT_OUT
    detector_dirs: tuple[str, ...] = ()  # the user's own detectors, added to the shipped ones
    templates: str | None = None  # a folder that overrides the shipped templates
    format: str | None = None  # force one adapter instead of sniffing each file
    pii: str = "redact"  # what to do with PII in untagged traces: 'redact' or 'quarantine'
    secrets: str = "redact"  # what to do with secrets in untagged traces: 'redact' (a typed marker) or 'quarantine'
    tenant: str | None = None  # render the reports from this tenant's traces only
    night: str | None = None  # YYYY-MM-DD the run counts for; default today (UTC)
    runner: str = "threads"  # where batches are staged: 'threads' or 'dask'
    dask_address: str | None = None  # a Dask scheduler; None with runner 'dask': a local cluster
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    # DuckDB's memory limit for the whole run: batches staged at once share it (batch_memory_limit).
    # Python and Prefect take about 0.45 GB beside it, so the default keeps a run within 2 GB.
    memory_limit: str = field(default_factory=lambda: os.environ.get("LESSONWEAVER_MEMORY_LIMIT", "1280MB"))
    # batches staged at once on this machine; each gets a share of the threads and of the memory limit
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    shared_machine: bool = True  # False when batches run on remote Dask workers, each with its own memory
    batch_bytes: int = 64 * 1024 * 1024  # input read into one staging database at a time: bounds memory
    work_dir: str | None = None  # where batches leave their Parquet; shared storage when workers are remote
    resolve_after: int = 7  # nights without a sighting before a lesson counts as resolved
    report_lessons: int = 25  # lessons the Markdown and HTML reports list (lessons.jsonl holds all)
    retain_days: int = 0  # drop events of traces older than this many days after each load; 0: keep them all
    merge_threshold: float = 0.6  # Jaccard similarity at which two wordings are one lesson (tests/test_merge.py)
    # empty: the database's own salt
    tenant_salt: str = field(default_factory=lambda: os.environ.get("LESSONWEAVER_TENANT_SALT", ""))


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?i?B)\s*$", re.IGNORECASE)
_UNIT = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
         "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


def memory_bytes(text: str) -> int:
    """A memory size as DuckDB writes it (1536MB, 2GB, 1.5GiB) in bytes, with a message a user can act on."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"memory limit must be a size such as 1536MB or 2GB, not '{text}'")
    return int(float(m.group(1)) * _UNIT[m.group(2).lower()])


def batch_threads(settings: Settings) -> int:
    """Threads for one batch's DuckDB. A batch's tables are small, so DuckDB gains little from a second
    thread inside one; batches side by side use the cores better (benchmarks/README.md)."""
    if not settings.shared_machine:
        return settings.threads
    return max(1, settings.threads // settings.workers)


def batch_memory_limit(settings: Settings) -> str:
    """One batch's share of the run's memory limit, so that `workers` batches at once stay within it."""
    if not settings.shared_machine:
        return settings.memory_limit
    return f"{max(64 * 1024**2, memory_bytes(settings.memory_limit) // settings.workers) // 1024**2}MiB"


def document_batch_bytes(settings: Settings) -> int:
    """The most bytes of whole-document files (one large record each) a batch holds: a 64th of its memory
    share per thread. A JSON function keeps every record of a vector parsed until it is done with the
    vector, at several times the record's bytes, and a query may hold several; at 610 MiB a batch of 10 MB
    of LLM completion logs fits, one of 26 MB at twice that memory does not (batch.run_batch cuts it)."""
    return memory_bytes(batch_memory_limit(settings)) // (64 * batch_threads(settings))


def database_memory_limit(settings: Settings) -> str:
    """The memory limit of the run's connection to the database file (load, weave, render): one batch's
    share, like each batch staged before it. The load then reaches no further than staging did, so a large
    night peaks about where a small one does (0.95 GB at 0.3M traces, 1.01 GB at 3M: benchmarks/README.md)."""
    return batch_memory_limit(settings)


def parse_night(text: str) -> dt.date:
    """A night as YYYY-MM-DD, with a message a user can act on otherwise."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"night must be a date as YYYY-MM-DD, not '{text}'") from None
