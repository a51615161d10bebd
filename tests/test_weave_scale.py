"""Weaving runs in bounded memory whatever the number of lesson variants, and a failure after the load
leaves the run recorded as failed, with what it loaded."""

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from conftest import write_traces
from lessonweaver import lessons, store
from lessonweaver.cli import main
from lessonweaver.config import Settings, database_memory_limit

WORDS = ("refund order invoice shipping window policy customer account migration deploy rollback review "
         "ticket escalation timeout retry cache config staging cluster tests late missing wrong stale "
         "duplicate partial expired blocked denied approved billing address payment charge dispute coupon "
         "delivery parcel stock supplier contract renewal upgrade trial license credit balance export "
         "report alert metric crash restart release branch merge build pipeline queue worker endpoint").split()


def diverse_database(path: Path, traces: int, tasks: int, tenants: int) -> None:
    """`traces` traces of 5 sources, `tasks` task families and `tenants` tenants, one detection each (of
    4 detectors), whose evidence mixes ids, numbers and words from a common frame: nearly every detection
    is a variant of its own, and texts in a block share a few words. Built in SQL, as a run would leave
    it before its weave."""
    vocabulary = "[" + ",".join(f"'{w}'" for w in WORDS) + "]"
    con = store.connect(str(path))
    con.execute(
        f"""
        INSERT INTO traces (trace_id, format, source, task, outcome, tenant, run_id)
        SELECT 'tr-' || i, 'lessonweaver', 'source-' || hash('s' || i) % 5,
               {vocabulary}[(1 + hash('t' || i) % {min(tasks, 50)})::BIGINT] || ' '
                   || {vocabulary}[(1 + hash('u' || i) % {max(1, tasks // 50)})::BIGINT] || ' task',
               'success', 'tenant-' || hash('v' || i) % {tenants}, 'r0'
        FROM range({traces}) t(i);

        INSERT INTO detections (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id,
                                variant_id, run_id, detected_at)
        SELECT detector, 'tr-' || i, 'e1', 1, 'high', evidence, evidence, evidence, id, id, 'r0', now()::TIMESTAMP
        FROM (
            SELECT i, detector, evidence, 'L' || substr(md5(i::VARCHAR), 1, 12) AS id FROM (
                SELECT i, ['human_correction', 'failed_evaluation', 'retry', 'unrecovered_error'][(1 + hash('d' || i) % 4)::BIGINT] AS detector,
                       'Customer ' || hash(i, 5) % 90000 || ' said '
                       || array_to_string(list_transform(range(8), lambda k: {vocabulary}[(1 + hash(k || ':' || i) % {len(WORDS)})::BIGINT]), ' ')
                       || ' on order A-' || hash(i, 6) % 99999 AS evidence
                FROM range({traces}) t(i)));
        """)
    con.close()


@pytest.mark.slow
@pytest.mark.parametrize("tasks, tenants, min_blocks, max_blocks", [
    (100, 50, 30_000, 100_000),  # tens of thousands of small blocks
    (1, 20, 300, 400),  # a few hundred blocks of some 300 alike variants each: pairwise candidates ran out of memory
], ids=["many-small-blocks", "large-blocks"])
def test_weave_of_many_variants_stays_within_the_default_memory_limit(tmp_path: Path, tasks, tenants, min_blocks, max_blocks):
    """120,000 variants woven under the default memory limit (the database connection's share of it),
    twice: the second weave, with some 10,000 more variants, keeps every lesson id the first gave."""
    db = tmp_path / "lw.duckdb"
    diverse_database(db, 120_000, tasks, tenants)
    settings = Settings()
    con = store.connect(str(db), threads=settings.threads, memory_limit=database_memory_limit(settings))
    try:
        new, total, _ = lessons.weave(con, "r0", dt.date(2026, 12, 1))
        variants, blocks = con.execute(
            "SELECT count(DISTINCT d.variant_id), count(DISTINCT (d.detector, t.source, t.task, t.tenant)) "
            "FROM detections d JOIN traces t USING (trace_id)").fetchone()
        assert variants == 120_000 and min_blocks <= blocks <= max_blocks
        assert new == total < variants  # some were alike enough to merge
        first = dict(con.execute("SELECT variant_id, lesson_id FROM lesson_variants").fetchall())
        assert len(first) == variants
        # every lesson is named by one of its own variants, and merged variants really are alike
        assert con.execute("SELECT count(*) FROM lesson_variants WHERE lesson_id NOT IN (SELECT variant_id FROM lesson_variants)").fetchone()[0] == 0
        assert con.execute("SELECT min(similarity) FROM lesson_variants").fetchone()[0] >= settings.merge_threshold
        con.execute("""
            INSERT INTO detections (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id, variant_id, run_id, detected_at)
            SELECT detector, trace_id, 'e2', 2, severity, evidence || ' again', problem, lesson, 'N' || substr(lesson_id, 2),
                   'N' || substr(lesson_id, 2), 'r1', now()::TIMESTAMP
            FROM detections WHERE hash(trace_id) % 12 = 0""")
        lessons.weave(con, "r1", dt.date(2026, 12, 2))
        second = dict(con.execute("SELECT variant_id, lesson_id FROM lesson_variants").fetchall())
        assert {v: second[v] for v in first} == first and len(second) > len(first)
    finally:
        con.close()


def test_a_failed_weave_leaves_the_run_recorded_as_failed(prefect_server, tmp_path: Path, capsys):
    """The load commits, then the weave fails (here: the lessons table carries a constraint a person
    added that every row breaks): the traces stay stored, the run is in `runs` as failed with its counts,
    and the command says so in one line, exit 1."""
    db = tmp_path / "lw.duckdb"
    con = store.connect(str(db))
    columns = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                          "WHERE table_name = 'lessons' ORDER BY ordinal_position").fetchall()
    con.execute("DROP TABLE lessons")
    con.execute("CREATE TABLE lessons (" + ", ".join(
        f"{name} {kind}" + (" CHECK (lesson_id IS NULL)" if name == "lesson_id" else "") for name, kind in columns) + ")")
    con.close()
    trace = {"trace_id": "t1", "source": "bot", "task": "Answer", "outcome": "success",
             "events": [{"id": "e1", "type": "human_correction", "content": "Quote the policy."}]}
    folder = write_traces(tmp_path / "in", "t.jsonl", [trace]).parent
    assert main(["run", str(folder), "--db", str(db), "--out", str(tmp_path / "out"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "lessonweaver: failed:" in err and "Traceback" not in err.split("lessonweaver: failed:")[1]
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT status, traces_loaded, detections FROM runs").fetchall() == [("failed", 1, 1)]
        assert con.execute("SELECT trace_id FROM traces").fetchall() == [("t1",)]
    finally:
        con.close()
    assert not (tmp_path / "out" / "lessons.md").exists()  # a failed night publishes no report


def test_variants_alike_only_through_a_chain_share_the_lesson_of_the_earliest(tmp_path: Path):
    """Neighbours in a chain are alike and variants two links apart are not, so the earliest variant's
    label has to travel the chain one link per round; a chain of its own in the same block keeps its own
    lesson, and a variant alike to none keeps one of its own."""
    words = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(40)]

    def text(start: int) -> str:  # ten words; the next text shares eight of them (Jaccard 8/12)
        return " ".join(words[start:start + 10])

    chain_a = [text(2 * i) for i in range(6)]  # v0 .. v5, the earliest at one end
    chain_b = [text(30 - 2 * i) + " zz" for i in range(2)]  # alike each other, not chain_a
    alone = ["nothing like the others at all here"]
    evidence = chain_a + chain_b + alone
    db = tmp_path / "lw.duckdb"
    con = store.connect(str(db))
    try:
        con.execute("INSERT INTO traces (trace_id, format, source, task, outcome, run_id) "
                    "SELECT 't' || i, 'lessonweaver', 's', 'one task', 'failure', 'r0' FROM range(?) r(i)", [len(evidence)])
        # first seen in reverse chain order, except v0: the earliest of chain_a is at its far end
        order = [0, 5, 4, 3, 2, 1, 6, 7, 8]
        con.executemany(
            "INSERT INTO detections (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id, "
            "variant_id, run_id, detected_at) VALUES ('human_correction', ?, 'e1', 1, 'high', ?, ?, ?, ?, ?, 'r0', ?)",
            [(f"t{i}", ev, ev, ev, f"v{i}", f"v{i}", dt.datetime(2026, 12, 1) + dt.timedelta(minutes=order[i]))
             for i, ev in enumerate(evidence)])
        lessons.weave(con, "r0", dt.date(2026, 12, 1))
        placed = dict(con.execute("SELECT variant_id, lesson_id FROM lesson_variants").fetchall())
    finally:
        con.close()
    assert {v: placed[v] for v in [f"v{i}" for i in range(6)]} == {f"v{i}": "v0" for i in range(6)}
    assert placed["v6"] == placed["v7"] == "v6"
    assert placed["v8"] == "v8"


def test_a_lesson_takes_each_text_from_the_earliest_detection_that_has_it(tmp_path: Path):
    """The earliest detection gives a lesson its task, problem and evidence; where it lacks one (a trace
    with no task, a detector that gave no evidence), the earliest detection that has it gives that one."""
    con = store.connect(str(tmp_path / "lw.duckdb"))
    try:
        con.execute("INSERT INTO traces (trace_id, format, source, task, outcome, run_id) VALUES "
                    "('t1', 'chat', 's', NULL, 'failure', 'r0'), ('t2', 'chat', 's', 'Book a table', 'failure', 'r0'), "
                    "('t3', 'chat', 's', 'Pay a bill', 'failure', 'r0'), ('t4', 'chat', 's', 'Pay a bill', 'failure', 'r0')")
        rows = [  # (trace, evidence, problem, lesson id, minutes after midnight)
            ("t1", None, None, "L1", 1), ("t2", "said no twice", "It was told no.", "L1", 2),
            ("t3", "wrong amount", "It paid the wrong amount.", "L2", 3), ("t4", "late", "It paid late.", "L2", 4)]
        con.executemany(
            "INSERT INTO detections (detector, trace_id, event_id, seq, severity, evidence, problem, lesson, lesson_id, "
            "variant_id, run_id, detected_at) VALUES ('human_correction', ?, 'e1', 1, 'high', ?, ?, 'Ask first.', ?, ?, 'r0', ?)",
            [(t, ev, pr, lid, lid, dt.datetime(2026, 12, 1) + dt.timedelta(minutes=m)) for t, ev, pr, lid, m in rows])
        con.execute("INSERT INTO lesson_variants VALUES ('L1', 'L1', 1.0, now()), ('L2', 'L2', 1.0, now())")
        lessons.weave(con, "r0", dt.date(2026, 12, 1))
        got = {r[0]: r[1:] for r in con.execute(
            "SELECT lesson_id, task, evidence, problem, trace_count, example_trace_ids FROM lessons").fetchall()}
    finally:
        con.close()
    assert got == {"L1": ("Book a table", "said no twice", "It was told no.", 2, ["t1", "t2"]),
                   "L2": ("Pay a bill", "wrong amount", "It paid the wrong amount.", 2, ["t3", "t4"])}
