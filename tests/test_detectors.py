"""Every shipped detector against its own cases (sql/detectors/<id>/tests/{positive,negative}/*.json), run
by the harness `lessonweaver detectors test` uses (lessonweaver.cases); that command on a folder of a
user's own; and the `formats:` header, which scopes a detector to some formats."""

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO, rows, stage, write_traces
from lessonweaver.cases import KINDS, cases, run_case
from lessonweaver.cli import main
from lessonweaver.detectors import load_detectors
from lessonweaver.sqlfile import SqlFileError

SHIPPED = load_detectors()
GDEV_RUN = REPO / "tests" / "fixtures" / "formats" / "gdev" / "auto_execute.jsonl"


def test_every_shipped_detector_is_a_folder_with_both_kinds_of_case():
    for d in SHIPPED:
        assert d.tests == d.sql.path.parent / "tests", f"{d.id} is not a folder of its own"
        assert {c.kind for c in cases(d)} == set(KINDS), f"{d.id} lacks a positive or a negative case"


@pytest.mark.parametrize("case", [c for d in SHIPPED for c in cases(d)], ids=lambda c: c.name)
def test_case(case):
    outcome = run_case(case)
    assert outcome.failure is None, outcome.failure


def trace(tid: str, *events: dict) -> dict:
    return {"trace_id": tid, "source": "mine", "task": "Check a price", "outcome": "success",
            "events": [{"id": f"e{i}", **e} for i, e in enumerate(events, 1)]}


FAILED = {"type": "tool_call", "content": "price_api", "status": "failed"}
WORKED = {"type": "tool_call", "content": "price_api", "status": "success"}


def detector(folder: Path, name: str, select: str, **given: dict) -> None:
    """A detector `name` in a folder of its own under `folder`, with cases `given` ({kind/case: spec})."""
    sql = folder / name / f"{name}.sql"
    sql.parent.mkdir(parents=True)
    sql.write_text(f"-- id: {name}\n-- title: {name}\n-- severity: low\n-- description: a test's own\n{select}\n")
    for case, spec in given.items():
        kind, stem = case.split("__")
        (sql.parent / "tests" / kind).mkdir(parents=True, exist_ok=True)
        (sql.parent / "tests" / kind / f"{stem}.json").write_text(json.dumps(spec), encoding="utf-8")


def test_the_command_on_a_folder_of_ones_own(tmp_path: Path, capsys):
    mine = tmp_path / "mine"
    detector(mine, "failed_tool",
             "SELECT trace_id, event_id, 'tool failed: ' || content AS evidence FROM events WHERE status = 'failed'",
             positive__failed={"traces": [trace("t1", FAILED, WORKED)],
                               "expect": [{"trace_id": "t1", "event_id": "e1", "evidence": "price_api"}], "count": 1},
             negative__worked={"traces": [trace("t2", WORKED)]})
    detector(mine, "every_trace", "SELECT trace_id, 'seen' AS evidence FROM traces",
             positive__any={"traces": [trace("t3", WORKED)], "expect": [{"trace_id": "t3", "evidence": "seen"}], "count": 1},
             negative__clean={"traces": [trace("t4", WORKED)]})
    (mine / "dropped_in.sql").write_text("-- id: dropped_in\n-- title: t\n-- severity: low\n-- description: d\n"
                                         "SELECT trace_id, 'x' AS evidence FROM traces WHERE false\n")
    capsys.readouterr()
    assert main(["detectors", "test", str(mine)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"FAIL  dropped_in/positive: no positive case: add one as {mine}/dropped_in/tests/positive/<case>.json",
        f"FAIL  dropped_in/negative: no negative case: add one as {mine}/dropped_in/tests/negative/<case>.json",
        "ok    every_trace/positive/any",
        "FAIL  every_trace/negative/clean: expected no finding, found 1, the first: seen",
        "ok    failed_tool/positive/failed",
        "ok    failed_tool/negative/worked",
        "detectors test: 3 detectors, 3 passed, 3 failed",
    ]
    (mine / "dropped_in.sql").unlink()
    shutil.rmtree(mine / "every_trace")
    assert main(["detectors", "test", str(mine)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "detectors test: 1 detector, 2 passed, 0 failed"


def test_a_case_that_is_wrong_says_why(tmp_path: Path, capsys):
    mine = tmp_path / "mine"
    detector(mine, "failed_tool", "SELECT trace_id, content AS evidence FROM events WHERE status = 'failed'",
             positive__misspelt={"traces": [trace("t1", FAILED)], "expect": [{"trace_id": "t1", "evidence": "price", "sevrity": "high"}],
                                 "count": 1},
             positive__no_expect={"traces": [trace("t1", FAILED)]},
             positive__too_many={"traces": [trace("t1", FAILED, FAILED)], "expect": [{"trace_id": "t1", "evidence": "price"}],
                                 "count": 1},
             positive__torn={"records": [{"trace_id": "t1"}], "expect": [{"trace_id": "t1", "evidence": "x"}], "count": 1},
             positive__uncounted={"traces": [trace("t1", FAILED)], "expect": [{"trace_id": "t1", "evidence": "price"}]},
             positive__vague={"traces": [trace("t1", FAILED)], "expect": [{"trace_id": "t1"}], "count": 1},
             negative__not_a_case={"events": []})
    capsys.readouterr()
    assert main(["detectors", "test", str(mine)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out.pop(0) == ("FAIL  failed_tool/positive/misspelt: an expected finding names `sevrity`, which no finding has "
                          "(known: trace_id, event_id, severity, tool, recovery_kind, evidence, problem, lesson, signature, "
                          "recovery, title)")
    assert out[:2] == ["FAIL  failed_tool/positive/no_expect: a positive case needs `expect`: the findings it must yield",
                       "FAIL  failed_tool/positive/too_many: expected 1 finding, found 2"]
    assert out[2].startswith("FAIL  failed_tool/positive/torn: 1 record rejected, the first: "
                             "not a trace in any known format (keys: trace_id; known: ")
    assert out[3:] == [
        "FAIL  failed_tool/positive/uncounted: a positive case needs `count`: the exact number of findings it yields",
        "FAIL  failed_tool/positive/vague: every expected finding needs a piece of its `evidence`: "
        "without one it matches any finding",
        "FAIL  failed_tool/negative/not_a_case: a case is a JSON object with `traces` or `records`",
        "detectors test: 1 detector, 0 passed, 7 failed"]


@pytest.mark.parametrize("args, message", [
    (["missing"], "detector folder does not exist: {tmp}/missing"),
    (["empty"], "no detectors in {tmp}/empty"),
])
def test_usage_errors_exit_2(tmp_path: Path, capsys, args: list[str], message: str):
    (tmp_path / "empty").mkdir()
    assert main(["detectors", "test", *(str(tmp_path / a) for a in args)]) == 2
    assert capsys.readouterr().err == f"lessonweaver: error: {message.format(tmp=tmp_path)}\n"


def test_formats_header_scopes_the_query(tmp_path: Path):
    """A detector with `formats: gdev` sees only gdev traces and their events, whatever it counts."""
    mine = tmp_path / "mine"
    detector(mine, "gdev_only", "SELECT trace_id, (SELECT count(*) FROM traces) || ' trace(s), '\n"
                                "    || (SELECT count(DISTINCT trace_id) FROM events) || ' with events' AS evidence\n"
                                "FROM traces -- a comment on the last line")
    sql = mine / "gdev_only" / "gdev_only.sql"
    sql.write_text(sql.read_text().replace("-- severity: low\n", "-- severity: low\n-- formats: gdev\n"))
    other = write_traces(tmp_path / "in", "lw.jsonl", [trace("lw-1", WORKED), trace("lw-2", FAILED)])
    con = stage([GDEV_RUN, other], detector_dirs=(str(mine),), only="gdev_only")
    assert rows(con, "SELECT trace_id, evidence FROM detections") == [
        {"trace_id": "req_auto_01", "evidence": "1 trace(s), 1 with events"}]


@pytest.mark.parametrize("header, message", [
    ("-- id: mine\n-- formats: gdev, nosuch\n", "formats: unknown format nosuch \\(known: "),
    ("-- id: other_name\n", "id 'other_name' must be its folder's name, 'mine'"),
])
def test_broken_packs(tmp_path: Path, header: str, message: str):
    sql = tmp_path / "mine" / "mine.sql"
    sql.parent.mkdir()
    sql.write_text(header + "-- title: t\n-- severity: low\n-- description: d\nSELECT 1\n")
    with pytest.raises(SqlFileError, match=message):
        load_detectors([str(tmp_path)])


def test_a_pack_whose_file_is_misnamed_is_an_error(tmp_path: Path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "detector.sql").write_text("-- id: mine\nSELECT 1\n")
    with pytest.raises(SqlFileError, match="a pack's SQL file must be named after its folder: mine.sql"):
        load_detectors([str(tmp_path)])
