"""The demo collections in data/ show each shipped detector firing, quarantines of every kind, and rejects."""

from conftest import KNOWN_DETECTORS, REPO, rows, stage


def check_demo_data(con) -> None:
    """What the demo data must show, staged on `con`: the detectors named in KNOWN_DETECTORS firing (a
    detector added later shows itself in its own cases, not here), every quarantine reason, rejects, every
    format but codex, unknown event types kept, and nothing of a quarantined trace left."""
    fired = {r["detector"] for r in rows(con, "SELECT DISTINCT detector FROM known_detections")}
    assert fired == set(KNOWN_DETECTORS)
    reasons = {r["reason"] for r in rows(con, "SELECT DISTINCT reason FROM quarantine")}
    assert reasons == {"tag:contains_pii", "tag:contains_secret", "tag:sensitivity", "tag:data_classification"}
    assert len(rows(con, "SELECT * FROM rejects")) == 4
    formats = {r["format"] for r in rows(con, "SELECT DISTINCT format FROM traces")}
    assert formats == {"lessonweaver", "traceevent", "gdev", "otlp", "stream", "chat", "claude_code"}
    assert rows(con, "SELECT count(*) AS n FROM events WHERE type = 'unknown'") == [{"n": 8}]
    # Nothing of a quarantined trace is left in staging for later stages to see.
    leftovers = rows(con, """SELECT count(*) AS n FROM events WHERE content LIKE '%QUARANTINE-MARKER-%'
                             OR CAST(metadata AS VARCHAR) LIKE '%QUARANTINE-MARKER-%'""")
    assert leftovers == [{"n": 0}]


def test_demo_data_shows_everything():
    check_demo_data(stage([REPO / "data"]))


def test_data_readme_gives_the_counts_of_a_run(demo_db):
    """data/README.md's expected result and its table of detections are what a run on data/ makes."""
    import re

    from conftest import query_db

    text = (REPO / "data" / "README.md").read_text(encoding="utf-8")
    expected = re.search(r"Expected result of a run on this folder: (\d+) files, (\d+) records = (\d+) loaded \+ "
                         r"(\d+) quarantined \+ (\d+) rejected,\s+(\d+) traces, (\d+) events \((\d+) of unknown "
                         r"type\), (\d+) detections and (\d+) lessons", text)
    assert expected, "data/README.md states the expected result of a run"
    assert tuple(map(int, expected.groups())) == query_db(demo_db, """
        SELECT files_seen, records, records_loaded, records_quarantined, records_rejected, traces_loaded,
               events_loaded, unknown_event_types, detections, lessons_total FROM runs""")[0]
    # the run's count of findings below the floor is the findings no lesson holds, and the README says it
    below = re.search(r"below the noise floor \((\d+) of them here\)", text)
    assert below and query_db(demo_db, """
        SELECT findings_below_floor, (SELECT count(*) FROM detections
                                      WHERE lesson_id NOT IN (SELECT lesson_id FROM lessons)) FROM runs""") \
        == [(int(below.group(1)), int(below.group(1)))]
    table = text.split("## Detections to expect")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (\w+) \| (\d+)[^|]*\| (\d+) \| (\d+) \| [^|]*?(\d+|none)(?: each)?(?: \([^)]*\))? \|$",
                      table, re.M)
    assert len(rows) == 8
    found = query_db(demo_db, """
        WITH mine AS (SELECT d.* FROM detections d JOIN traces t USING (trace_id) WHERE t.format = 'lessonweaver')
        SELECT detector, count(*), count(DISTINCT lesson_id) FILTER (WHERE lesson_id IN (SELECT lesson_id FROM lessons)),
               count(*) FILTER (WHERE lesson_id NOT IN (SELECT lesson_id FROM lessons)),
               (SELECT max(occurrences) FROM lessons l WHERE l.lesson_id IN (SELECT lesson_id FROM mine m
                                                                           WHERE m.detector = mine.detector))
        FROM mine GROUP BY detector""")
    assert sorted((d, int(n), int(k), int(f), None if b == "none" else int(b)) for d, n, k, f, b in rows) == sorted(found)


def test_detections_by_source_counts_lessons_not_one_offs(demo_db):
    """The view's `lessons` are lessons: a one-off below the noise floor is in none."""
    from conftest import query_db

    assert query_db(demo_db, """
        SELECT v.source, v.detector, v.lessons FROM detections_by_source v ORDER BY ALL""") == query_db(demo_db, """
        SELECT t.source, d.detector, count(DISTINCT l.lesson_id)
        FROM detections d JOIN traces t USING (trace_id) LEFT JOIN lessons l USING (lesson_id)
        GROUP BY ALL ORDER BY ALL""")
    assert query_db(demo_db, """SELECT lessons FROM detections_by_source
                                WHERE source = 'support-bot' AND detector = 'failed_evaluation'""") == [(1,)]
