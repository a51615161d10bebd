"""The tau2 adapter (sql/adapters/tau2.sql) on results written by tau2-bench's own runner
(tests/fixtures/formats/tau2/, see its README: the monolithic kestrel_mobile_results.json and the same run in
the "dir" layout, kestrel_mobile_dir/results.json + simulations/<id>.json), on what it must refuse, and on the
real grok-3 telecom runs in ../shared/benchmarks/tau2-telecom/ (skipped when absent).

The four simulations: user_stop with reward 1 (roaming enabled after an explicit yes), max_steps (two
parallel calls, then going round in circles), too_many_errors (three failed tool calls), and user_stop with
reward 0 where the customer calls tools on their own phone and the agent adds a data pack nobody asked for.
"""

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, SHARED, events_of, rows, stage
from lessonweaver.queries import execute

FIXTURES = REPO / "tests" / "fixtures" / "formats" / "tau2"
MONOLITHIC = FIXTURES / "kestrel_mobile_results.json"
DIR = FIXTURES / "kestrel_mobile_dir"
ROAMING = "8f73e976-f68b-4d7d-8d6c-a2d6e1abbf4f"      # user_stop, reward 1
ODD_SIZE = "dd3381fe-3952-4162-b0fb-68ef92df2daf"     # max_steps
SUSPENDED = "5f29c55b-a5d3-46da-a0ba-40a1ad321ae9"    # too_many_errors
AIRPLANE = "d8ea32e8-f0e7-4b40-880d-33cf25deb485"     # the customer's own phone; reward 0
HANDOVERS = FIXTURES / "kestrel_mobile_handover.json"
PREMATURE = "a0093e17-ec53-4b6c-90fa-271686ddccd4"    # handed over after a fix that did not work; reward 0
ASKED_FOR = "dc2dacbb-c7be-4043-be57-0e42a7e8a463"    # handed over at the customer's request, after a refusal; reward 1
TELECOM = SHARED / "benchmarks" / "tau2-telecom"
TAU_SAMPLE = SHARED / "samples" / "tau-bench"


@pytest.fixture(scope="module")
def con():
    return stage([MONOLITHIC])


@pytest.fixture(scope="module")
def dir_con():
    return stage([DIR])


def results() -> dict:
    return json.loads(MONOLITHIC.read_text(encoding="utf-8"))


def shape(con, trace_id: str) -> list[tuple]:
    return [(e["type"], e["tool_name"], e["status"], e["actor"]) for e in events_of(con, trace_id)]


def test_a_simulation_is_a_trace_and_the_results_file_is_loaded(con):
    assert rows(con, "SELECT * FROM rejects") == []
    assert [(a["format"], a["records"], a["loaded"], a["unaccounted"]) for a in rows(con, "SELECT * FROM file_accounts")] \
        == [("tau2", 1, 1, 0)]
    traces = {t["trace_id"]: t for t in rows(con, "SELECT * FROM traces")}
    assert {tid: (t["format"], t["source"], t["outcome"]) for tid, t in traces.items()} == {
        ROAMING: ("tau2", "tau2/kestrel_mobile", "user_stop"),
        ODD_SIZE: ("tau2", "tau2/kestrel_mobile", "max_steps"),
        SUSPENDED: ("tau2", "tau2/kestrel_mobile", "too_many_errors"),
        AIRPLANE: ("tau2", "tau2/kestrel_mobile", "user_stop"),
    }
    t = traces[ROAMING]
    # the task is what the customer says first (the greeting is tau2's own), never the task's scenario
    assert t["task"] == "Hi, I'm flying to São Paulo tomorrow. Can you turn on roaming? My number is 555-0101."
    sim = next(s for s in results()["simulations"] if s["id"] == ROAMING)
    assert (t["started_at"].isoformat(), t["ended_at"].isoformat()) == (sim["start_time"], sim["end_time"])
    assert json.loads(t["metadata"]) == {
        "task_id": "roaming_before_trip", "trial": 0, "seed": sim["seed"], "domain": "kestrel_mobile",
        "agent_model": "openai/kestrel-agent-1", "user_model": "openai/kestrel-customer-1",
        "agent": "llm_agent", "user": "user_simulator", "mode": "half_duplex", "duration": sim["duration"],
        "agent_cost": sim["agent_cost"], "user_cost": sim["user_cost"], "max_steps": 16, "max_errors": 3,
        "git_commit": "a2c024725189473d2d7cea3a5cfdbcc67478e41f"}


def test_the_policy_is_context_not_an_event(con):
    policy = results()["info"]["environment_info"]["policy"]
    for t in rows(con, "SELECT extra FROM traces"):
        extra = json.loads(t["extra"])
        assert extra["policy"] == policy
        assert extra["run"]["agent_info"]["llm"] == "openai/kestrel-agent-1"
        assert "policy" not in extra["run"]["environment_info"]  # kept once, as the policy
    assert con.execute("SELECT count(*) FROM events WHERE content LIKE '%Kestrel Mobile support policy%'").fetchone()[0] == 0
    # lw_policy finds it: the policy asks for a yes before a write, and the agent adds a pack nobody asked for
    assert [(d["event_id"], d["evidence"]) for d in rows(con, "SELECT * FROM detections WHERE detector = 'unconfirmed_action'")] \
        == [("m12.1", 'add_data_pack {"line_id":"L-401","gb":1}')]


def test_the_answer_key_is_never_read(con):
    """`tasks` (the scenario, expected actions, assertions) and the checks' copies of them stay out."""
    key = results()["tasks"]
    secrets = [t["user_scenario"]["instructions"]["task_instructions"] for t in key] \
        + [t["description"]["purpose"] for t in key] + ["action_id", "evaluation_criteria", "Airplane mode should be off at the end."]
    texts = [json.dumps(r, default=str) for r in rows(con, "SELECT * FROM traces")] \
        + [json.dumps(r, default=str) for r in rows(con, "SELECT * FROM events")]
    for secret in secrets:
        assert not any(secret in t for t in texts), secret


def test_the_customer_acts_on_their_own_phone(con):
    assert shape(con, AIRPLANE) == [
        ("assistant_message", None, None, None),  # tau2's greeting
        ("user_message", None, None, "counterpart"),
        ("assistant_message", None, None, None),  # text and a call in one message: the text first
        ("tool_call", "find_customer_by_phone", None, None), ("tool_result", "find_customer_by_phone", "ok", None),
        ("assistant_message", None, None, None),
        ("tool_call", "check_device_status", None, "counterpart"), ("tool_result", "check_device_status", "ok", "counterpart"),
        ("user_message", None, None, "counterpart"),
        ("assistant_message", None, None, None),
        ("tool_call", "toggle_airplane_mode", None, "counterpart"), ("tool_result", "toggle_airplane_mode", "ok", "counterpart"),
        ("user_message", None, None, "counterpart"),
        ("tool_call", "add_data_pack", None, None), ("tool_result", "add_data_pack", "ok", None),
        ("final_answer", None, None, None),
        ("user_message", None, None, "counterpart"),
        ("evaluation_result", None, "failed", "harness"),
    ]
    events = {e["event_id"]: e for e in events_of(con, AIRPLANE)}
    assert json.loads(events["m5.1"]["metadata"]) == {"arguments": {}, "tool_call_id": "call_nsamu010", "requestor": "user"}
    assert json.loads(events["m6"]["metadata"]) == {"tool_call_id": "call_nsamu010", "requestor": "user"}
    assert events["m6"]["parent_id"] == "m5.1" and events["m10"]["content"] == "Airplane mode is now OFF"
    assert json.loads(events["m12.1"]["metadata"])["arguments"] == {"line_id": "L-401", "gb": 1}
    assert json.loads(events["m1"]["extra"])["turn_idx"] == 1 and "raw_data" not in json.loads(events["m1"]["extra"])
    # the customer is a person the agent serves, not its operator: no event of a run is the operator's
    assert con.execute("SELECT count(*) FROM events WHERE actor = 'human'").fetchone()[0] == 0
    # the customer's own writes are not the agent's: only the agent's calls are in the agent's facts
    execute(con, "facts/facts.sql")
    # and each of their turns is a person's turn
    assert [f["turn"] for f in rows(con, "SELECT turn FROM facts WHERE trace_id = ? AND type = 'user_message' ORDER BY seq",
                                    [AIRPLANE])] == [1, 2, 3, 4]
    assert {f["tool_name"] for f in rows(con, "SELECT tool_name FROM facts WHERE trace_id = ? AND type = 'tool_call' AND actor = 'agent'",
                                         [AIRPLANE])} == {"find_customer_by_phone", "add_data_pack"}


def test_the_reward_is_an_evaluation_that_names_the_failed_component(con):
    reward = events_of(con, AIRPLANE)[-1]
    assert (reward["event_id"], reward["raw_type"], reward["success"]) == ("reward", "reward_info", False)
    assert reward["content"] == "reward 0.0 (DB 0.0, ENV_ASSERTION 1.0); failed: DB"
    assert json.loads(reward["metadata"]) == {
        "reward": 0.0, "reward_basis": ["DB", "ENV_ASSERTION"], "reward_breakdown": {"DB": 0.0, "ENV_ASSERTION": 1.0},
        "db_match": False, "action_checks": {"met": 2, "of": 2}, "env_assertions": {"met": 1, "of": 1}}
    passed = events_of(con, ROAMING)[-1]
    assert (passed["type"], passed["status"], passed["success"], passed["content"]) == (
        "evaluation_result", "passed", True, "reward 1.0 (DB 1.0, COMMUNICATE 1.0)")
    assert json.loads(passed["metadata"])["communicate_checks"] == {"met": 1, "of": 1}
    assert {d["trace_id"] for d in rows(con, "SELECT trace_id FROM detections WHERE detector = 'failed_evaluation'")} \
        == {AIRPLANE, ODD_SIZE, SUSPENDED}


def test_failed_tool_calls_and_a_premature_end(con):
    assert shape(con, SUSPENDED) == [
        ("final_answer", None, None, None),  # the greeting is the agent's only text
        ("user_message", None, None, "counterpart"),
        ("tool_call", "find_customer_by_phone", None, None), ("tool_result", "find_customer_by_phone", "ok", None),
        ("tool_call", "add_data_pack", None, None), ("tool_result", "add_data_pack", "error", None),
        ("tool_call", "add_data_pack", None, None), ("tool_result", "add_data_pack", "error", None),
        ("tool_call", "lift_suspension", None, None), ("tool_result", "lift_suspension", "error", None),
        ("evaluation_result", None, "failed", "harness"),
    ]
    failed = [e for e in events_of(con, SUSPENDED) if e["status"] == "error"]
    assert [(e["parent_id"], e["success"], e["content"]) for e in failed] == [
        ("m4.1", False, "Error: Line L-305 is suspended; it cannot be changed"),
        ("m6.1", False, "Error: Line L-305 is suspended; it cannot be changed"),
        ("m8.1", False, "Error: Tool 'lift_suspension' not found.")]
    assert events_of(con, SUSPENDED)[-1]["content"] == \
        "reward 0.0: Simulation terminated prematurely. Termination reason: too_many_errors"


def test_a_handover_after_a_failed_fix_is_unresolved_and_one_asked_for_is_only_noted():
    """tau2's runner, two transfers: one after the customer said the agent's fix still did not work (the
    phone was in airplane mode, which the agent never asked about), one the customer asked for after a
    refusal the policy requires."""
    staged = stage([HANDOVERS])
    assert rows(staged, "SELECT * FROM rejects") == []
    found = {(d["trace_id"], d["detector"]): d for d in rows(staged, "SELECT * FROM detections")}
    assert {t for t, det in found if det == "escalation"} == {PREMATURE, ASKED_FOR}
    assert {t for t, det in found if det == "unresolved_escalation"} == {PREMATURE}
    d = found[(PREMATURE, "unresolved_escalation")]
    assert (d["severity"], d["evidence"]) == (
        "medium", '"I restarted the phone and the data still doesn\'t work.", then transfer_to_human_agents')
    # the refusal and the request for a person are no correction, and the right transfer no finding
    assert {det for t, det in found if t == ASKED_FOR} == {"escalation"}


def test_parallel_calls_are_paired_by_id(con):
    results_ = {e["event_id"]: e for e in events_of(con, ODD_SIZE) if e["type"] == "tool_result"}
    assert {k: (e["parent_id"], json.loads(e["metadata"])["tool_call_id"]) for k, e in results_.items()} == {
        "m3": ("m2.1", "call_dposa000"), "m5": ("m4.1", "call_dposa010"), "m6": ("m4.2", "call_dposa011")}
    assert [e["type"] for e in events_of(con, ODD_SIZE)].count("user_message") == 6


def test_the_dir_layout_is_the_same_run(con, dir_con):
    assert rows(dir_con, "SELECT * FROM rejects") == []
    accounts = {Path(a["path"]).name: (a["records"], a["loaded"], a["unaccounted"])
                for a in rows(dir_con, "SELECT * FROM file_accounts")}
    assert accounts == {"results.json": (1, 1, 0), **{f"{t}.json": (1, 1, 0) for t in (ROAMING, ODD_SIZE, SUSPENDED, AIRPLANE)}}
    # results.json holds no trace: it gives its run's info to the four simulations, linked to each
    meta = rows(dir_con, "SELECT l.trace_id FROM record_links l JOIN files f USING (file_id) WHERE f.path LIKE '%results.json'")
    assert sorted(r["trace_id"] for r in meta) == sorted([ROAMING, ODD_SIZE, SUSPENDED, AIRPLANE])
    same = "SELECT * EXCLUDE (file, file_id, record) FROM traces ORDER BY trace_id"
    assert rows(dir_con, same) == rows(con, same)
    same = "SELECT * EXCLUDE (file_id, record) FROM events ORDER BY trace_id, seq"
    assert rows(dir_con, same) == rows(con, same)
    assert {Path(t["file"]).name for t in rows(dir_con, "SELECT file FROM traces")} == {
        f"{t}.json" for t in (ROAMING, ODD_SIZE, SUSPENDED, AIRPLANE)}


def test_both_layouts_of_one_run_together_are_one_run():
    con = stage([MONOLITHIC, DIR])
    assert rows(con, "SELECT * FROM rejects") == []
    assert con.execute("SELECT sum(records), sum(loaded), sum(unaccounted) FROM file_accounts").fetchone() == (6, 6, 0)
    assert con.execute("SELECT count(*), count(DISTINCT trace_id) FROM traces").fetchone() == (4, 4)
    assert con.execute("SELECT count(*) FROM events").fetchone()[0] == 62


def test_a_simulation_file_read_alone_still_loads(tmp_path: Path):
    sim = json.loads((DIR / "simulations" / f"{AIRPLANE}.json").read_text(encoding="utf-8"))
    alone = tmp_path / "alone.json"
    alone.write_text(json.dumps(sim), encoding="utf-8")
    con = stage([alone])
    assert rows(con, "SELECT * FROM rejects") == []
    (t,) = rows(con, "SELECT * FROM traces")
    assert (t["trace_id"], t["source"], t["outcome"]) == (AIRPLANE, "tau2", "user_stop")
    assert json.loads(t["extra"])["policy"] == sim["policy"]  # this version copies it into every simulation
    assert "agent_model" not in json.loads(t["metadata"])
    sim.pop("policy")
    alone.write_text(json.dumps(sim), encoding="utf-8")
    (t,) = rows(stage([alone]), "SELECT * FROM traces")
    assert "policy" not in json.loads(t["extra"])


def test_a_dir_results_file_read_alone_is_refused_with_its_reason():
    con = stage([DIR / "results.json"])
    assert [r["reason"] for r in rows(con, "SELECT reason FROM rejects")] == [
        "tau2 results without simulations: 'simulations' is empty or missing, and no simulation of this run "
        "(its simulation_index lists 4) was read with it; they are the files in simulations/ beside it"]
    assert rows(con, "SELECT * FROM traces") == []


def test_without_the_reward_there_is_no_evaluation(tmp_path: Path, con):
    """What the eval scores as "the conversation alone": every reward_info removed."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "reward_info"}
        return [strip(v) for v in x] if isinstance(x, list) else x
    bare = tmp_path / "results.json"
    bare.write_text(json.dumps(strip(results())), encoding="utf-8")
    alone = stage([bare])
    assert rows(alone, "SELECT * FROM rejects") == []
    assert alone.execute("SELECT count(*) FROM events WHERE type = 'evaluation_result'").fetchone()[0] == 0
    same = "SELECT trace_id, seq, type, tool_name, status, actor, content FROM events WHERE type <> 'evaluation_result' ORDER BY ALL"
    assert rows(alone, same) == rows(con, same)
    assert rows(alone, "SELECT trace_id, outcome FROM traces ORDER BY 1") == rows(con, "SELECT trace_id, outcome FROM traces ORDER BY 1")
    assert alone.execute("SELECT count(*) FROM detections WHERE detector = 'failed_evaluation'").fetchone()[0] == 0


def test_the_chat_adapter_would_take_a_simulation_file_but_tau2_wins(dir_con):
    chat = next(a for a in __import__("lessonweaver.adapters", fromlist=["x"]).load_adapters() if a.format == "chat")
    doc = (DIR / "simulations" / f"{ROAMING}.json").read_text(encoding="utf-8")
    assert dir_con.execute(f"SELECT {chat.match} FROM (SELECT ?::JSON AS doc)", [doc]).fetchone()[0] is True
    assert {r["format"] for r in rows(dir_con, "SELECT format FROM file_formats")} == {"tau2"}


def test_what_it_refuses_and_what_it_accepts(tmp_path: Path):
    data = results()
    # a simulation with no id makes its results file unusable: it is refused whole, with the position
    no_id = json.loads(json.dumps(data))
    del no_id["simulations"][2]["id"]
    (tmp_path / "no_id").mkdir()
    (tmp_path / "no_id" / "r.json").write_text(json.dumps(no_id), encoding="utf-8")
    # a message without a role, in a simulation file
    no_role = json.loads(json.dumps(data["simulations"][0]))
    del no_role["messages"][3]["role"]
    (tmp_path / "no_role.json").write_text(json.dumps(no_role), encoding="utf-8")
    # tool call ids left empty (ToolCall.id defaults to ""): results are paired by order
    no_ids = json.loads(json.dumps(data["simulations"][1]))
    no_ids["id"] = "no-ids"
    for m in no_ids["messages"]:
        for c in m.get("tool_calls") or []:
            c["id"] = ""
        if m["role"] == "tool":
            m["id"] = ""
    (tmp_path / "no_ids.json").write_text(json.dumps(no_ids), encoding="utf-8")
    # what the runner writes for a task that failed on every attempt: no messages, infrastructure_error
    infra = {"id": "infra-1", "task_id": "t", "timestamp": "2026-01-01T00:00:00", "start_time": "2026-01-01T00:00:00",
             "end_time": "2026-01-01T00:00:00", "duration": 0.0, "termination_reason": "infrastructure_error",
             "messages": [], "trial": 0, "seed": 1, "info": {"error": "boom", "error_type": "WorkerFailure"}}
    (tmp_path / "infra.json").write_text(json.dumps(infra), encoding="utf-8")
    con = stage([tmp_path])
    assert sorted((Path(r["file"]).name, r["reason"]) for r in rows(con, "SELECT f.path AS file, reason FROM rejects JOIN files f USING (file_id)")) == [
        ("no_role.json", "messages[3]: missing required field 'role'"),
        ("r.json", "simulations[2]: missing required field 'id'")]
    assert con.execute("SELECT sum(unaccounted) FROM file_accounts").fetchone()[0] == 0
    paired = [(e["event_id"], e["parent_id"], e["tool_name"]) for e in events_of(con, "no-ids") if e["type"] == "tool_result"]
    assert paired == [("m3", "m2.1", "find_customer_by_phone"), ("m5", "m4.1", "get_line_details"), ("m6", "m4.2", "get_line_details")]
    (t,) = rows(con, "SELECT * FROM traces WHERE trace_id = 'infra-1'")
    assert t["outcome"] == "infrastructure_error" and json.loads(t["extra"])["info"]["error_type"] == "WorkerFailure"
    assert events_of(con, "infra-1") == []


def test_an_unknown_role_is_kept_as_unknown(tmp_path: Path):
    sim = json.loads((DIR / "simulations" / f"{ROAMING}.json").read_text(encoding="utf-8"))
    sim["messages"][1]["role"] = "narrator"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sim), encoding="utf-8")
    con = stage([path])
    e = events_of(con, ROAMING)[1]
    assert (e["type"], e["raw_type"]) == ("unknown", "narrator")


@pytest.mark.skipif(not TELECOM.is_dir(), reason="shared benchmarks not present")
def test_the_real_telecom_runs():
    files = sorted(p for p in TELECOM.glob("*.json") if p.name != "labels.json")
    con = stage(files)
    assert rows(con, "SELECT * FROM rejects") == [] and rows(con, "SELECT * FROM quarantine") == []
    assert con.execute("SELECT sum(records), sum(loaded), sum(unaccounted) FROM file_accounts").fetchone() == (2, 2, 0)
    assert dict(con.execute("SELECT source, count(*) FROM traces GROUP BY 1").fetchall()) == {
        "tau2/telecom": 5, "tau2/telecom-workflow": 20}
    assert dict(con.execute("SELECT outcome, count(*) FROM traces GROUP BY 1").fetchall()) == {"user_stop": 25}
    assert con.execute("SELECT count(*) FROM traces WHERE task IS NULL OR extra->>'policy' IS NULL").fetchone()[0] == 0
    # the grader's verdicts (labels.json) are the rewards read
    labels = json.loads((TELECOM / "labels.json").read_text())
    verdicts = dict(con.execute("SELECT trace_id, status FROM events WHERE type = 'evaluation_result'").fetchall())
    assert {k: ("failed" if v["failed"] else "passed") for k, v in labels.items()} == verdicts
    # every call answered, by id; the customer runs 173 of the 298 on their own phone
    calls = dict(con.execute("SELECT coalesce(actor, 'agent'), count(*) FROM events WHERE type = 'tool_call' GROUP BY 1").fetchall())
    assert calls == {"counterpart": 173, "agent": 125}
    assert con.execute("""SELECT count(*) FROM events r JOIN events c ON c.trace_id = r.trace_id AND c.event_id = r.parent_id
                          WHERE r.type = 'tool_result' AND c.type = 'tool_call'
                            AND c.metadata->>'tool_call_id' = r.metadata->>'tool_call_id'
                            AND r.actor IS NOT DISTINCT FROM c.actor""").fetchone()[0] == 298
    # the answer key (tasks[].evaluation_criteria) is never read
    key = {json.dumps(t["evaluation_criteria"]) for f in files for t in json.loads(f.read_text())["tasks"]}
    assert key and con.execute("SELECT count(*) FROM traces WHERE extra::VARCHAR LIKE '%evaluation_criteria%'").fetchone()[0] == 0


@pytest.mark.skipif(not TELECOM.is_dir(), reason="shared benchmarks not present")
def test_the_real_telecom_runs_without_their_reward(tmp_path: Path):
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "reward_info"}
        return [strip(v) for v in x] if isinstance(x, list) else x
    files = []
    for f in sorted(p for p in TELECOM.glob("*.json") if p.name != "labels.json"):
        files.append(tmp_path / f.name)
        files[-1].write_text(json.dumps(strip(json.loads(f.read_text()))), encoding="utf-8")
    con = stage(files)
    assert rows(con, "SELECT * FROM rejects") == []
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 25
    assert con.execute("SELECT count(*) FROM events WHERE type = 'evaluation_result'").fetchone()[0] == 0


@pytest.mark.skipif(not TAU_SAMPLE.is_dir(), reason="shared samples not present")
def test_tau_bench_results_stay_chat(tmp_path: Path):
    shutil.copytree(TAU_SAMPLE, tmp_path / "tau-bench")
    con = stage([tmp_path / "tau-bench"])
    assert {r["format"] for r in rows(con, "SELECT format FROM file_formats")} == {"chat"}
    assert con.execute("SELECT count(*) FROM traces WHERE format = 'chat'").fetchone()[0] == 40
