"""Rule health: `lessonweaver rules` and `export --check` say, for each exported rule, whether it is still
seen, quiet, regressed or duplicated, over real runs on successive nights."""

from pathlib import Path

from conftest import query_db, write_traces
from lessonweaver.cli import main

CHECKS = {"A": "Policy check failed: refund issued without a receipt",
          "B": "Fact check failed: the quoted growth figure is wrong",
          "C": "Tone check failed: the reply blamed the customer",
          "D": "Format check failed: the reply has no greeting"}


def night(tmp_path: Path, db: Path, date: str, causes: str) -> None:
    """One run on `date` whose traces fail the checks of `causes`, two traces each (a lesson, not a one-off)."""
    traces = [{"trace_id": f"{date}-{c}-{n}", "source": "support-bot", "task": "Answer the ticket", "outcome": "failure",
               "events": [{"id": "e1", "type": "user_message", "content": "Where is my refund?"},
                          {"id": "e2", "type": "evaluation_result", "content": CHECKS[c], "status": "failure"}]}
              for c in causes for n in (1, 2)]
    path = write_traces(tmp_path / date, "traces.jsonl", traces)
    assert main(["run", "--no-prefect", "-q", "--db", str(db), "--out", str(tmp_path / "reports"),
                 "--night", date, "--resolve-after", "2", str(path)]) == 0


def lesson(db: Path, cause: str) -> str:
    return query_db(db, "SELECT lesson_id FROM lessons WHERE contains(evidence, ?)", [CHECKS[cause].split(":")[0]])[0][0]


def test_each_rule_is_still_seen_quiet_regressed_or_duplicated(tmp_path: Path, capsys):
    db = tmp_path / "lw.duckdb"
    night(tmp_path, db, "2026-11-01", "ABCD")
    ids = {c: lesson(db, c) for c in "ABCD"}
    assert main(["review", "--db", str(db), "accept", *ids.values()]) == 0
    text = query_db(db, "SELECT lesson FROM lessons WHERE lesson_id = ?", [ids["A"]])[0][0]
    assert main(["review", "--db", str(db), "edit", ids["D"], "--text", text]) == 0
    capsys.readouterr()
    assert main(["rules", "--db", str(db)]) == 1  # D and A say the same thing
    assert "4 exported rules: 4 quiet, 0 still seen, 0 regressed, 2 duplicated" in capsys.readouterr().out

    night(tmp_path, db, "2026-11-02", "A")
    capsys.readouterr()
    assert main(["rules", "--db", str(db), "--grace", "2"]) == 1
    out = capsys.readouterr().out
    assert f"{ids['A']}  NEEDS A PERSON  still seen: 1 night since it was accepted on 2026-11-01; duplicated by {ids['D']}" in out

    for date in ("2026-11-03", "2026-11-04"):
        night(tmp_path, db, date, "A")
    night(tmp_path, db, "2026-11-05", "C")
    assert main(["review", "--db", str(db), "edit", ids["D"], "--text", "Greet the customer by name in the first line."]) == 0
    capsys.readouterr()
    assert main(["rules", "--db", str(db)]) == 1
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert "NEEDS A PERSON  still seen: 3 nights since it was accepted on 2026-11-01" in lines[ids["A"]]
    assert "NEEDS A PERSON  regressed: seen again after it was exported, on 1 night" in lines[ids["C"]]
    assert "ok              quiet for 4 nights (working, or stale)" in lines[ids["B"]]
    assert "ok              quiet for 4 nights" in lines[ids["D"]] and "duplicated" not in lines[ids["D"]]
    assert "4 exported rules: 2 quiet, 1 still seen, 1 regressed, 0 duplicated; 2 need a person" in lines["4"]

    # only B and D: nothing needs a person, and a rules file up to date checks clean
    assert main(["review", "--db", str(db), "reject", ids["A"], ids["C"]]) == 0
    agents = tmp_path / "AGENTS.md"
    assert main(["export", "--db", str(db), "--into", str(agents)]) == 0
    capsys.readouterr()
    assert main(["rules", "--db", str(db)]) == 0
    assert main(["export", "--db", str(db), "--into", str(agents), "--check"]) == 0
    out, err = capsys.readouterr()
    assert "is up to date" in err and "2 exported rules: 2 quiet" in out and "none needs a person" in out
    assert main(["review", "--db", str(db), "edit", ids["B"], "--text", "Check a figure against its source before quoting it."]) == 0
    assert main(["export", "--db", str(db), "--into", str(agents), "--check"]) == 1
    assert "would change (nothing written)" in capsys.readouterr().err


# Word sets at the duplicate threshold (0.8 Jaccard, sql/rules/health.sql): A and B share 12 of their 15
# words (0.8: duplicates); C and D share 11 of their 14 (0.786: not).
NEAR = {"A": "Quote refund windows only from the current policy page for that store",
        "B": "Quote refund windows only from the current policy page for that store and cite it",
        "C": "Greet each customer by name in your very first reply line",
        "D": "Greet each customer by name in your very first reply line please always do"}


def test_two_rules_are_one_from_a_word_overlap_of_four_fifths(tmp_path: Path, capsys):
    db = tmp_path / "lw.duckdb"
    night(tmp_path, db, "2026-11-01", "ABCD")
    ids = {c: lesson(db, c) for c in "ABCD"}
    assert main(["review", "--db", str(db), "accept", *ids.values()]) == 0
    for cause, text in NEAR.items():
        assert main(["review", "--db", str(db), "edit", ids[cause], "--text", text]) == 0
    capsys.readouterr()
    assert main(["rules", "--db", str(db)]) == 1
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert f"duplicated by {ids['B']}" in lines[ids["A"]] and f"duplicated by {ids['A']}" in lines[ids["B"]]
    assert "duplicated" not in lines[ids["C"]] and "duplicated" not in lines[ids["D"]]
    assert "4 exported rules: 4 quiet, 0 still seen, 0 regressed, 2 duplicated; 2 need a person" in lines["4"]
