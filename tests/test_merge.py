"""Near-duplicate merge: the threshold separates fixture pairs of true and false duplicates, and a run
merges reworded evidence into one lesson while keeping different problems apart."""

import json
from pathlib import Path

import duckdb
import pytest

from flows.nightly import nightly
from lessonweaver import lessons, store
from lessonweaver.config import Settings
from tests.conftest import write_traces

PAIRS = [json.loads(line) for line in
         (Path(__file__).parent / "fixtures" / "merge" / "pairs.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def con():
    con = duckdb.connect()
    con.execute(Path("sql/macros.sql").read_text())
    yield con
    con.close()


@pytest.mark.parametrize("pair", PAIRS, ids=[p["why"] for p in PAIRS])
def test_threshold_merges_true_pairs_only(con, pair):
    con.execute("CREATE OR REPLACE TEMP TABLE texts AS SELECT * FROM (VALUES ('a', 'x', lw_normalise(?)), "
                "('b', 'x', lw_normalise(?))) t(id, block, text)", [pair["a"], pair["b"]])
    merged = lessons.similar_pairs(con, "texts", Settings().merge_threshold)
    assert bool(merged) == pair["same"], pair["why"]


def test_threshold_has_a_margin_on_both_sides(con):
    """The default sits between the least similar true pair and the most similar false pair."""
    values = {True: [], False: []}
    for p in PAIRS:
        con.execute("CREATE OR REPLACE TEMP TABLE texts AS SELECT * FROM (VALUES ('a', 'x', lw_normalise(?)), "
                    "('b', 'x', lw_normalise(?))) t(id, block, text)", [p["a"], p["b"]])
        found = lessons.similar_pairs(con, "texts", 0.0)
        values[p["same"]].append(found[0][2] if found else 0.0)
    threshold = Settings().merge_threshold
    assert max(values[False]) + 0.1 <= threshold <= min(values[True]) - 0.1


def test_pairs_are_only_made_within_a_block(con):
    con.execute("CREATE OR REPLACE TEMP TABLE texts AS SELECT * FROM (VALUES "
                "('a', 'one', 'tool timed out'), ('b', 'two', 'tool timed out'), ('c', 'one', 'tool timed out')) t(id, block, text)")
    assert [(a, b) for a, b, _ in lessons.similar_pairs(con, "texts", 0.6)] == [("a", "c")]


def test_candidate_search_scales_past_pairwise(con):
    """A thousand distinct texts in one block: only the planted near-duplicates pair up."""
    con.execute("""
        CREATE OR REPLACE TEMP TABLE texts AS
        SELECT 'v' || i AS id, 'block' AS block,
               'word' || i || ' alpha' || (i * 7) || ' beta' || (i * 13) || ' gamma' || (i * 17) AS text
        FROM range(1000) r(i)
        UNION ALL SELECT 'dup', 'block', 'word5 alpha35 beta65 gamma85 delta'
    """)
    assert lessons.similar_pairs(con, "texts", 0.6) == [("dup", "v5", 0.8)]


def correction(tid: str, text: str, task: str = "Answer a refund question") -> dict:
    return {"trace_id": tid, "source": "support-bot", "task": task, "outcome": "success",
            "events": [{"id": "e1", "type": "user_message", "content": "help"},
                       {"id": "e2", "type": "human_correction", "content": text}]}


def test_run_merges_reworded_evidence_into_one_lesson(prefect_server, tmp_path):
    write_traces(tmp_path / "in", "a.jsonl", [
        correction("t1", "The reply promised a 30-day refund window but the policy allows 14 days"),
        correction("t2", "The reply promised a 30-day refund window but the current policy allows 14 days"),
        correction("t3", "The reply skipped identity verification before changing the address"),
        correction("t4", "The reply promised a 30-day refund window but the policy allows 14 days", task="Change an address"),
    ])
    db = tmp_path / "lw.duckdb"
    nightly(paths=[str(tmp_path / "in")], db=str(db), out=str(tmp_path / "out"))
    con = store.connect(str(db), read_only=True)
    got = con.execute("SELECT task, variants, trace_count, example_trace_ids FROM lessons ORDER BY task, trace_count").fetchall()
    # the task is context, not identity: the same correction in another task (t4) is the same lesson
    assert got == [("Answer a refund question", 1, 1, ["t3"]), ("Answer a refund question", 2, 3, ["t1", "t2", "t4"])]
    # Every detection joins its (merged) lesson.
    assert con.execute("SELECT count(*) FROM detections d ANTI JOIN lessons USING (lesson_id)").fetchone()[0] == 0
    merged_id = con.execute("SELECT lesson_id FROM lessons WHERE variants = 2").fetchone()[0]
    con.close()

    # A later night brings a third wording: it joins the same lesson, whose id does not change.
    write_traces(tmp_path / "in2", "b.jsonl", [
        correction("t5", "The reply promised a 30-day refund window, though policy allows only 14 days")])
    nightly(paths=[str(tmp_path / "in2")], db=str(db), out=str(tmp_path / "out"), night="2099-01-02")
    con = store.connect(str(db), read_only=True)
    assert con.execute("SELECT lesson_id, variants, trace_count FROM lessons WHERE variants > 1").fetchall() == [
        (merged_id, 3, 4)]
    con.close()


def test_a_correction_is_the_same_cause_whatever_ids_it_quotes(con):
    """Two people paste the same CI failure with different run folders and commit hashes: the words that
    make a correction's signature leave numbers, hashes and ids out, so both are one cause."""
    one, two, other = (con.execute("SELECT lw_key_words(?, 12)", [t]).fetchone()[0] for t in (
        "Run mkdocs build --strict /home/runner/work/_temp/ad16ad40-3d1e-9b05 failed at c6adfc93a2fb",
        "Run mkdocs build --strict /home/runner/work/_temp/77e0f1aa-02bc-4d11 failed at 0b1e4c2d9f10",
        "Run mkdocs serve, the preview is blank"))
    assert one == two == "build failed home mkdocs run runner strict temp work"
    assert other != one
