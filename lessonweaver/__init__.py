"""lessonweaver: find where agents went wrong in their traces and weave it into lessons."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lessonweaver.explore import Lessonweaver

__version__ = "0.1.0"
__all__ = ["__version__"]  # `from lessonweaver import *` must not shadow the builtin open()


def open(path: str | os.PathLike[str] = "lessonweaver.duckdb") -> Lessonweaver:  # noqa: A001 - `lessonweaver.open(path)` in notebooks
    """Open a lessonweaver database read-only for exploration: `.sql(query) -> polars.DataFrame`, and
    `.lessons()`, `.trend()`, `.detections()`, `.timeline(trace_id)`, `.connection()`. DuckDB and polars
    load on first use, so importing the package stays light. See docs/exploring.md."""
    from lessonweaver.explore import open as _open

    return _open(path)
