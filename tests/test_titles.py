"""Lesson titles are short and tell lessons apart: a long task prompt is cut, and lessons that would share
a title (same detector and task, different evidence) each name what differs."""

from lessonweaver.cli import main
from lessonweaver.lessons import TITLE_CHARS
from tests.conftest import query_db, write_traces

PROMPT = "Please read the plan and the roadmap, then " + "carefully " * 40 + "draft the next milestone."


def corrected(tid: str, text: str, source: str = "support-bot") -> dict:
    return {"trace_id": tid, "source": source, "task": PROMPT, "outcome": "success",
            "events": [{"id": "e1", "type": "user_message", "content": "go"},
                       {"id": "e2", "type": "human_correction", "content": text}]}


def test_titles_are_short_and_name_what_differs(tmp_path):
    write_traces(tmp_path / "in", "t.jsonl", [
        corrected("a", "Never push to the main branch without a review"),
        corrected("b", "Stop: the staging database is shared with billing"),
        corrected("c", "Keep the changelog in sync with every release"),
        corrected("d", "Keep the changelog in sync with every release", source="other-bot"),
    ])
    assert main(["run", str(tmp_path / "in"), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"),
                 "--no-prefect", "-q"]) == 0
    titles = dict(query_db(tmp_path / "lw.duckdb", "SELECT evidence || '|' || source, title FROM lessons"))
    assert len(titles) == 4 and len(set(titles.values())) == 4
    assert all(len(t) <= TITLE_CHARS + 2 for t in titles.values())
    assert all(t.startswith("A human corrected the agent: Please read the") for t in titles.values())
    push = titles["Never push to the main branch without a review|support-bot"]
    staging = titles["Stop: the staging database is shared with billing|support-bot"]
    assert "push" in push and "main" in push and "staging" in staging and "billing" not in push
    # the same evidence from two sources: the source tells them apart
    assert titles["Keep the changelog in sync with every release|other-bot"].endswith(", other-bot)")


def test_a_title_alone_is_not_given_words(tmp_path):
    write_traces(tmp_path / "in", "t.jsonl", [corrected("a", "Never push to the main branch without a review")])
    assert main(["run", str(tmp_path / "in"), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"),
                 "--no-prefect", "-q"]) == 0
    (title,), = query_db(tmp_path / "lw.duckdb", "SELECT title FROM lessons")
    assert title.endswith("…") and "(" not in title and len(title) == TITLE_CHARS


def test_every_alike_title_gets_what_is_its_own_and_never_empty_brackets(tmp_path):
    """A word counts once per lesson whatever its case or trailing colon, and a lesson with no word of its
    own is named by its source (or rank) rather than by empty brackets."""
    write_traces(tmp_path / "in", "t.jsonl", [
        corrected("a", "Deploy: then deploy again before lunch"),
        corrected("b", "rollout again before lunch was wrong entirely today"),
        corrected("c", "before lunch"),
    ])
    assert main(["run", str(tmp_path / "in"), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"),
                 "--no-prefect", "-q"]) == 0
    titles = dict(query_db(tmp_path / "lw.duckdb", "SELECT evidence, title FROM lessons"))
    assert len(titles) == 3 and len(set(titles.values())) == 3
    assert "()" not in "".join(titles.values())
    assert titles["Deploy: then deploy again before lunch"].endswith("(Deploy then again)")
    assert titles["before lunch"].endswith("(support-bot)")
