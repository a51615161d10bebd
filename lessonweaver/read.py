"""Read: each raw file once, into staging records.

Python touches each file once, for what DuckDB cannot do on raw bytes: gunzip, the content hash, a
byte-order mark and bytes that are not UTF-8. Everything per record (splitting lines, parsing and
checking JSON) happens in DuckDB, set-at-a-time.

Staging tables this stage creates in the batch's in-memory database:
  files(file_id, path, content_hash, size, mtime, note, skipped)
  records(file_id, line, record, doc)  -- every JSON object found, one row per record
  rejects(file_id, line, record, reason)
`line` is the line in the file when records are lines; `record` numbers records within a file.
Their SQL is in sql/stage/read_*.sql.
"""

import codecs
import errno
import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa

from lessonweaver.discover import InputFile, content_hasher
from lessonweaver.queries import execute

_BOM = b"\xef\xbb\xbf"
# Errors a second try may not meet (a flaky network mount); anything else is final for that file.
TRANSIENT_ERRNOS = {errno.EIO, errno.EAGAIN, errno.ETIMEDOUT, errno.ESTALE, errno.EBUSY, errno.ENETDOWN,
                    errno.ENETUNREACH, errno.ECONNRESET}
UNREADABLE = "could not read file"


class TransientReadError(RuntimeError):
    """A file could not be read for a reason that may pass: the batch is worth another try."""
_ENRICH_LIMIT = 1000  # invalid lines per file that get a precise parser message


CORRUPT_GZIP = "corrupt gzip data: the damaged part was not loaded"


def _gunzip(raw: bytes) -> tuple[bytes, str | None]:
    """Decompress every gzip member, keeping only output that is known to be exact.

    A truncated stream keeps what came out before the cut: that prefix is exact, and the cut line is then
    rejected as invalid JSON. A corrupt member (bad data or a bad checksum) is dropped whole: zlib may
    notice damage only at the member's end, after handing out altered text, so none of it can be trusted.
    Members before it have passed their checksum and stay.
    """
    out: list[bytes] = []
    data = raw
    while data:
        inflater = zlib.decompressobj(wbits=31)
        try:
            part = inflater.decompress(data)
        except zlib.error:
            return b"".join(out), CORRUPT_GZIP
        if not inflater.eof:
            out.append(part + inflater.flush())
            return b"".join(out), "truncated gzip stream: kept the lines before the cut"
        out.append(part)
        data = inflater.unused_data.lstrip(b"\x00")
    return b"".join(out), None


def _decode(data: bytes) -> tuple[bytes, list[tuple[int, str]]]:
    """Check that `data` is UTF-8, dropping a byte-order mark; lines that do not decode are blanked and
    returned as (line, reason). The result stays bytes: DuckDB takes them as they are, with no copy
    through a Python string."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    if data.isascii():
        return data, []
    try:
        data.decode("utf-8")
        return data, []
    except UnicodeDecodeError:
        pass
    lines, bad = [], []
    for number, line in enumerate(data.split(b"\n"), start=1):
        try:
            line.decode("utf-8")
            lines.append(line)
        except UnicodeDecodeError as exc:
            lines.append(b"")
            bad.append((number, f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1})"))
    return b"\n".join(lines), bad


def json_error_reason(text: str) -> str:
    """A parser message for an invalid JSON record: positions only, never content."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        # cut short: at its end, inside a string, or inside a last word or number (`fal`, `-1.`)
        if (exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
                or re.fullmatch(r"[A-Za-z0-9.+-]+", text[exc.pos:].rstrip())):
            return "invalid JSON (unexpected end of input)"
        where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        return f"invalid JSON ({exc.msg.lower().removesuffix(' at')} at {where})"
    except RecursionError:
        return "invalid JSON (nested too deeply)"
    return "invalid JSON (non-standard value)"


CHUNK = 8 * 1024 * 1024  # bytes read at a time when hashing and checking a plain file
_GLOB = set("*?[]{}")  # read_text would take these in a path as a pattern


def _check_plain(path: str) -> tuple[str, bool]:
    """Hash a file and check that it is UTF-8, a chunk at a time: (content hash, valid UTF-8).

    A valid plain file is then read by DuckDB itself, so its text exists once, in DuckDB, and never
    as Python bytes, a Python string and a DataFrame column besides."""
    digest = content_hasher()
    decoder = codecs.getincrementaldecoder("utf-8")()
    valid = True
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
            if valid:
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError:
                    valid = False
    if valid:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            valid = False
    return digest.hexdigest(), valid


def _read_whole(f: InputFile) -> tuple[str, bytes, str | None, list[tuple[int, str]]]:
    """A gzip file, or one with bytes that are not UTF-8, read in Python: (content hash, text, note, bad lines)."""
    with open(f.path, "rb") as fh:
        raw = fh.read()
    digest = content_hasher(raw).hexdigest()
    data, note = _gunzip(raw) if f.compressed else (raw, None)
    del raw
    text, bad = _decode(data)
    return digest, text, note, bad


def _read_part(f: InputFile) -> tuple[bytes, list[tuple[int, str]]]:
    """The text of a part of a large file (discover.split_lines), and its lines that are not UTF-8."""
    with open(f.path, "rb") as fh:
        fh.seek(f.start)
        data = fh.read((f.end or f.size) - f.start)
    text, bad = _decode(data)
    return text, [(line + f.first_line - 1, reason) for line, reason in bad]


# What is known of each file before its text is split, and the column types DuckDB gets.
INCOMING = {"file_id": pa.int64(), "path": pa.string(), "content_hash": pa.string(), "size": pa.int64(),
            "mtime": pa.float64(), "hint": pa.string(), "note": pa.string(), "skipped": pa.bool_(),
            "direct": pa.bool_(), "line_offset": pa.int64()}


@dataclass
class _Read:
    """One file as read: its hash, and its text when DuckDB cannot read the file itself."""
    digest: str
    skipped: bool = False  # its content hash is known: an earlier run loaded it
    direct: bool = False  # plain UTF-8: DuckDB reads it itself
    text: bytes | None = None
    note: str | None = None
    bad: list[tuple[int, str]] = field(default_factory=list)  # (line, reason): lines that are not UTF-8


def _read_one(f: InputFile, known_hashes: frozenset[str]) -> _Read:
    """Hash a file (or take a part's hash), skip it when the hash is known, else read what DuckDB cannot."""
    try:
        if f.is_part:
            digest = f.content_hash or ""
            if digest in known_hashes:
                return _Read(digest, skipped=True)
            text, bad = _read_part(f)
            return _Read(digest, text=text, bad=bad)
        digest, valid = "", False
        if not f.compressed and not (_GLOB & set(f.path)):
            digest, valid = _check_plain(f.path)
        if digest in known_hashes:
            return _Read(digest, skipped=True)
        if valid:
            return _Read(digest, direct=True)
        digest, text, note, bad = _read_whole(f)
        if digest in known_hashes and note is None:
            return _Read(digest, skipped=True, bad=bad)
        return _Read(digest, text=text, note=note, bad=bad)
    except OSError as exc:
        if exc.errno in TRANSIENT_ERRNOS:
            raise TransientReadError(f"{f.path}: {exc.strerror}") from None
        return _Read(content_hasher().hexdigest(),
                     note=f"{UNREADABLE} ({exc.strerror or exc.__class__.__name__})")


def read_files(con: duckdb.DuckDBPyConnection, files: Iterable[InputFile], known_hashes: frozenset[str] = frozenset()) -> None:
    """Read `files` into the staging tables; files whose content hash is in `known_hashes` are skipped."""
    bad_bytes = _register(con, files, known_hashes)
    execute(con, "stage/read_records.sql")
    con.unregister("incoming_blobs")
    execute(con, "stage/read_rejects.sql")
    if bad_bytes:
        con.executemany("INSERT INTO rejects VALUES (?, ?, ?, ?)",
                        [(file_id, line, line, reason) for file_id, line, reason in bad_bytes])
    invalid = execute(con, "stage/read_invalid.sql", limit=_ENRICH_LIMIT).fetchall()
    if invalid:
        con.executemany(
            "INSERT INTO rejects VALUES (?, ?, ?, ?)",
            [(fid, line, rec, json_error_reason(text)) for fid, line, rec, text, _ in invalid],
        )
    execute(con, "stage/read_done.sql", limit=_ENRICH_LIMIT)


def _register(con: duckdb.DuckDBPyConnection, files: Iterable[InputFile],
              known_hashes: frozenset[str]) -> list[tuple[int, int, str]]:
    """Read every file and hand DuckDB what sql/stage/read_records.sql splits: a row per file
    (incoming_files), the texts read in Python (incoming_blobs) and the files DuckDB reads itself
    (lw_direct_paths). Returns the lines that are not UTF-8, as (file_id, line, reason)."""
    meta: dict[str, list] = {k: [] for k in INCOMING}
    # Texts read in Python (checked UTF-8 bytes) reach DuckDB as an Arrow view: storing a whole file as
    # one value in a table costs more than splitting it into lines.
    blobs: dict[str, list] = {"file_id": [], "text": []}
    bad_bytes: list[tuple[int, int, str]] = []
    direct_paths: list[str] = []
    for file_id, f in enumerate(files, start=1):
        got = _read_one(f, known_hashes)
        bad_bytes.extend((file_id, line, reason) for line, reason in got.bad)
        hint = "lines" if f.is_part else f.layout_hint
        for key, value in zip(INCOMING, (file_id, f.path, got.digest, f.size, f.mtime, hint, got.note, got.skipped,
                                         got.direct, f.first_line - 1)):
            meta[key].append(value)
        if got.text is not None:
            blobs["file_id"].append(file_id)
            blobs["text"].append(got.text)
        if got.direct:
            direct_paths.append(f.path)
    # One table for every file's row, not an insert per file: a batch may hold thousands of small files.
    con.register("incoming_meta", pa.table({k: pa.array(v, INCOMING[k]) for k, v in meta.items()}))
    con.execute("CREATE OR REPLACE TEMP TABLE incoming_files AS SELECT * FROM incoming_meta")
    con.unregister("incoming_meta")
    con.register("incoming_blobs", pa.table({"file_id": pa.array(blobs["file_id"], pa.int64()),
                                             "text": pa.array(blobs["text"], pa.large_binary()).view(pa.large_string())}))
    con.execute("SET VARIABLE lw_direct_paths = ?::VARCHAR[]", [direct_paths])
    return bad_bytes
