"""`lessonweaver review` through the CLI on a real database (the demo data run by the pipeline): filters,
several lessons at once, one lesson in full, and readers and writers while a run holds the database."""

import json
from pathlib import Path

import pytest

from conftest import DEMO_NIGHT, REPO, cli, copy_db, query_db, read_jsonl, write_jsonl
from lessonweaver import store

REFUND = "Answer a refund question"  # five silent failures, one lesson (data/README.md)


def lesson_of(db: Path, detector: str, task: str) -> str:
    return query_db(db, "SELECT lesson_id FROM lessons WHERE detector = ? AND task = ?", [detector, task])[0][0]


def listed(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines() if line.startswith("L")]


@pytest.mark.parametrize("filters, where", [
    (["--detector", "retry"], "list_contains(detectors, 'retry')"),  # every lesson the detector found
    (["--source", "support-bot", "--severity", "critical"], "source = 'support-bot' AND severity = 'critical'"),
    (["--status", "new"], "status = 'new'"),
    (["--status", "resolved"], "status = 'resolved'"),
])
def test_the_listing_filters(demo_db: Path, capsys, filters: list[str], where: str):
    code, out, _ = cli(capsys, "review", "--db", str(demo_db), "--all", *filters)
    expected = [r[0] for r in query_db(demo_db, f"SELECT lesson_id FROM lessons WHERE {where} "
                                                "ORDER BY priority DESC, lesson_id")]
    assert code == 0 and listed(out) == expected
    narrowed = ", ".join(f"{filters[i][2:]} {filters[i + 1]}" for i in range(0, len(filters), 2))
    noun = "lesson" if len(expected) == 1 else "lessons"
    assert out.splitlines()[-1].startswith(f"({len(expected)} {noun} with {narrowed}; ")


def test_a_limited_listing_says_how_many_there_are(demo_db: Path, capsys):
    pending = query_db(demo_db, "SELECT count(*) FROM lessons WHERE review = 'pending'")[0][0]
    code, out, _ = cli(capsys, "review", "--db", str(demo_db), "--limit", "2")
    assert code == 0 and len(listed(out)) == 2
    assert out.splitlines()[-1].startswith(f"(2 of {pending} pending lessons;")
    code, out, _ = cli(capsys, "review", "--db", str(demo_db), "--detector", "unverified_claim")
    assert code == 0 and out.splitlines()[-1].startswith("(1 pending lesson with detector unverified_claim;")


@pytest.mark.parametrize("value", ["-1", "0", "x"])
def test_a_limit_below_one_is_refused_by_the_parser(demo_db: Path, capsys, value: str):
    code, out, err = cli(capsys, "review", "--db", str(demo_db), "--limit", value)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].startswith("lessonweaver review: error: argument --limit: ")
    assert "Traceback" not in err and "Binder" not in err


def test_several_lessons_are_decided_at_once_or_not_at_all(demo_db: Path, tmp_path: Path, capsys):
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    refund, ci = lesson_of(db, "failed_evaluation", REFUND), lesson_of(db, "retry", "Fix a failing CI build")
    code, out, err = cli(capsys, "review", "--db", str(db), "accept", refund[:6], ci, "--note", "both real")
    assert code == 0 and out == f"{refund}: accepted\n{ci}: accepted\n"
    # both keep the generated wording: stderr says so, with the command that changes it
    assert err.splitlines() == [f"lessonweaver: {lid} is accepted with the generated text; to put it in your own "
                                f"words: lessonweaver review edit {lid} --text '...' --db {db}" for lid in (refund, ci)]
    code, out, err = cli(capsys, "review", "--db", str(db), "accept", ci, "--text", "Run the CI job locally first.")
    assert (code, out, err) == (0, f"{ci}: accepted (text edited)\n", "")
    code, out, err = cli(capsys, "review", "--db", str(db), "accept", ci)  # the person's text stays: no hint
    assert (code, err) == (0, "")
    assert query_db(db, "SELECT lesson_id, decision, note FROM reviews ORDER BY lesson_id") == sorted(
        [(refund, "accepted", "both real"), (ci, "accepted", "both real")])

    before = query_db(db, "SELECT * FROM reviews ORDER BY lesson_id")
    code, out, err = cli(capsys, "review", "reject", refund, "Lnope", ci, "--db", str(db))
    assert (code, out) == (2, "")
    assert err == "lessonweaver: error: no lesson 'Lnope' (list them with: lessonweaver review)\n"
    code, _, err = cli(capsys, "review", "accept", refund, ci, "--text", "One text for two?", "--db", str(db))
    assert code == 2 and err == "lessonweaver: error: --text goes with one lesson: give one lesson id\n"
    code, _, err = cli(capsys, "review", "reject", "L", "--db", str(db))
    assert code == 2 and "names more than one lesson" in err
    assert query_db(db, "SELECT * FROM reviews ORDER BY lesson_id") == before
    assert query_db(db, "SELECT count(*) FROM lessons WHERE review = 'rejected'") == [(0,)]


def test_edit_needs_its_text(demo_db: Path, capsys):
    code, out, err = cli(capsys, "review", "--db", str(demo_db), "edit", "L29f5")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == "lessonweaver review edit: error: the following arguments are required: --text"


def test_show_prints_a_lesson_in_full_with_its_nights(demo_db: Path, tmp_path: Path, capsys):
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    refund = lesson_of(db, "failed_evaluation", REFUND)
    # The next night the same silent failure comes again, on another ticket.
    again = read_jsonl(REPO / "data" / "support-bot" / "conversations.jsonl")[0]
    again = json.loads(json.dumps(again).replace("sup-0001", "sup-9001").replace("5120", "6120"))
    (tmp_path / "in").mkdir()
    write_jsonl(tmp_path / "in" / "night2.jsonl", [again])
    code, _, err = cli(capsys, "run", str(tmp_path / "in"), "--db", str(db), "--out", str(tmp_path / "out"),
                       "--no-prefect", "-q", "--night", "2026-11-30")
    assert code == 0, err
    assert cli(capsys, "review", "--db", str(db), "reject", refund[:7], "--note", "policy team owns it")[0] == 0

    code, out, err = cli(capsys, "review", "show", refund[:7], "--db", str(db))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    # the title names the cause, from the evidence; the task is context
    assert lines[0] == f"{refund}  An evaluation failed: Policy check failed for ticket 5120: the reply promised a…"
    fields = {line[:12].strip(): line[12:] for line in lines[1:] if line[:12].strip()}
    assert fields["status"].startswith("recurring · failed_evaluation · severity critical · agent, certain · priority ")
    assert fields["review"].startswith("rejected (") and fields["note"] == "policy team owns it"
    assert fields["seen"] == "6 times in 6 sessions · source support-bot"
    assert fields["nights"] == f"first {DEMO_NIGHT}, last 2026-11-30 (2 nights)"
    assert fields["rule"].startswith("Check the answer against this evaluation before finishing:")
    assert fields["problem"] == "An evaluation failed while the run reported success (a silent failure)."
    assert fields["worked"] == "no fix seen yet"
    assert fields["evidence"].startswith("Policy check failed for ticket 5120")
    assert fields["context"] == f"task {REFUND}"
    assert fields["examples"] == "sup-0001, sup-0002, sup-0003, sup-0004, sup-0005"
    assert lines[-2:] == [f"sightings   {DEMO_NIGHT}  5 occurrences in 5 traces",
                          "            2026-11-30  1 occurrence in 1 trace"]


# --- while a run holds the database ---------------------------------------------------------------------

def test_readers_see_the_last_published_database_while_a_run_writes(demo_db: Path, tmp_path: Path, capsys):
    """A run works on a copy (store.writing): review, review show and export read the database as it was
    published, whole; a decision is refused in one line, since the run's copy would overwrite it."""
    db = copy_db(demo_db, tmp_path / "lw.duckdb")
    refund = lesson_of(db, "failed_evaluation", REFUND)
    assert cli(capsys, "review", "--db", str(db), "accept", refund)[0] == 0
    reads = (["review", "--all"], ["review", "show", refund], ["export"], ["export", "--format", "jsonl"])
    before = [cli(capsys, *argv, "--db", str(db)) for argv in reads]
    assert refund in before[2][1] and all(code == 0 for code, _, _ in before)

    with store.writing(str(db)) as work:  # a run in progress: it has emptied its copy of lessons so far
        con = store.connect(work)
        con.execute("DELETE FROM lessons; DELETE FROM reviews")
        con.close()
        during = [cli(capsys, *argv, "--db", str(db)) for argv in reads]
        code, out, err = cli(capsys, "review", "--db", str(db), "reject", refund)
    assert during == before
    assert (code, out) == (2, "")
    assert err == (f"lessonweaver: error: {db} is in use by another lessonweaver run; "
                   "try again when it has finished\n")
    assert query_db(db, "SELECT decision FROM reviews WHERE lesson_id = ?", [refund]) == []  # the run's copy won
