"""The engine's SQL files (sql/stage, load, weave, audit, forget, timeline), read once and run by name.

A file may hold several statements. DuckDB binds parameters only in the last statement of a text, so
`execute` runs the statements one by one, each with the named parameters (`$name`) it uses.
"""

from functools import cache

import duckdb

from lessonweaver.resources import sql_path


@cache
def query(name: str) -> str:
    """The text of the SQL file `name` under sql/, e.g. query("load/fates.sql")."""
    return sql_path(*name.split("/")).read_text(encoding="utf-8")


@cache
def _statements(name: str) -> tuple[tuple[str, frozenset[str]], ...]:
    return tuple((s.query, frozenset(s.named_parameters)) for s in duckdb.extract_statements(query(name)))


def execute(con: duckdb.DuckDBPyConnection, name: str, **params: object) -> duckdb.DuckDBPyConnection:
    """Run the statements of the SQL file `name` in order; returns the connection, which holds the last
    statement's result. A parameter no statement uses is a mistake, and so is one missing."""
    statements = _statements(name)
    unused = params.keys() - {p for _, names in statements for p in names}
    if unused:
        raise TypeError(f"{name} takes no parameter {', '.join(sorted(unused))}")
    for text, names in statements:
        con.execute(text, {p: params[p] for p in names} if names else None)
    return con
