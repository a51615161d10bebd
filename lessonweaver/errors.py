"""Error messages that may be shown: a database error can quote the record it choked on, so what
reaches a log line or the terminal is cut before any quote. A full disk and a folder that takes no
files are said in words, with the file's path (our own paths, never stored content)."""

import errno
import re

import duckdb

_QUOTE_OR_INPUT = re.compile(r"""['"`]|Input:""")


def safe_error(exc: BaseException) -> str:
    """The first line of an error, cut before anything quoted: database errors quote the data they choked on.

    Errors about the query itself (syntax, unknown columns or tables) quote only SQL, so they stay whole.
    """
    text = str(exc).strip()
    first = text.splitlines()[0] if text else exc.__class__.__name__
    if isinstance(exc, (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)):
        return first
    cut = _QUOTE_OR_INPUT.search(first)
    return (first[: cut.start()].rstrip() + " …") if cut else first


# What the system's error numbers mean for a file we meant to write.
_REASONS = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
            errno.EROFS: "the file system is read-only", errno.ENOSPC: "the disk is full",
            errno.EDQUOT: "the disk quota is used up"}
_FULL = (errno.ENOSPC, errno.EDQUOT)
# DuckDB says where it could not write, and why, in the words of strerror: 'Could not write file "PATH": ...'
_DUCKDB_FULL = re.compile(r'"([^"]+)"[^"]*(?:No space left on device|Disk quota exceeded)')


def os_reason(exc: OSError) -> str:
    """Why a file could not be written, in words (the system's own when none are known here: /proc, for
    one, refuses new files with 'No such file or directory')."""
    return _REASONS.get(exc.errno or 0) or f"the system says: {exc.strerror or exc}"


def disk_full(exc: BaseException) -> str | None:
    """The file a full disk kept us from writing, when that is what `exc` or an error that led to it is
    ('' when the error does not say which file); None otherwise."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in _FULL:  # a copy names the file written second
            return str(seen.filename2 or seen.filename or "")
        if isinstance(seen, duckdb.Error) and (m := _DUCKDB_FULL.search(str(seen))):
            return m.group(1)
        seen = seen.__cause__ or seen.__context__
    return None
