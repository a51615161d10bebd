"""Error messages that may be shown: a database error can quote the record it choked on, so what
reaches a log line or the terminal is cut before any quote."""

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
