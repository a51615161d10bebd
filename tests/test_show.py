"""`lessonweaver show TRACE_ID`: a trace's timeline in the terminal, with each detection marked at the
event it points to, on a database the real CLI made from the demo data and a few traces of our own (a
long one with a correction late in it and a URL and path in that correction; two ids where one starts the
other). The same timelines, capped, are in the HTML report (tests/test_html.py looks at them in Chromium)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, copy_db, query_db, write_traces
from lessonweaver.cli import main

LONG = 80  # events in the long trace; its correction is event 70
CORRECTION = "Wrong export table: read https://ci.example.com/job/7 and /home/dev/app/config.yaml first."


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("show")
    shutil.copytree(REPO / "data", root / "in" / "data")
    steps = [{"id": f"e{i}", "type": "workflow_step", "content": f"Step {i} of the export."} for i in range(1, LONG + 1)]
    steps[69] = {"id": "e70", "type": "human_correction", "content": CORRECTION}
    write_traces(root / "in" / "ours", "ours.jsonl", [
        {"trace_id": "long-0001", "source": "show-test", "task": "Export the ledger", "outcome": "corrected_by_human",
         "events": steps},
        *({"trace_id": t, "source": "show-test", "task": "Say hello", "outcome": "success",
           "events": [{"id": "e1", "type": "final_answer", "content": "Hello."}]} for t in ("pfx-1", "pfx-10")),
        {"trace_id": "calls-1", "source": "show-test", "task": "Fix the rounding", "outcome": "success", "events": [
            {"id": "e1", "type": "user_message", "content": "Fix the rounding."},
            {"id": "e2", "type": "tool_call", "tool_name": "bash", "content": "",
             "metadata": {"arguments": {"command": "pytest -q tests/test_money.py"}}},
            {"id": "e3", "type": "tool_call", "tool_name": "read_file", "content": "",
             "metadata": {"arguments": {"path": "/home/dev/ledger/money.py", "limit": 40}}},
            {"id": "e4", "type": "tool_call", "tool_name": "search_docs", "content": "",
             "metadata": {"arguments": {"max_results": 5, "query": "rounding half up"}}},
            {"id": "e5", "type": "tool_call", "tool_name": "bash", "content": "",
             "metadata": {"arguments": {"command": ["bash", "-lc", "echo" + " step" * 60]}}},
            {"id": "e6", "type": "final_answer", "content": "Fixed."}]},
        {"trace_id": "esc-1", "source": "show-test", "task": "Say hello", "outcome": "success",
         "events": [{"id": "e1", "type": "final_answer", "content": "Hello \u001b[2J\u001b[31mthere\u0007"}]},
    ])
    db = root / "lw.duckdb"
    assert main(["run", str(root / "in"), "--no-prefect", "-q", "--db", str(db), "--out", str(root / "reports"),
                 "--night", "2026-11-20"]) == 0
    return db


def show(capsys, db: Path, trace: str, *options: str) -> tuple[int, list[str], str]:
    code = main(["show", trace, "--db", str(db), *options])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_show_prints_each_event_in_order_with_its_detections_marked(demo: Path, capsys):
    code, lines, err = show(capsys, demo, "sup-0001")
    assert code == 0 and err == ""
    assert lines[0] == "trace sup-0001 · source support-bot · outcome success · 5 events · 1 detection"
    assert lines[1] == "task: Answer a refund question"
    events = [line for line in lines if re.match(r"[> ] +\d+  ", line)]
    assert [int(line[1:].split()[0]) for line in events] == [1, 2, 3, 4, 5]
    assert [line.split()[1 if line[0] == " " else 2] for line in events] == [
        "user_message", "tool_call", "assistant_message", "evaluation_result", "final_answer"]
    assert [line[0] for line in events] == [" ", " ", " ", ">", " "]
    flagged = lines.index(events[3])
    ((lesson,),) = query_db(demo, "SELECT lesson_id FROM detections WHERE trace_id = 'sup-0001' AND seq = 4")
    assert lines[flagged + 1].split()[:5] == ["^", "failed_evaluation", "(critical,", "lesson", f"{lesson}):"]
    assert "An evaluation failed while the run reported success" in lines[flagged + 1]
    assert "failed" in events[3] and "Policy check failed for ticket 5120" in events[3]


def test_every_detection_of_a_trace_is_marked_once_at_its_event_or_the_whole_trace(demo: Path, capsys):
    for trace in ("req_gap_01", "cod-0200", "run-supervisor-lost"):
        code, lines, _ = show(capsys, demo, trace)
        assert code == 0
        expected = sorted((seq, detector) for seq, detector in query_db(
            demo, "SELECT seq, detector FROM detections WHERE trace_id = ?", [trace]))
        marked, at = [], None
        for line in lines:
            if m := re.match(r"([> ]) +(\d+)  ", line):
                at = int(m[2])
            elif m := re.match(r" +\^ (\w+) \(", line):
                marked.append((at, m[1]))
            elif m := re.match(r"whole trace: (\w+) \(", line):
                marked.append((None, m[1]))
        assert sorted(marked, key=lambda x: (x[0] or 0, x[1])) == sorted(expected, key=lambda x: (x[0] or 0, x[1]))
    _, lines, _ = show(capsys, demo, "cod-0200")
    assert [line.split(":")[0] for line in lines if line.startswith("whole trace")] == ["whole trace"] * 2


def test_a_one_off_below_the_noise_floor_names_no_lesson(demo: Path, capsys):
    """A finding no lesson holds says so, instead of giving an id that `review show` cannot find."""
    ((trace, detector),) = query_db(demo, """SELECT trace_id, detector FROM detections
        WHERE lesson_id NOT IN (SELECT lesson_id FROM lessons) AND trace_id = 'sup-0032'""")
    _, lines, _ = show(capsys, demo, trace)
    (mark,) = [line for line in lines if f"^ {detector}" in line]
    assert ", below the noise floor): " in mark and "lesson" not in mark.split("):")[0]


def test_a_long_trace_is_shown_whole_and_its_text_scrubbed(demo: Path, capsys):
    code, lines, _ = show(capsys, demo, "long-0001")
    assert code == 0
    events = [line for line in lines if re.match(r"[> ] +\d+  ", line)]
    assert len(events) == LONG and events[69].startswith(">  70")
    text = "\n".join(lines)
    assert "<URL>" in text and "<PATH>" in text
    assert "ci.example.com" not in text and "/home/dev" not in text


def events_of(lines: list[str]) -> dict[int, str]:
    """The event lines of a timeline by seq: their content column on."""
    head = next(line for line in lines if line.strip().startswith("seq"))
    at = head.index("content")
    return {int(m[1]): line[at:] for line in lines if (m := re.match(r"[> ] +(\d+)  ", line))}


def test_a_tool_call_shows_what_it_ran_the_file_and_the_query(demo: Path, capsys):
    code, lines, _ = show(capsys, demo, "calls-1")
    events = events_of(lines)
    assert code == 0 and events[2] == "bash: pytest -q tests/test_money.py"
    assert events[3] == "read_file: …/money.py limit=40"  # the file's name; the folders above it are no one's business
    assert events[4] == "search_docs: rounding half up max_results=5"  # the query first, whatever the order
    assert events[5].startswith("bash: echo step step") and events[5].endswith("…") and len(events[5]) == 100
    assert "/home/dev" not in "\n".join(lines)
    _, lines, _ = show(capsys, demo, "calls-1", "--width", "30")
    assert events_of(lines)[5] == "bash: echo step step step ste…"  # 30 characters


def test_limit_shows_the_events_detections_point_to_first(demo: Path, capsys):
    code, lines, _ = show(capsys, demo, "long-0001", "--limit", "5")
    assert code == 0 and sorted(events_of(lines)) == [68, 69, 70, 71, 72]  # the correction, and two on each side
    assert [line.strip() for line in lines if "left out" in line] == ["... 67 events left out", "... 8 events left out"]


def test_around_shows_the_events_nearest_to_one(demo: Path, capsys):
    _, lines, _ = show(capsys, demo, "long-0001", "--around", "20")
    assert sorted(events_of(lines)) == list(range(10, 31))
    assert "event 70 (not shown): human_correction (high, lesson L" in "\n".join(lines)  # still named
    _, lines, _ = show(capsys, demo, "long-0001", "--around", "1", "--limit", "3")
    assert sorted(events_of(lines)) == [1, 2, 3]
    _, lines, _ = show(capsys, demo, "long-0001", "--around", f"{LONG}", "--limit", "2")
    assert sorted(events_of(lines)) == [LONG - 1, LONG]
    assert show(capsys, demo, "long-0001", "--around", "81") == (
        2, [], f"lessonweaver: error: trace long-0001 has {LONG} events (seq 1 to {LONG}): --around 81 is past its end\n")


def test_a_unique_start_of_an_id_names_the_trace_and_an_exact_id_wins(demo: Path, capsys):
    assert show(capsys, demo, "run-sup")[1][0].startswith("trace run-supervisor-lost ·")
    assert show(capsys, demo, "pfx-1")[1][0].startswith("trace pfx-1 ·")  # though pfx-10 starts with it too
    assert show(capsys, demo, "pfx-10")[1][0].startswith("trace pfx-10 ·")


@pytest.mark.parametrize("given, message", [
    ("sup-000", "lessonweaver: error: 'sup-000' starts more than one trace id (sup-0001, sup-0002, ...): give more of it"),
    ("nope", "lessonweaver: error: no trace 'nope' in the database (list them with: "
             "lessonweaver sql \"SELECT trace_id FROM traces\")"),
    ("cod-0009", "lessonweaver: error: trace 'cod-0009' was quarantined (tag:contains_secret): only its id, file "
                 "and reason are stored"),
    (" ", "lessonweaver: error: give a trace id (or the start of one)"),
])
def test_an_id_that_names_no_single_stored_trace_is_one_line_and_exit_2(demo: Path, capsys, given: str, message: str):
    code, lines, err = show(capsys, demo, given)
    assert (code, lines, err) == (2, [], message + "\n")


def test_a_forgotten_trace_is_named_as_such(demo: Path, tmp_path: Path, capsys):
    db = copy_db(demo, tmp_path / "lw.duckdb")
    assert main(["forget", "--trace", "cod-0001", "--db", str(db)]) == 0
    capsys.readouterr()
    assert show(capsys, db, "cod-0001") == (
        2, [], "lessonweaver: error: trace 'cod-0001' was removed by lessonweaver forget\n")


@pytest.mark.slow
def test_show_as_a_command(demo: Path, tmp_path: Path):
    """The installed entry point: exit statuses, and errors as one line on stderr."""
    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lessonweaver.cli", "show", *argv], capture_output=True,
                              text=True, cwd=REPO, timeout=120)

    done = run("wf-0001", "--db", str(demo))
    assert done.returncode == 0 and done.stderr == ""
    assert "environment_error (medium, lesson L" in done.stdout
    for argv in (("wf-00", "--db", str(demo)), ("wf-0001", "--db", str(tmp_path / "none.duckdb"))):
        done = run(*argv)
        assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1, done.stderr
    assert "no database at" in done.stderr


def test_the_report_timeline_of_a_long_trace_keeps_its_detection_and_says_what_it_left_out(demo: Path):
    from lessonweaver.render import TIMELINE_EVENTS

    html = (demo.parent / "reports" / "lessons.html").read_text(encoding="utf-8")
    block = html[html.index('<details class="timeline" id="trace-long-0001">'):]
    block = block[:block.index("</details>")]
    seqs = [int(s) for s in re.findall(r'<span class="seq">(\d+)</span>', block)]
    assert len(seqs) == TIMELINE_EVENTS and seqs == sorted(seqs)
    assert {68, 69, 70, 71, 72} <= set(seqs)  # the corrected event and two either side
    assert re.search(r'<li class="event flagged"><span class="seq">70</span>', block)
    gaps = [int(n) for n in re.findall(r'<li class="gap">… (\d+) events? left out</li>', block)]
    assert sum(gaps) == LONG - TIMELINE_EVENTS
    assert f"{LONG - TIMELINE_EVENTS} of {LONG} events left out here" in block
    assert "&lt;URL&gt;" in block and "ci.example.com" not in html


def test_control_characters_in_a_trace_never_reach_the_terminal(demo: Path, capsys):
    code, lines, _ = show(capsys, demo, "esc-1")
    assert code == 0
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text
    assert "Hello ?[2J?[31mthere?" in text
