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


OLD_RELEASE = Path(__file__).parent / "fixtures" / "old_release"
OLD_REFUND, OLD_PR_REVIEW, OLD_MIRROR = "L29f52a56cbce", "L476955c37687", "La46c58fe3291"


def old_release(tmp_path: Path) -> Path:
    """A copy of the database an earlier release wrote (fixtures/old_release/README.md)."""
    import gzip
    import shutil

    db = tmp_path / "lw.duckdb"
    db.write_bytes(gzip.decompress((OLD_RELEASE / "lw.duckdb.gz").read_bytes()))
    shutil.copytree(OLD_RELEASE / "lw.events", tmp_path / "lw.events")
    return db


def test_a_database_of_an_earlier_release_reads_and_moves_to_the_new_grain_on_its_next_run(tmp_path: Path, capsys):
    from conftest import REPO, cli

    db = old_release(tmp_path)
    assert query_db(db, "SELECT lesson_id, decision FROM reviews ORDER BY 1") == [
        (OLD_REFUND, "accepted"), (OLD_PR_REVIEW, "accepted"), (OLD_MIRROR, "rejected")]
    # its old lessons are not what a review should act on: one line says what to do
    code, out, err = cli(capsys, "review", "--db", str(db))
    assert (code, out) == (2, "") and err.startswith(f"lessonweaver: error: {db} holds lessons of an earlier lessonweaver")
    assert f"lessonweaver redetect --db {db}" in err
    # the next run moves it, and says so; every decision follows its findings
    code, out, err = cli(capsys, "run", str(REPO / "data" / "support-bot"), "--db", str(db), "--out",
                         str(tmp_path / "out"), "--no-prefect", "-q", "--night", "2026-12-01")
    assert (code, err) == (0, ""), err
    assert "  the lessons moved to the new grain (one lesson per cause" in out
    assert "  reviews:  3 decisions carried over to the lessons that absorbed theirs" in out
    accepted = dict(query_db(db, "SELECT evidence, lesson FROM lessons WHERE review = 'accepted'"))
    assert accepted[next(e for e in accepted if e.startswith("Policy check failed"))] == (
        "Check the current refund policy (14 days) before promising a refund window.")
    # the rejected one is now a one-off below the noise floor: its decision waits for it in `reviews`
    assert query_db(db, "SELECT count(*) FROM reviews WHERE decision = 'rejected' AND lesson_id <> ?", [OLD_MIRROR]) == [(1,)]
    assert query_db(db, "SELECT value FROM settings WHERE key = 'lesson_grain'") == [("2",)]
    code, out, _ = cli(capsys, "export", "--db", str(db))
    assert code == 0 and "- Check the current refund policy (14 days) before promising a refund window." in out


def test_redetect_moves_a_database_of_an_earlier_release_too(tmp_path: Path, capsys):
    from conftest import cli

    db = old_release(tmp_path)
    code, out, err = cli(capsys, "redetect", "--db", str(db), "--out", str(tmp_path / "out"))
    assert (code, err) == (0, ""), err
    lines = out.splitlines()
    assert lines[0].startswith("redetect: ") and lines[1] == (
        "  the lessons moved to the new grain: one lesson per cause, across tasks, sessions and tenants")
    assert "reviews:  3 decisions carried over to the lessons that absorbed theirs" in out
    assert cli(capsys, "review", "--db", str(db), "--all")[0] == 0
