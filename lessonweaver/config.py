"""Run settings: one plain, picklable value passed from the CLI to the flow and its tasks."""

import datetime as dt
import os
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
    threads: int = field(default_factory=lambda: os.cpu_count() or 1)
    memory_limit: str = field(default_factory=lambda: os.environ.get("LESSONWEAVER_MEMORY_LIMIT", "1536MB"))
    batch_bytes: int = 64 * 1024 * 1024  # input read into one staging database at a time: bounds memory
    work_dir: str | None = None  # where batches leave their Parquet; shared storage when workers are remote
    resolve_after: int = 7  # nights without a sighting before a lesson counts as resolved
    merge_threshold: float = 0.6  # Jaccard similarity at which two wordings are one lesson (tests/test_merge.py)
    pii: str = "redact"  # what to do with PII in untagged traces: 'redact' or 'quarantine'
    # empty: the database's own salt
    tenant_salt: str = field(default_factory=lambda: os.environ.get("LESSONWEAVER_TENANT_SALT", ""))


def parse_night(text: str) -> dt.date:
    """A night as YYYY-MM-DD, with a message a user can act on otherwise."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"night must be a date as YYYY-MM-DD, not '{text}'") from None
