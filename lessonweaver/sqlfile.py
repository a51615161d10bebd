"""SQL files with a metadata header, the shape shared by adapters and detectors.

A header is the run of `-- key: value` comment lines at the top of the file. An indented comment line
continues the previous value, so a long description can wrap; a bare `--` ends the header, and any
comment lines after it are prose for the reader:

    -- id: retry
    -- title: Retried after a failure
    -- description: A retry event after an error,
    --   or the same tool called again after it failed.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path

_KEY = re.compile(r"^--\s*([a-z_]+)\s*:\s?(.*)$")
_CONTINUED = re.compile(r"^--\s{2,}\S")


class SqlFileError(ValueError):
    """A SQL file whose header is missing or malformed."""


@dataclass(frozen=True)
class SqlFile:
    path: Path
    header: dict[str, str] = field(default_factory=dict)
    body: str = ""

    def require(self, *keys: str) -> None:
        missing = [k for k in keys if not self.header.get(k)]
        if missing:
            raise SqlFileError(f"{self.path}: header is missing {', '.join(missing)}")


def read_sql_file(path: Path) -> SqlFile:
    """Split a SQL file into its header fields and the SQL after them."""
    return parse_sql(Path(path).read_text(encoding="utf-8"), Path(path))


def parse_sql(text: str, path: Path) -> SqlFile:
    """Split the text of the SQL file at `path` into its header fields and the SQL after them."""
    header: dict[str, str] = {}
    lines = text.splitlines()
    last_key = None
    body_start = len(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("--"):
            body_start = i
            break
        if stripped == "--":
            last_key = None
            continue
        match = _KEY.match(stripped) if last_key is not None or not header else None
        if match:
            last_key = match.group(1)
            header[last_key] = match.group(2).strip()
        elif last_key and _CONTINUED.match(stripped):
            header[last_key] = f"{header[last_key]} {stripped.lstrip('-').strip()}"
    body = "\n".join(lines[body_start:]).strip()
    if not body:
        raise SqlFileError(f"{path}: no SQL after the header")
    return SqlFile(path, header, body)
