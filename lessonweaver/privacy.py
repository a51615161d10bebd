"""Screen: keep sensitive traces out of everything lessonweaver stores or produces.

Runs in the batch's in-memory staging database, after adapting and before anything is written out. A
quarantined trace leaves only its trace_id, file, line and a reason behind; its rows are deleted from
staging so no later stage can see them.
"""

import re

import duckdb

# Values of the reserved tags that do not make a trace sensitive; any other value does, unknown ones too.
SAFE_SENSITIVITY = ("none", "low", "public")
SAFE_CLASSIFICATION = ("public", "internal")


def _tag_reason(meta: str) -> str:
    """SQL for the first reserved tag in the JSON `meta` that marks it sensitive, or NULL."""
    safe_s = ", ".join(f"'{v}'" for v in SAFE_SENSITIVITY)
    safe_c = ", ".join(f"'{v}'" for v in SAFE_CLASSIFICATION)
    return f"""CASE
        WHEN lw_truthy({meta}->>'contains_secret') THEN 'tag:contains_secret'
        WHEN lw_truthy({meta}->>'contains_pii') THEN 'tag:contains_pii'
        WHEN nullif(trim({meta}->>'sensitivity'), '') IS NOT NULL
             AND lower(trim({meta}->>'sensitivity')) NOT IN ({safe_s}) THEN 'tag:sensitivity'
        WHEN nullif(trim({meta}->>'data_classification'), '') IS NOT NULL
             AND lower(trim({meta}->>'data_classification')) NOT IN ({safe_c}) THEN 'tag:data_classification'
    END"""


def screen(con: duckdb.DuckDBPyConnection) -> None:
    """Move every sensitive trace into the staging table `quarantine` and delete its content."""
    con.execute(
        f"""
        CREATE OR REPLACE TABLE quarantine AS
        SELECT trace_id, arg_min(reason, rank) AS reason FROM (
            SELECT trace_id, {_tag_reason('metadata')} AS reason, 0 AS rank FROM traces
            UNION ALL
            SELECT trace_id, {_tag_reason('metadata')} AS reason, seq AS rank FROM events
        ) WHERE reason IS NOT NULL GROUP BY trace_id;

        DELETE FROM events WHERE trace_id IN (SELECT trace_id FROM quarantine);
        DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM quarantine);
        """
    )


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
