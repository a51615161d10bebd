"""The plain functions of lessonweaver/serve.py, which the MCP server only wraps (tests/test_mcp.py drives
the server through the SDK's client): what each filter of `search` and each branch of `for_path` lets
through, the limit, and the audit every answer passes. A real database: the demo data, with a few lessons
accepted, among them one seen in several projects."""

from pathlib import Path

import pytest

from conftest import copy_db, query_db
from lessonweaver.cli import main
from lessonweaver.serve import MAX_LIMIT, Lessons, ServeError


def one(db: Path, where: str) -> str:
    return query_db(db, f"SELECT lesson_id FROM lessons WHERE tenants = 0 AND {where} "
                        "ORDER BY priority DESC, lesson_id LIMIT 1")[0][0]


@pytest.fixture(scope="module")
def accepted(demo_db: Path, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The demo database with four lessons accepted: one seen in several projects (ledger among them), one of
    ledger that names test_money.py, one of support-bot and one of orbital-notes; one of research-agent pending."""
    db = copy_db(demo_db, tmp_path_factory.mktemp("serve") / "lw.duckdb")
    ids = {"across": one(db, "len(projects) > 1 AND list_contains(projects, 'ledger')"),
           "money": one(db, "projects = ['ledger'] AND contains(evidence, 'test_money.py')"),
           "support": one(db, "projects = ['support-bot']"),
           "notes": one(db, "projects = ['orbital-notes']"),
           "pending": one(db, "projects = ['research-agent']")}
    assert main(["review", "--db", str(db), "accept", *(ids[k] for k in ("across", "money", "support", "notes"))]) == 0
    return db, ids


def found(answer: dict) -> list[str]:
    assert answer["count"] == len(answer["lessons"])
    return [x["lesson_id"] for x in answer["lessons"]]


def test_for_path_gives_the_projects_lessons_those_seen_across_projects_and_those_naming_the_file(accepted):
    db, ids = accepted
    lessons = Lessons(str(db))
    assert found(lessons.for_path("/srv/elsewhere/app")) == [ids["across"]]  # a project of its own: the shared rules only
    assert sorted(found(lessons.for_path("/home/dev/orbital-notes/src"))) == sorted([ids["notes"], ids["across"]])
    assert sorted(found(lessons.for_path("/srv/elsewhere/tests/test_money.py"))) == sorted([ids["money"], ids["across"]])
    assert found(lessons.for_path("/srv/elsewhere/tests/test_other.py")) == [ids["across"]]


def test_search_filters_each_hold(accepted):
    db, ids = accepted
    lessons = Lessons(str(db))
    # a project: its own lessons and those it shares with other projects
    assert sorted(found(lessons.search(project="ledger"))) == sorted([ids["money"], ids["across"]])
    (other,) = set(query_db(db, "SELECT projects FROM lessons WHERE lesson_id = ?", [ids["across"]])[0][0]) - {"ledger"}
    assert found(lessons.search(project=other)) == [ids["across"]]
    assert found(lessons.search(project="no-such-project")) == []
    # a file: the lessons naming it, and no other
    assert found(lessons.search(file="test_money.py")) == [ids["money"]]
    assert found(lessons.search(file="no_such_file.py")) == []
    assert ids["pending"] not in found(lessons.search(limit=MAX_LIMIT))  # accepted lessons only
    assert ids["pending"] in found(Lessons(str(db), pending=True).search(limit=MAX_LIMIT))


def test_limit_caps_the_answer_and_is_checked(accepted):
    db, ids = accepted
    lessons = Lessons(str(db))
    everything = found(lessons.search(limit=MAX_LIMIT))
    assert len(everything) == 4 and found(lessons.search(limit=2)) == everything[:2]
    assert len(found(lessons.for_path("/home/dev/orbital-notes", limit=1))) == 1
    for wrong in (0, MAX_LIMIT + 1):
        with pytest.raises(ServeError, match=f"limit must be between 1 and {MAX_LIMIT}, not {wrong}"):
            lessons.search(limit=wrong)
        with pytest.raises(ServeError, match="limit must be between"):
            lessons.for_path("/x", limit=wrong)


def test_show_serves_accepted_lessons_only(accepted):
    db, ids = accepted
    assert Lessons(str(db)).show(ids["notes"][:7])["lesson_id"] == ids["notes"]
    with pytest.raises(ServeError, match="is not served here"):
        Lessons(str(db)).show(ids["pending"])
    assert Lessons(str(db), pending=True).show(ids["pending"])["lesson_id"] == ids["pending"]


def test_an_answer_is_audited_before_it_leaves(accepted, tmp_path: Path):
    db, ids = accepted
    db = copy_db(db, tmp_path / "lw.duckdb")
    quarantined = query_db(db, "SELECT trace_id FROM quarantine WHERE length(trace_id) >= 6 ORDER BY 1 LIMIT 1")[0][0]
    lessons = Lessons(str(db))
    assert ids["across"] in lessons.audited(lessons.for_path("/srv/elsewhere"))
    assert main(["review", "--db", str(db), "edit", ids["across"], "--text", f"Check the claim, as in {quarantined}."]) == 0
    for answer in (lessons.for_path("/srv/elsewhere"), lessons.search(project="ledger")):
        with pytest.raises(ServeError, match="the answer was withheld: the audit found quarantined trace id"):
            lessons.audited(answer)
    assert ids["support"] in lessons.audited(lessons.search(project="support-bot"))  # other answers still go
