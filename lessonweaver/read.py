"""Read: each raw file once, into staging records.

Python touches each file once, for what DuckDB cannot do on raw bytes: gunzip, the content hash, a
byte-order mark and bytes that are not UTF-8. Everything per record (splitting lines, parsing and
checking JSON) happens in DuckDB, set-at-a-time.

Staging tables this stage creates in the batch's in-memory database:
  files(file_id, path, sha256, size, mtime, note, skipped)
  records(file_id, line, record, doc)  -- every JSON object found, one row per record
  rejects(file_id, line, record, reason)
`line` is the line in the file when records are lines; `record` numbers records within a file.
"""

import codecs
import errno
import hashlib
import json
import zlib
from collections.abc import Iterable

import duckdb
import pyarrow as pa

from lessonweaver.discover import InputFile

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
        if exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string"):
            return "invalid JSON (unexpected end of input)"
        where = f"line {exc.lineno} column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        return f"invalid JSON ({exc.msg.lower().removesuffix(' at')} at {where})"
    except RecursionError:
        return "invalid JSON (nested too deeply)"
    return "invalid JSON (non-standard value)"


CHUNK = 8 * 1024 * 1024  # bytes read at a time when hashing and checking a plain file
_GLOB = set("*?[]{}")  # read_text would take these in a path as a pattern


def _check_plain(path: str) -> tuple[str, bool]:
    """Hash a file and check that it is UTF-8, a chunk at a time: (sha256, valid UTF-8).

    A valid plain file is then read by DuckDB itself, so its text exists once, in DuckDB, and never
    as Python bytes, a Python string and a DataFrame column besides."""
    sha = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")()
    valid = True
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            sha.update(chunk)
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
    return sha.hexdigest(), valid


def _read_whole(f: InputFile) -> tuple[str, bytes, str | None, list[tuple[int, str]]]:
    """A gzip file, or one with bytes that are not UTF-8, read in Python: (sha256, text, note, bad lines)."""
    with open(f.path, "rb") as fh:
        raw = fh.read()
    sha = hashlib.sha256(raw).hexdigest()
    data, note = _gunzip(raw) if f.compressed else (raw, None)
    del raw
    text, bad = _decode(data)
    return sha, text, note, bad


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _read_part(f: InputFile) -> tuple[bytes, list[tuple[int, str]]]:
    """The text of a part of a large file (discover.split_lines), and its lines that are not UTF-8."""
    with open(f.path, "rb") as fh:
        fh.seek(f.start)
        data = fh.read((f.end or f.size) - f.start)
    text, bad = _decode(data)
    return text, [(line + f.first_line - 1, reason) for line, reason in bad]


# What is known of each file before its text is split, and the column types DuckDB gets.
INCOMING = {"file_id": pa.int64(), "path": pa.string(), "sha256": pa.string(), "size": pa.int64(),
            "mtime": pa.float64(), "hint": pa.string(), "note": pa.string(), "skipped": pa.bool_(),
            "direct": pa.bool_(), "line_offset": pa.int64()}


def read_files(con: duckdb.DuckDBPyConnection, files: Iterable[InputFile], known_hashes: frozenset[str] = frozenset()) -> None:
    """Read `files` into the staging tables; files whose content hash is in `known_hashes` are skipped."""
    meta: dict[str, list] = {k: [] for k in INCOMING}
    direct_paths: list[str] = []
    # Texts read in Python (checked UTF-8 bytes) reach DuckDB as an Arrow view: storing a whole file as
    # one value in a table costs more than splitting it into lines.
    blobs: dict[str, list] = {"file_id": [], "text": []}
    bad_bytes: list[tuple[int, int, str]] = []
    for file_id, f in enumerate(files, start=1):
        note, text, sha, direct = None, None, "", False
        try:
            if f.is_part:
                sha = f.sha256 or ""
                skipped = sha in known_hashes
                if not skipped:
                    text, bad = _read_part(f)
                    bad_bytes.extend((file_id, line, reason) for line, reason in bad)
            else:
                valid = False
                if not f.compressed and not (_GLOB & set(f.path)):
                    sha, valid = _check_plain(f.path)
                skipped = sha in known_hashes
                if valid and not skipped:
                    direct = True
                elif not skipped:
                    sha, text, note, bad = _read_whole(f)
                    skipped = sha in known_hashes and note is None
                    if skipped:
                        text = None
                    bad_bytes.extend((file_id, line, reason) for line, reason in bad)
        except OSError as exc:
            if exc.errno in TRANSIENT_ERRNOS:
                raise TransientReadError(f"{f.path}: {exc.strerror}") from None
            note, text, skipped = f"{UNREADABLE} ({exc.strerror or exc.__class__.__name__})", None, False
            sha = hashlib.sha256(b"").hexdigest()
        hint = "lines" if f.is_part else f.layout_hint
        for key, value in zip(INCOMING, (file_id, f.path, sha, f.size, f.mtime, hint, note, skipped, direct,
                                         f.first_line - 1)):
            meta[key].append(value)
        if text is not None:
            blobs["file_id"].append(file_id)
            blobs["text"].append(text)
        del text
        if direct:
            direct_paths.append(f.path)
    # One table for every file's row, not an insert per file: a batch may hold thousands of small files.
    con.register("incoming_meta", pa.table({k: pa.array(v, INCOMING[k]) for k, v in meta.items()}))
    con.execute("CREATE OR REPLACE TEMP TABLE incoming_files AS SELECT * FROM incoming_meta")
    con.unregister("incoming_meta")
    del meta
    incoming_blobs = pa.table({"file_id": pa.array(blobs["file_id"], pa.int64()),
                               "text": pa.array(blobs["text"], pa.large_binary()).view(pa.large_string())})
    del blobs
    con.register("incoming_blobs", incoming_blobs)
    # Plain UTF-8 files are read by DuckDB (a byte-order mark dropped); the rest came through Python.
    direct_text = (f"SELECT filename, content FROM read_text({_sql_list(direct_paths)})" if direct_paths
                   else "SELECT NULL::VARCHAR AS filename, NULL::VARCHAR AS content WHERE false")
    con.execute(
        f"""
        CREATE OR REPLACE TEMP VIEW incoming_text AS
        SELECT i.*, CASE WHEN i.direct THEN
                          CASE WHEN starts_with(t.content, chr(65279)) THEN substr(t.content, 2) ELSE t.content END
                        ELSE b.text END AS text
        FROM incoming_files i
        LEFT JOIN ({direct_text}) t ON i.direct AND t.filename = i.path
        LEFT JOIN incoming_blobs b ON b.file_id = i.file_id
        """
    )
    con.execute(
        """
        CREATE OR REPLACE TABLE files AS
        SELECT file_id, path, sha256, size, mtime, note, skipped FROM incoming_files;

        -- A file is one JSON document (an object, or an array of records) or one record per line.
        -- The suffix says which to try first; a pretty-printed .jsonl or a one-array file is still read.
        -- JSON functions raise on invalid input, so each is guarded by json_valid inside a CASE.
        -- Whole-file texts are only searched (regexp), never trimmed or stored: either copies the whole file.
        CREATE OR REPLACE TEMP TABLE file_layouts AS
        SELECT file_id, line_offset,
               CASE
                 WHEN text IS NULL OR NOT regexp_matches(text, '[^ \\t\\r\\n]') THEN 'empty'
                 WHEN hint = 'json' AND json_valid(text) THEN 'document'
                 WHEN hint = 'jsonl'
                      AND (CASE WHEN json_valid(first_line) THEN json_type(first_line) = 'ARRAY' ELSE true END)
                      AND json_valid(text) THEN 'document'
                 ELSE 'lines'
               END AS layout
        FROM (SELECT *, regexp_extract(text, '^[ \\t\\r\\n]*([^\\n]*)', 1) AS first_line FROM incoming_text);

        CREATE OR REPLACE TEMP VIEW file_text AS
        SELECT file_id, t.text, l.line_offset, l.layout FROM file_layouts l JOIN incoming_text t USING (file_id);

        CREATE OR REPLACE TEMP TABLE documents AS
        SELECT file_id, text, json_type(text) AS kind FROM file_text WHERE layout = 'document';

        -- A trailing \\r (CRLF files) is JSON whitespace and needs no trimming. Blank lines are no records.
        -- One parse per record says both whether it is JSON and what kind: json_type raises on invalid
        -- JSON, and try() turns that into NULL. Records that are not objects are rejected, then deleted.
        CREATE OR REPLACE TABLE records AS
        SELECT file_id, line, record, text AS doc, kind FROM (
            SELECT file_id, line, record, text,
                   coalesce(try(json_type(text)), 'INVALID') AS kind
            FROM (
            SELECT file_id, line, line AS record, text
            FROM (
                SELECT file_id, line_offset + generate_subscripts(parts, 1) AS line, unnest(parts) AS text
                FROM (SELECT file_id, line_offset, string_split(text, E'\\n') AS parts FROM file_text WHERE layout = 'lines')
            )
            WHERE length(text) > 0
            UNION ALL
            SELECT file_id, NULL::BIGINT, generate_subscripts(items, 1), CAST(unnest(items) AS VARCHAR)
            FROM (SELECT file_id, json_extract(text, '$[*]') AS items FROM documents WHERE kind = 'ARRAY')
            UNION ALL
            SELECT file_id, 1, 1, text FROM documents WHERE kind <> 'ARRAY'
            )
        ) WHERE kind <> 'INVALID' OR regexp_matches(text, '[^ \\t\\r]');

        -- A line that is not JSON and starts with // is a comment (JSONC, as some exporters and hand-edited
        -- fixtures write): not a record, like a blank line, but counted in the file's note.
        CREATE OR REPLACE TEMP TABLE comment_lines AS
        SELECT file_id, count(*) AS n FROM records
        WHERE kind = 'INVALID' AND line IS NOT NULL AND regexp_matches(doc, '^[ \\t]*//') GROUP BY file_id;
        DELETE FROM records WHERE kind = 'INVALID' AND line IS NOT NULL AND regexp_matches(doc, '^[ \\t]*//');
        UPDATE files SET note = coalesce(note || '; ', '') || c.n || ' comment line(s) (//) skipped'
        FROM comment_lines c WHERE files.file_id = c.file_id;
        DROP TABLE comment_lines;

        DROP TABLE documents;
        DROP VIEW file_text;
        DROP TABLE file_layouts;
        """
    )
    con.execute("DROP VIEW incoming_text; DROP TABLE incoming_files")
    con.unregister("incoming_blobs")
    del incoming_blobs
    con.execute(
        """
        CREATE OR REPLACE TABLE rejects (file_id BIGINT, line BIGINT, record BIGINT, reason VARCHAR);

        INSERT INTO rejects
        SELECT file_id, line, record,
               'not a JSON object (got ' || CASE kind
                   WHEN 'ARRAY' THEN 'an array' WHEN 'VARCHAR' THEN 'a string' WHEN 'BOOLEAN' THEN 'a boolean'
                   WHEN 'NULL' THEN 'null' ELSE 'a number' END || ')'
        FROM records WHERE kind NOT IN ('OBJECT', 'INVALID');
        """
    )
    for file_id, line, reason in bad_bytes:
        con.execute("INSERT INTO rejects VALUES (?, ?, ?, ?)", [file_id, line, line, reason])
    invalid = con.execute(
        f"""
        SELECT file_id, line, record, doc,
               row_number() OVER (PARTITION BY file_id ORDER BY record) AS nth
        FROM records WHERE kind = 'INVALID'
        QUALIFY nth <= {_ENRICH_LIMIT}
        """
    ).fetchall()
    if invalid:
        con.executemany(
            "INSERT INTO rejects VALUES (?, ?, ?, ?)",
            [(fid, line, rec, json_error_reason(text)) for fid, line, rec, text, _ in invalid],
        )
    con.execute(
        f"""
        INSERT INTO rejects
        SELECT file_id, line, record, 'invalid JSON' FROM (
            SELECT file_id, line, record, row_number() OVER (PARTITION BY file_id ORDER BY record) AS nth
            FROM records WHERE kind = 'INVALID'
        ) WHERE nth > {_ENRICH_LIMIT};
        -- What is left is valid JSON text, checked above: no second parse downstream.
        DELETE FROM records WHERE kind <> 'OBJECT';
        ALTER TABLE records DROP COLUMN kind;
        """
    )
    con.execute(
        """
        UPDATE files SET note = coalesce(note || '; ', '') || 'no valid JSON in the file: is it a trace file?'
        WHERE file_id IN (SELECT file_id FROM rejects GROUP BY file_id
                          HAVING bool_and(starts_with(reason, 'invalid JSON') OR starts_with(reason, 'not valid UTF-8')))
          AND file_id NOT IN (SELECT file_id FROM records)
        """
    )
