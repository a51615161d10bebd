"""Lesson titles name the cause, short: never the task prompt. A long cause is cut, and lessons whose titles
come out the same (alike evidence, different causes) each name what differs."""

from lessonweaver.cli import main
from lessonweaver.lessons import TITLE_CHARS
from tests.conftest import query_db, write_traces

PROMPT = "Please read the plan and the roadmap, then " + "carefully " * 40 + "draft the next milestone."
SAME_START = "Before you deploy, read the runbook section about the whole team"


def corrected(tid: str, text: str, source: str = "support-bot") -> dict:
    return {"trace_id": tid, "source": source, "task": PROMPT, "outcome": "success",
            "events": [{"id": "e1", "type": "user_message", "content": "go"},
                       {"id": "e2", "type": "human_correction", "content": text}]}


def run(tmp_path, traces: list[dict]) -> dict[str, str]:
    write_traces(tmp_path / "in", "t.jsonl", traces)
    assert main(["run", str(tmp_path / "in"), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"),
                 "--no-prefect", "-q"]) == 0
    return dict(query_db(tmp_path / "lw.duckdb", "SELECT evidence, title FROM lessons"))


def test_titles_name_the_cause_not_the_task(tmp_path):
    titles = run(tmp_path, [
        corrected("a", "Never push to the main branch without a review"),
        corrected("b", "Stop: the staging database is shared with billing"),
        corrected("c", "Keep the changelog in sync with every release"),
        corrected("d", "Keep the changelog in sync with every release", source="other-bot"),
    ])
    # the same correction from two sources is one lesson
    assert len(titles) == 3 and len(set(titles.values())) == 3
    assert all(len(t) <= TITLE_CHARS + 2 and "Please read the plan" not in t for t in titles.values())
    assert titles["Never push to the main branch without a review"] == (
        'The user had to say: "Never push to the main branch without a review"')
    assert query_db(tmp_path / "lw.duckdb", "SELECT sources, trace_count FROM lessons WHERE evidence LIKE 'Keep%'") == [
        (2, 2)]


def test_a_long_cause_is_cut(tmp_path):
    titles = run(tmp_path, [corrected("a", "Never push to the main branch without a review " + "and a green build " * 5)])
    (title,) = titles.values()
    assert title.endswith('…"') and "(" not in title and len(title) <= TITLE_CHARS


def test_alike_titles_get_what_is_their_own_and_never_empty_brackets(tmp_path):
    """Two causes whose titles come out the same each name their own words; a word counts once whatever
    its case or trailing colon, and a lesson with no word of its own gets its source (or rank)."""
    titles = run(tmp_path, [
        corrected("a", f"{SAME_START} database migration steps and caches, queues: Caches first"),
        corrected("b", f"{SAME_START} on-call rotation, pager duty and channels before rollout"),
        corrected("c", f"{SAME_START}", source="ops-bot"),
    ])
    assert len(titles) == 3 and len(set(titles.values())) == 3
    assert "()" not in "".join(titles.values())
    assert all(len(t) <= TITLE_CHARS + 2 for t in titles.values())
    caches = titles[f"{SAME_START} database migration steps and caches, queues: Caches first"]
    assert "(" in caches and "database" in caches and "rotation" not in caches
    assert "rotation" in titles[f"{SAME_START} on-call rotation, pager duty and channels before rollout"]
    assert titles[SAME_START].endswith("(ops-bot)")
