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
