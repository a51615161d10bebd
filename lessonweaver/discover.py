"""Discover: walk the inputs and list the trace files in a stable order.

Only names matter here; content is judged later. Hidden files and folders are passed over, as are
files whose suffix is not a trace suffix when they are found by walking a folder (a file named
explicitly is always taken, whatever its suffix); those are listed, so the run can say so.
"""

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import xxhash

from lessonweaver.words import plural

TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".traj")  # .traj: a SWE-agent trajectory, one JSON document
TRACE_NAMES = ", ".join(TRACE_SUFFIXES) + ", or those .gz"  # the names a folder's trace files have, in words


@dataclass(frozen=True)
class InputFile:
    path: str
    size: int
    mtime: float
    # A part of a large file of one record per line (see split_large): its bytes [start, end), the file
    # line its first byte starts, and the whole file's hash (a part cannot hash the file by itself).
    start: int = 0
    end: int | None = None
    first_line: int = 1
    content_hash: str | None = None

    @property
    def is_part(self) -> bool:
        return self.end is not None

    @property
    def length(self) -> int:
        """The bytes a batch reads of it: a part's own, else the whole file's."""
        return (self.end - self.start) if self.end is not None else self.size

    @property
    def compressed(self) -> bool:
        return self.path.endswith(".gz")

    @property
    def layout_hint(self) -> str:
        """'json' for one document per file, 'jsonl' for one record per line."""
        name = self.path[:-3] if self.compressed else self.path
        return "json" if name.endswith((".json", ".traj")) else "jsonl"


class InputError(ValueError):
    """An input path that does not exist."""


def _is_trace_name(name: str) -> bool:
    base = name[:-3] if name.endswith(".gz") else name
    return base.endswith(TRACE_SUFFIXES)


def _entry(path: str) -> InputFile:
    """A file to read; one that cannot even be looked at (a dangling link) is still listed, and reading
    it then says why, so one bad entry never stops the walk."""
    try:
        st = os.stat(path)
    except OSError:
        return InputFile(path=path, size=0, mtime=0.0)
    return InputFile(path=path, size=st.st_size, mtime=st.st_mtime)


# Hidden folders are passed over (.git, .venv), except where coding agents keep their sessions.
AGENT_HOMES = (".claude", ".codex")


def _walk(folder: Path) -> Iterator[tuple[str, bool]]:
    """The files under `folder`, hidden ones aside, in a stable order, each with whether its name is a
    trace file's."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d in AGENT_HOMES)
        for name in sorted(files):
            if not name.startswith("."):
                yield os.path.normpath(os.path.join(root, name)), _is_trace_name(name)


def _missing(raw: str) -> InputError:
    return InputError(f"input path does not exist: {raw}")


def scan(paths: list[str] | tuple[str, ...]) -> tuple[list[InputFile], list[str]]:
    """The trace files under `paths`, sorted, each once; and the other files found in their folders
    (names without a trace suffix, hidden ones aside), so a run can say what it did not read."""
    found: dict[str, InputFile] = {}
    passed_over: set[str] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            found.setdefault(os.path.normpath(raw), _entry(os.path.normpath(raw)))
        elif p.is_dir():
            for full, is_trace in _walk(p):
                if is_trace:
                    found.setdefault(full, _entry(full))
                else:
                    passed_over.add(full)
        else:
            raise _missing(raw)
    return [found[k] for k in sorted(found)], sorted(passed_over - set(found))


def without_traces(paths: list[str] | tuple[str, ...]) -> list[str]:
    """The paths under which no trace file is found: an empty folder, or one of other files only (a file
    named is read whatever its name). A folder's walk stops at its first trace file."""
    for raw in paths:
        if not Path(raw).exists():
            raise _missing(raw)
    return [raw for raw in paths if not Path(raw).is_file() and not any(t for _, t in _walk(Path(raw)))]


def no_traces(paths: list[str]) -> str:
    """Why nothing is read from `paths` (none holds a trace file), in one line: what is there instead,
    and which names are read."""
    others = scan(paths)[1]
    there = (f"{plural(len(others), 'other file')} there {'is' if len(others) == 1 else 'are'} not read ("
             + ", ".join(others[:3]) + (", ..." if len(others) > 3 else "") + ")") if others else "nothing is there"
    return (f"no trace file under {', '.join(paths)}: {there}; lessonweaver reads files named {TRACE_NAMES} "
            "in the folders it is given, and any file named on the command line")


def discover(paths: list[str] | tuple[str, ...]) -> list[InputFile]:
    """Return the trace files under `paths`, sorted, each once."""
    return scan(paths)[0]


def batches(files: list[InputFile], max_bytes: int, document_bytes: int | None = None) -> list[list[InputFile]]:
    """Group files into batches of at most `max_bytes` of input (a larger file is a batch alone), and of at
    most `document_bytes` of whole-document files (.json, .traj): each of those is one large record, and
    the memory a JSON function needs grows with the bytes of all records it has in hand at once."""
    out: list[list[InputFile]] = []
    current: list[InputFile] = []
    size = documents = 0
    for f in files:
        document = f.size if f.layout_hint == "json" else 0
        if current and (size + f.size > max_bytes or (document_bytes and document and documents + document > document_bytes)):
            out.append(current)
            current, size, documents = [], 0, 0
        current.append(f)
        size += f.size
        documents += document
    if current:
        out.append(current)
    return out


CHUNK = 8 * 1024 * 1024


def content_hasher(data: bytes = b"") -> "xxhash.xxh3_128":
    """The hash that tells whether a file's content changed since a run ingested it: XXH3 (128 bits),
    about six times faster than sha256 here, and plenty to tell two versions of a file apart. Nothing
    here needs a cryptographic hash."""
    return xxhash.xxh3_128(data)


def split_lines(f: InputFile, max_bytes: int) -> list[InputFile]:
    """Cut a file of one record per line into parts of about `max_bytes`, each ending at a line end, so a
    batch never holds more than that however large the file. Hashes the whole file on the way. A part is
    cut the same way within its own bytes, and its parts keep the whole file's hash."""
    digest = content_hasher()
    begin, stop = f.start, (f.end if f.is_part else f.size)
    cuts: list[tuple[int, int]] = [(begin, f.first_line)]  # (byte offset, line number) where each part starts
    offset, lines_before = begin, f.first_line - 1
    with open(f.path, "rb") as fh:
        fh.seek(begin)
        while offset < stop and (chunk := fh.read(min(CHUNK, stop - offset))):
            digest.update(chunk)
            at = 0
            while cuts[-1][0] + max_bytes < offset + len(chunk):
                newline = chunk.find(b"\n", max(at, cuts[-1][0] + max_bytes - offset))
                if newline < 0:
                    break
                at = newline + 1
                if offset + at < stop:
                    cuts.append((offset + at, lines_before + chunk.count(b"\n", 0, at) + 1))
            lines_before += chunk.count(b"\n")
            offset += len(chunk)
    if len(cuts) == 1:
        return [f]
    ends = [start for start, _ in cuts[1:]] + [offset]
    whole = f.content_hash if f.is_part else digest.hexdigest()
    return [replace(f, start=start, end=end, first_line=line, content_hash=whole)
            for (start, line), end in zip(cuts, ends)]


def split_large(files: list[InputFile], max_bytes: int, splittable: Callable[[InputFile], bool]) -> list[InputFile]:
    """Files larger than a batch, when `splittable` says their records are whole lines, become parts.
    Their hashing is most of the time: several files are hashed at once (xxhash lets go of the GIL)."""
    large = [f.size > max_bytes and not f.compressed and f.layout_hint == "jsonl" and splittable(f) for f in files]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        parts = pool.map(lambda f: split_lines(f, max_bytes), [f for f, big in zip(files, large) if big])
        out: list[InputFile] = []
        for f, big in zip(files, large):
            out.extend(next(parts) if big else [f])
    return out
