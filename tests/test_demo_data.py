"""The demo collections in data/ show every detector firing, quarantines of every kind, and rejects."""

from conftest import REPO, rows, stage
from lessonweaver.detectors import load_detectors


def test_demo_data_shows_everything():
    con = stage([REPO / "data"])
    fired = {r["detector"] for r in rows(con, "SELECT DISTINCT detector FROM detections")}
    assert fired == {d.id for d in load_detectors()}
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
