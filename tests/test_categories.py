"""Categories and confidence through a real run: one provider outage over many tasks is one lesson for
operators, weighed half an agent's mistake of the same reach (a cause met in several sessions still ranks
above one met once); an inferred correction ranks below a recorded one."""

from pathlib import Path

import duckdb

from conftest import write_traces
from flows.nightly import nightly


def trace(tid: str, task: str, source: str, events: list[dict]) -> dict:
    return {"trace_id": tid, "source": source, "task": task, "outcome": "failed",
            "events": [{"id": f"e{i}", **e} for i, e in enumerate(events, 1)]}


def test_an_outage_is_one_operator_lesson_that_ranks_by_its_reach(prefect_server, tmp_path: Path):
    expired = {"type": "error", "content": "AuthenticationError: 401 Unauthorized: invalid api key"}
    traces = [trace(f"t{i}", task, source, [{"type": "model_call", "content": "plan", "metadata": {"provider": "openai"}}, expired])
              for i, (task, source) in enumerate([("Answer a refund question", "support-bot"),
                                                  ("Review a pull request", "coding-agent"),
                                                  ("Run the nightly export", "workflow-agent")])]
    traces.append(trace("c1", "Answer a refund question", "support-bot",
                        [{"type": "human_correction", "content": "Quote the 14-day refund window."}]))
    folder = write_traces(tmp_path / "in", "t.jsonl", traces).parent
    db = tmp_path / "lw.duckdb"
    nightly(paths=[str(folder)], db=str(db), out=str(tmp_path / "out"))
    con = duckdb.connect(str(db), read_only=True)
    try:
        lessons = con.execute("SELECT detector, category, confidence, trace_count, title, lesson, priority "
                              "FROM lessons ORDER BY priority DESC").fetchall()
    finally:
        con.close()
    by_detector = {row[0]: row for row in lessons}
    outage = by_detector["environment_error"]
    assert outage[1:4] == ("environment", "certain", 3)  # three tasks, three sources: one lesson
    assert outage[4] == "The environment failed the agent: auth at openai"
    assert outage[5].startswith("Operators: renew or rotate the key for openai")
    assert "unrecovered_error" not in by_detector  # the agent is not told to retry an expired key
    # what recurs ranks first: the outage met in three sessions, above the correction recorded in one
    assert [row[0] for row in lessons][:2] == ["environment_error", "human_correction"]
