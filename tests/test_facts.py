"""Facts (sql/facts/facts.sql) on traces of our own writing: what the detectors and the weave read."""

from conftest import rows, stage, write_traces
from lessonweaver.queries import execute


def test_a_failed_call_without_a_tool_name_is_a_failure_with_its_cost(tmp_path):
    """A producer that writes no tool name on its calls (a workflow's steps): the failed call is a failure
    like any other, with what worked after it and the calls that cost (none here: a retry event, then the
    call that worked). Its missing tool key once made `failed` unknown inside facts, and the cost with it."""
    trace = {"trace_id": "facts-nameless", "source": "deploy-bot", "task": "migrate the database", "outcome": "success",
             "events": [
                 {"id": "a1", "type": "tool_call", "content": "Connected to the database.", "status": "ok"},
                 {"id": "a2", "type": "tool_call", "content": "Migration failed: lock timeout.", "status": "error"},
                 {"id": "a3", "type": "retry", "content": "Retried with a longer lock timeout."},
                 {"id": "a4", "type": "tool_call", "content": "Migration applied successfully.", "status": "ok"}]}
    con = stage([write_traces(tmp_path, "deploy.jsonl", [trace])])
    execute(con, "facts/facts.sql")
    facts = {f["event_id"]: f for f in rows(con, "SELECT * FROM facts WHERE trace_id = 'facts-nameless'")}
    failed = facts["a2"]
    assert (failed["failed"], failed["environment"]) == (True, False)
    assert (failed["recovery_kind"], failed["recovery_seq"], failed["wasted_steps"]) == ("changed", 4, 0)
    assert [facts[e]["failed"] for e in ("a1", "a4")] == [False, False]
