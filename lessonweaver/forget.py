"""Forget: take traces out of the store everywhere, when a person or a team asks, keeping only that
they were forgotten; and retention, which drops old events while lessons keep their counts.

Forgetting removes a trace's events (the event files holding them are written again without them), its
detections, its row in `traces`, its quarantine row and the rejects that name it, then weaves the lessons
again, so their evidence and example traces no longer come from it. `forgotten` keeps a hash of the id,
so a trace delivered again is not stored again. The database file is then written afresh, so the
removed rows' bytes are not left in its free blocks. Reports show the change from their next render.
"""

import os
from dataclasses import dataclass

import duckdb

from lessonweaver import eventstore, lessons, store
from lessonweaver.queries import execute


@dataclass
class Forgotten:
    traces: int = 0
    events: int = 0
    detections: int = 0
    lessons_before: int = 0
    lessons_after: int = 0


def forget(db: str, trace_ids: list[str], tenants: list[str], sources: list[str], salt: str = "") -> Forgotten:
    """Forget the traces named by id, by tenant (as given to the producer; hashed as the store does) or
    by source, in database `db`, and weave the lessons again as the latest run did. Returns what went."""
    from lessonweaver.privacy import tenant_hash

    with store.writing(db, "forget") as work:
        con = store.connect(work)
        try:
            tenant_hashes = [tenant_hash(store.tenant_salt(con, salt), t) for t in tenants]
            gone = _remove(con, trace_ids, tenant_hashes, sources)
            if gone.traces:
                gone.lessons_after = lessons.reweave(con, store.resolve_after(con))[1]
        finally:
            con.close()
        if gone.traces:
            _rewrite(work)
    return gone


def _remove(con: duckdb.DuckDBPyConnection, trace_ids: list[str], tenant_hashes: list[str],
            sources: list[str]) -> Forgotten:
    con.execute("BEGIN TRANSACTION")
    try:
        gone = Forgotten(traces=execute(con, "forget/select.sql", trace_ids=trace_ids, tenants=tenant_hashes,
                                        sources=sources).fetchone()[0])
        gone.detections, gone.lessons_before = con.execute(
            "SELECT (SELECT count(*) FROM detections SEMI JOIN forget_ids USING (trace_id)), "
            "(SELECT count(*) FROM lessons)").fetchone()
        gone.events = eventstore.remove(con, "forget_ids")
        execute(con, "forget/remove.sql")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return gone


def _rewrite(work: str) -> None:
    """Write the database afresh (only live rows), so removed rows leave no bytes in its free blocks."""
    fresh = work + ".fresh"
    if os.path.exists(fresh):
        os.remove(fresh)
    con = duckdb.connect(work)
    try:
        con.execute("ATTACH ? AS fresh", [fresh])
        name = con.execute("SELECT current_database()").fetchone()[0].replace('"', '""')  # an identifier
        con.execute(f'COPY FROM DATABASE "{name}" TO fresh')
        con.execute("DETACH fresh")
    finally:
        con.close()
    os.replace(fresh, work)


def retain(con: duckdb.DuckDBPyConnection, days: int) -> int:
    """Drop the events of traces that started (or, with no start time, were loaded) more than `days` days
    ago, in one transaction; traces, detections and lessons stay. Returns the events dropped."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("CREATE OR REPLACE TEMP TABLE expired AS SELECT trace_id FROM traces "
                    "WHERE coalesce(started_at, loaded_at) < now()::TIMESTAMP - to_days($days::INTEGER)",
                    {"days": days})
        dropped = eventstore.remove(con, "expired")
        con.execute("DROP TABLE expired")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return dropped
