"""benchmarks/turns: the labelled turns still sit on the texts they were written for, and extract.py finds turns
where labels.csv says they are (locators, hashes, refusals kept, tool results and event copies left out)."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

# Set here rather than taken from conftest: these tests need only the script and the files, not the package.
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

EXTRACT = REPO / "benchmarks" / "turns" / "extract.py"


def run(*args):
    return subprocess.run([sys.executable, str(EXTRACT), *map(str, args)], capture_output=True, text=True, timeout=600)


def sha12(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


@pytest.mark.skipif(not (SHARED / "samples").is_dir(), reason="needs ../shared")
def test_every_labelled_row_matches_a_turn_of_the_shared_traces_and_every_turn_has_a_row():
    result = run("--shared", SHARED, "--check", REPO / "benchmarks" / "turns" / "labels.csv")
    assert result.returncode == 0, result.stdout[-2000:]
    assert result.stdout.strip().endswith("0 problems")


def write_jsonl(path, records, header=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in header) + "".join(json.dumps(r) + "\n" for r in records))


def test_turns_are_found_by_line_and_block_with_refusals_kept_and_copies_paired(tmp_path):
    session = tmp_path / "samples/coding-agents/cc-session-share/fixtures/one.jsonl"
    write_jsonl(session, [
        {"type": "user", "message": {"role": "user", "content": "  please rename the helper  "}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}},
        {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "file written"},
            {"type": "tool_result", "tool_use_id": "b", "is_error": True,
             "content": [{"type": "text", "text": "The user doesn't want to proceed with this tool use. Stop."}]},
            {"type": "text", "text": "[Request interrupted by user for tool use]"}]}},
    ], header=["// a comment line", "// another"])
    rollout = tmp_path / "samples/coding-agents/codex-openprintkit/.codex/sessions/2025/01/01/r.jsonl"
    write_jsonl(rollout, [
        {"type": "response_item", "payload": {"type": "message", "role": "user",
                                              "content": [{"type": "input_text", "text": "yes"}]}},
        {"type": "event_msg", "payload": {"type": "user_message", "message": "yes"}},
        {"type": "event_msg", "payload": {"type": "turn_aborted", "reason": "interrupted"}},
    ])

    result = run("--shared", tmp_path)

    assert result.returncode == 0, result.stderr
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    found = {(r[0], r[2]): r for r in rows}
    assert set(found) == {("coding-claude", "line:3"), ("coding-claude", "line:5#block:1"),
                          ("coding-claude", "line:5#block:2"), ("coding-codex", "line:1"), ("coding-codex", "line:3")}
    assert found[("coding-claude", "line:3")][3:6] == [sha12("please rename the helper"), "24", "4"]
    assert found[("coding-codex", "line:1")][-1] == "(same text: line:2)"
    assert found[("coding-codex", "line:3")][3] == sha12("interrupted")
    assert list(tmp_path.rglob("*.csv")) == []

    counts = run("--shared", tmp_path, "--counts").stdout
    assert "1\ttool_result\t" in counts and "1\tevent_msg user_message copies\t" in counts


def test_a_customer_tool_call_without_words_gets_a_text_made_from_the_call(tmp_path):
    results = tmp_path / "benchmarks/tau2-telecom/run.json"
    results.parent.mkdir(parents=True)
    results.write_text(json.dumps({"simulations": [{"messages": [
        {"role": "assistant", "content": "Please check your signal."},
        {"role": "user", "content": "", "tool_calls": [{"name": "check_signal", "arguments": {"b": 1, "a": 2}}]},
    ]}]}))

    rows = [line.split("\t") for line in run("--shared", tmp_path, "--set", "tau2-telecom").stdout.splitlines()]

    assert [(r[2], r[3]) for r in rows] == [("/simulations/0/messages/1", sha12('check_signal({"a": 2, "b": 1})'))]


def test_a_missing_shared_folder_is_one_clear_line_and_a_closed_pipe_is_no_error(tmp_path):
    missing = run("--shared", tmp_path / "nowhere")
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr.count("\n") == 1 and "not a folder" in missing.stderr

    if (SHARED / "samples").is_dir():
        head = subprocess.run(f"'{sys.executable}' '{EXTRACT}' --shared '{SHARED}' | head -1", shell=True,
                              capture_output=True, text=True, timeout=600)
        assert head.stderr == "" and head.stdout.count("\n") == 1
