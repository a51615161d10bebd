"""The event files: a night's batches are moved into the store whole when they kept every trace they
staged, and copied without the traces left out otherwise; every event is stored once either way."""

from pathlib import Path

from conftest import query_db, write_traces
from lessonweaver.cli import main


def corrected(tid: str, text: str = "Check the queue first.") -> dict:
    return {"trace_id": tid, "source": "helpdesk", "task": "Close a ticket", "outcome": "corrected_by_human",
            "events": [{"id": "e1", "type": "user_message", "content": f"ticket {tid}"},
                       {"id": "e2", "type": "human_correction", "content": text}]}


def run(inputs: Path, db: Path) -> int:
    return main(["run", str(inputs), "--db", str(db), "--out", str(db.parent / "out"), "-q", "--no-prefect"])


def stored_files(db: Path) -> list[str]:
    return [Path(name).name for (name,) in query_db(db, "SELECT file FROM event_files ORDER BY file")]


def test_a_batch_that_kept_every_trace_is_moved_whole(tmp_path: Path):
    db = tmp_path / "lw.duckdb"
    write_traces(tmp_path / "in", "a.jsonl", [corrected("t1"), corrected("t2")])
    assert run(tmp_path / "in", db) == 0
    assert stored_files(db) == ["batch-0.parquet"]
    assert query_db(db, "SELECT count(*), count(DISTINCT (trace_id, seq)) FROM events") == [(4, 4)]


def test_a_batch_with_a_trace_left_out_is_copied_without_it(tmp_path: Path):
    db = tmp_path / "lw.duckdb"
    write_traces(tmp_path / "in", "a.jsonl", [corrected("t1")])
    assert run(tmp_path / "in", db) == 0
    # Night two: t1 again with other content (a conflict: rejected), and a new trace.
    write_traces(tmp_path / "in", "b.jsonl", [corrected("t1", "Something else."), corrected("t2")])
    assert run(tmp_path / "in", db) == 0
    assert sorted(stored_files(db)) == ["batch-0.parquet", "part-0.parquet"]
    assert query_db(db, "SELECT trace_id, count(*) FROM events GROUP BY 1 ORDER BY 1") == [("t1", 2), ("t2", 2)]
    assert query_db(db, "SELECT content FROM events WHERE trace_id = 't1' AND seq = 2") == [("Check the queue first.",)]


def test_event_files_written_before_a_column_existed_read_it_as_null(tmp_path: Path):
    """A store whose event files predate `actor` reads, and forgets from, them as they are: the column is
    NULL there, set where the newer files have it."""
    import duckdb

    from lessonweaver import forget

    db = tmp_path / "lw.duckdb"
    write_traces(tmp_path / "in", "a.jsonl", [corrected("t1"), corrected("t2")])
    assert run(tmp_path / "in", db) == 0
    (name,) = [n for (n,) in query_db(db, "SELECT file FROM event_files")]
    path = db.parent / "lw.events" / name
    con = duckdb.connect()
    con.execute(f"COPY (SELECT * EXCLUDE (actor) FROM read_parquet('{path}')) TO '{path}.old' (FORMAT parquet)")
    con.close()
    Path(f"{path}.old").replace(path)  # as an earlier release wrote it
    write_traces(tmp_path / "in", "b.jsonl", [corrected("t3")])
    assert run(tmp_path / "in", db) == 0
    assert query_db(db, "SELECT trace_id, count(*), count(actor) FROM events GROUP BY 1 ORDER BY 1") == [
        ("t1", 2, 0), ("t2", 2, 0), ("t3", 2, 0)]
    assert forget.forget(str(db), ["t1"], [], [], "").traces == 1
    assert query_db(db, "SELECT DISTINCT trace_id FROM events ORDER BY 1") == [("t2",), ("t3",)]


def test_event_files_hold_row_groups_of_about_16384_events(tmp_path: Path):
    """Readers of the stored events (a report's timelines, `show`, ad-hoc SQL) hold a row group's text at a
    time and skip a row group whose trace ids miss the ones asked for: both ways a night's events are
    stored, moved whole and copied, write them in row groups of 16,384 events, not one per batch."""
    db = tmp_path / "lw.duckdb"
    # 40,000 events a night: more than one group's worth even where a group closes late (below), so each
    # file must hold two groups or more however the copy's threads cut it
    write_traces(tmp_path / "in", "a.jsonl", [corrected(f"a{i:05}") for i in range(20000)])
    assert run(tmp_path / "in", db) == 0
    # Night two: a conflicting trace is left out, so the batch is copied (eventstore.write), not moved
    write_traces(tmp_path / "in", "b.jsonl", [corrected("a00000", "Something else.")]
                 + [corrected(f"b{i:05}") for i in range(20000)])
    assert run(tmp_path / "in", db) == 0
    assert sorted(stored_files(db)) == ["batch-0.parquet", "part-0.parquet"]
    files = [(tmp_path / "lw.events" / file).as_posix() for (file,) in query_db(db, "SELECT file FROM event_files")]
    groups = query_db(db, "SELECT regexp_extract(file_name, '[^/]+$'), row_group_id, row_group_num_rows "
                          "FROM parquet_metadata(?) WHERE path_in_schema = 'content' ORDER BY ALL", [files])
    # ROW_GROUP_SIZE is DuckDB's target: a copy written on two threads may close a group past it (18,000
    # rows seen once); what readers need is groups of that order, several to a night, not one a batch
    assert 16384 <= max(rows for _, _, rows in groups) < 2 * 16384
    assert {name for name, group, _ in groups if group > 0} == {"batch-0.parquet", "part-0.parquet"}
    assert query_db(db, "SELECT count(*) FROM events") == [(80000,)]
