"""A database written by an earlier lessonweaver opens and is brought up to date on its next write: its
`events` table moves to the event files, and `ingested_files.sha256` becomes `content_hash`."""

from pathlib import Path

import duckdb

from conftest import query_db
from lessonweaver import store
from lessonweaver.eventstore import COLUMNS, folder_for


def old_database(db: Path) -> None:
    """The shape of a database from before the event files and XXH3 content hashes."""
    store.connect(str(db)).close()
    con = duckdb.connect(str(db))
    columns = ", ".join(f"{c} {t}" for c, t in COLUMNS)
    con.execute(f"""
        ALTER TABLE ingested_files RENAME COLUMN content_hash TO sha256;
        DROP VIEW events;
        CREATE TABLE events ({columns});
        INSERT INTO events (trace_id, seq, event_id, type, content) VALUES ('old-1', 1, 'e1', 'user_message', 'hello');
        INSERT INTO ingested_files (path, sha256, size, mtime) VALUES ('a.jsonl', 'abc', 3, 1.0);
    """)
    con.close()


def test_an_old_database_is_brought_up_to_date(tmp_path: Path):
    db = tmp_path / "old.duckdb"
    old_database(db)
    assert query_db(db, "SELECT table_type FROM information_schema.tables WHERE table_name = 'events'") == [
        ("BASE TABLE",)]
    store.connect(str(db)).close()
    assert query_db(db, "SELECT table_type FROM information_schema.tables WHERE table_name = 'events'") == [("VIEW",)]
    assert query_db(db, "SELECT trace_id, content FROM events") == [("old-1", "hello")]
    assert query_db(db, "SELECT path, content_hash FROM ingested_files") == [("a.jsonl", "abc")]
    assert [p.name for p in folder_for(str(db)).rglob("*.parquet")] == ["part-0.parquet"]
    store.connect(str(db)).close()  # and once up to date, opening it again changes nothing
    assert query_db(db, "SELECT count(*) FROM event_files") == [(1,)]
