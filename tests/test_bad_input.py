"""Bad input, kind by kind: each bad record is rejected with its line and an exact reason, nothing crashes,
and every file balances (records = loaded + quarantined + rejected, nothing unaccounted).

The small cases are files in tests/fixtures/bad_input/ (one file per kind); the big, deep, numerous or
unreadable ones are built here. `examine` stages the files (for the staging tables) and also runs them
as one real batch (for the per-file accounts the batch writes to files.parquet).
"""

import gzip
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest
from conftest import rows, stage

from flows.nightly import nightly
from lessonweaver.adapters import load_adapters
from lessonweaver.batch import BatchError, run_batch
from lessonweaver.cli import main
from lessonweaver.config import Settings, document_batch_bytes
from lessonweaver.discover import InputFile, batches, discover

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "bad_input"
CONFLICT = "conflicting duplicate of trace_id "


def unknown_format_reason(keys: str) -> str:
    return f"not a trace in any known format (keys: {keys}; known: {', '.join(a.format for a in load_adapters())})"


# What each fixture must yield: its rejects as (line, reason), and its account (records, loaded, quarantined, rejected).
FIXTURE_REJECTS = {
    "invalid-json.jsonl": [(2, "invalid JSON (expecting ':' delimiter at column 36)"),
                           (3, "invalid JSON (expecting value at column 1)"),
                           (5, "invalid JSON (extra data at column 27)"),
                           (6, "invalid JSON (expecting property name enclosed in double quotes at column 2)")],
    "truncated.jsonl": [(3, "invalid JSON (unexpected end of input)")],
    "truncated.jsonl.gz": [(3, "invalid JSON (unexpected end of input)")],
    "non-utf8.jsonl": [(2, "not valid UTF-8 (byte 0xff at column 78)"), (4, "not valid UTF-8 (byte 0xe9 at column 75)")],
    "not-objects.jsonl": [(2, "not a JSON object (got a number)"), (3, "not a JSON object (got an array)"),
                          (4, "not a JSON object (got a string)"), (5, "not a JSON object (got null)")],
    "missing-fields.jsonl": [(n, f"missing required field '{field}'") for n, field in
                             enumerate(("trace_id", "source", "task", "outcome", "events"), start=1)],
    "wrong-types.jsonl": [(1, "field 'events' must be a list"), (2, "event 2 is not an object"),
                          (3, "event 1: missing required field 'id'"), (4, "event 2: missing required field 'type'")],
    "csv-named.json": [(n, "invalid JSON (expecting value at column 1)") for n in (1, 2, 3)],
    "unknown-format.json": [(1, "generated, report, rows")],  # with the installed adapters: unknown_format_reason()
    "duplicates.jsonl": [(4, f"{CONFLICT}bi-dup-other from {FIXTURES / 'duplicates.jsonl'}")],
}
FIXTURE_ACCOUNTS = {
    "invalid-json.jsonl": (7, 3, 0, 4), "truncated.jsonl": (3, 2, 0, 1), "truncated.jsonl.gz": (3, 2, 0, 1),
    "empty.jsonl": (0, 0, 0, 0), "whitespace.jsonl": (0, 0, 0, 0), "non-utf8.jsonl": (4, 2, 0, 2),
    "bom.json": (1, 1, 0, 0), "bom.jsonl": (2, 2, 0, 0), "not-objects.jsonl": (6, 2, 0, 4),
    "missing-fields.jsonl": (6, 1, 0, 5), "wrong-types.jsonl": (5, 1, 0, 4), "csv-named.json": (3, 0, 0, 3),
    "unknown-format.json": (1, 0, 0, 1), "duplicates.jsonl": (4, 3, 0, 1),
}
FIXTURE_NOTES = {
    "truncated.jsonl.gz": "truncated gzip stream: kept the lines before the cut",
    "csv-named.json": "no valid JSON in the file: is it a trace file?",
}


def expected_rejects(name: str) -> list[tuple[int, str]]:
    return [(line, unknown_format_reason(reason) if name == "unknown-format.json" else reason)
            for line, reason in FIXTURE_REJECTS.get(name, [])]


def trace(tid: str, task: str = "Sort the inbox", events: list | None = None, **extra) -> dict:
    evs = events if events is not None else [
        {"id": "e1", "type": "user_message", "content": "Sort my inbox by sender."},
        {"id": "e2", "type": "final_answer", "content": "Sorted 12 messages."}]
    return {"trace_id": tid, "source": "fixture-agent", "task": task, "outcome": "success", "events": evs, **extra}


def jsonl(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


@dataclass
class Outcome:
    con: duckdb.DuckDBPyConnection  # the staging database, after detect
    traces: list[str]  # trace ids loaded, sorted
    rejects: dict[str, list[tuple[int | None, str]]]  # file name -> (line, reason), in record order
    accounts: dict[str, tuple[int, int, int, int]]  # file name -> (records, loaded, quarantined, rejected)
    notes: dict[str, str]  # file name -> note, for files that have one


def examine(paths: list[Path], batch_folder: Path) -> Outcome:
    """Stage `paths`, and run them as a real batch; check that every file balances and no reason quotes content."""
    con = stage(paths)
    rejects: dict[str, list] = {}
    for r in rows(con, "SELECT f.path, j.line, j.record, j.reason FROM rejects j JOIN files f USING (file_id) "
                       "ORDER BY f.path, j.record"):
        assert r["line"] is None or r["line"] == r["record"], r
        if not r["reason"].startswith(CONFLICT):
            assert "bi-" not in r["reason"], f"a reject reason quotes content: {r['reason']}"
        rejects.setdefault(Path(r["path"]).name, []).append((r["line"], r["reason"]))
    traces = sorted(r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces"))

    run_batch(discover([str(p) for p in paths]), Settings(), str(batch_folder))
    files = pl.read_parquet(batch_folder / "files.parquet").to_dicts()
    for f in files:
        assert f["unaccounted"] == 0, f
        assert f["records"] == f["loaded"] + f["quarantined"] + f["rejected"], f
    accounts = {Path(f["path"]).name: (f["records"], f["loaded"], f["quarantined"], f["rejected"]) for f in files}
    notes = {Path(f["path"]).name: f["note"] for f in files if f["note"] is not None}
    # The batch and the staging agree on what was rejected.
    batch_rejects = pl.read_parquet(batch_folder / "rejects.parquet")
    assert batch_rejects.height == sum(len(v) for v in rejects.values())
    return Outcome(con, traces, rejects, accounts, notes)


def examine_fixture(name: str, tmp_path: Path) -> Outcome:
    result = examine([FIXTURES / name], tmp_path / "batch")
    assert result.rejects.get(name, []) == expected_rejects(name)
    assert result.accounts == {name: FIXTURE_ACCOUNTS[name]}
    assert result.notes == ({name: FIXTURE_NOTES[name]} if name in FIXTURE_NOTES else {})
    return result


def test_invalid_json_lines_among_good_ones(tmp_path):
    result = examine_fixture("invalid-json.jsonl", tmp_path)
    assert result.traces == ["bi-json-1", "bi-json-2", "bi-json-3"]


def test_a_truncated_plain_file_loses_only_its_last_line(tmp_path):
    assert not (FIXTURES / "truncated.jsonl").read_bytes().endswith(b"\n")
    result = examine_fixture("truncated.jsonl", tmp_path)
    assert result.traces == ["bi-trunc-1", "bi-trunc-2"]


def test_a_truncated_gzip_keeps_the_lines_before_the_cut(tmp_path):
    result = examine_fixture("truncated.jsonl.gz", tmp_path)
    assert result.traces == ["bi-gz-1", "bi-gz-2"]


def _gzip_of_200_traces() -> tuple[dict[str, str], bytearray]:
    """200 traces (their task text by trace id), and their gzip. No long digit runs: they could read as card numbers."""
    rng = random.Random(7)
    orders = ("sender", "date", "size", "label", "thread", "subject", "priority", "folder")
    traces = [trace(f"gz-{i:03d}", task=f"Sort the inbox by {rng.choice(orders)}, then {rng.choice(orders)}")
              for i in range(200)]
    return {t["trace_id"]: t["task"] for t in traces}, bytearray(gzip.compress(jsonl(*traces).encode(), mtime=0))


def test_a_corrupt_gzip_member_is_dropped_and_the_intact_ones_before_it_stay(tmp_path):
    _, packed = _gzip_of_200_traces()
    intact = gzip.compress(json.dumps({"trace_id": "first-member", "source": "s", "task": "t", "outcome": "success",
                                       "events": []}).encode() + b"\n", mtime=0)
    at = len(packed) * 3 // 4
    packed[at:at + 40] = bytes(b ^ 0x55 for b in packed[at:at + 40])
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "damaged.jsonl.gz").write_bytes(intact + bytes(packed))
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.notes == {"damaged.jsonl.gz": "corrupt gzip data: the damaged part was not loaded"}
    assert result.traces == ["first-member"]


@pytest.mark.parametrize("damage", [
    "run-of-flipped-bytes",
    "wrong-crc",
    "one-flipped-bit",
])
def test_a_corrupt_gzip_loads_only_traces_as_they_were_written(tmp_path, damage):
    tasks, packed = _gzip_of_200_traces()
    if damage == "run-of-flipped-bytes":
        at = len(packed) * 3 // 4
        packed[at:at + 40] = bytes(b ^ 0x55 for b in packed[at:at + 40])
    elif damage == "wrong-crc":
        packed[-8:-4] = b"\0\0\0\0"  # the trailer's CRC-32: the content itself is intact
    else:
        packed[83] ^= 1 << 5
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "damaged.jsonl.gz").write_bytes(packed)
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.notes["damaged.jsonl.gz"].startswith("corrupt gzip data")
    loaded = rows(result.con, "SELECT trace_id, task FROM traces")
    assert [r for r in loaded if tasks.get(r["trace_id"]) != r["task"]] == []


def test_empty_and_whitespace_only_files_have_no_records(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("empty.jsonl", "whitespace.jsonl"):
        (folder / name).write_bytes((FIXTURES / name).read_bytes())
    (folder / "empty.json").write_bytes(b"")
    (folder / "blank.json").write_bytes(b"\n\n  \n")
    (folder / "empty.jsonl.gz").write_bytes(gzip.compress(b"", mtime=0))
    (folder / "zero-bytes.jsonl.gz").write_bytes(b"")  # not even a gzip header
    result = examine([folder], tmp_path / "batch")
    assert result.traces == [] and result.rejects == {} and result.notes == {}
    assert result.accounts == {name: (0, 0, 0, 0) for name in
                               ("empty.jsonl", "whitespace.jsonl", "empty.json", "blank.json",
                                "empty.jsonl.gz", "zero-bytes.jsonl.gz")}


def test_bytes_that_are_not_utf8_reject_only_their_line(tmp_path):
    result = examine_fixture("non-utf8.jsonl", tmp_path)
    assert result.traces == ["bi-utf8-1", "bi-utf8-3"]


def test_a_utf8_byte_order_mark_is_ignored(tmp_path):
    (tmp_path / "in").mkdir()
    for name in ("bom.json", "bom.jsonl"):
        (tmp_path / "in" / name).write_bytes((FIXTURES / name).read_bytes())
    (tmp_path / "in" / "bom.jsonl.gz").write_bytes(
        gzip.compress(b"\xef\xbb\xbf" + jsonl(trace("bi-bom-gz")).encode(), mtime=0))
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.traces == ["bi-bom-1", "bi-bom-2", "bi-bom-3", "bi-bom-gz"]
    assert result.rejects == {} and result.notes == {}
    assert result.accounts == {"bom.json": (1, 1, 0, 0), "bom.jsonl": (2, 2, 0, 0), "bom.jsonl.gz": (1, 1, 0, 0)}


def test_json_values_that_are_not_traces(tmp_path):
    result = examine_fixture("not-objects.jsonl", tmp_path)
    assert result.traces == ["bi-val-1", "bi-val-2"]
    # A .json document that is a bare value, or an array holding non-objects among traces.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "number.json").write_text("42\n")
    (tmp_path / "in" / "mixed-array.json").write_text(json.dumps([trace("bi-arr-1"), 7, "x", [trace("bi-arr-2")]]))
    result = examine([tmp_path / "in"], tmp_path / "batch2")
    assert result.traces == ["bi-arr-1"]
    assert result.rejects == {
        "number.json": [(1, "not a JSON object (got a number)")],
        # Elements of a JSON array have no line of their own.
        "mixed-array.json": [(None, "not a JSON object (got a number)"), (None, "not a JSON object (got a string)"),
                             (None, "not a JSON object (got an array)")],
    }
    assert result.accounts == {"number.json": (1, 0, 0, 1), "mixed-array.json": (4, 1, 0, 3)}


def test_missing_required_fields(tmp_path):
    result = examine_fixture("missing-fields.jsonl", tmp_path)
    assert result.traces == ["bi-miss-none"]
    # A field that is present but null is missing too.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "nulls.jsonl").write_text(jsonl(*(
        {**trace(f"bi-null-{field}"), field: None} for field in ("trace_id", "source", "task", "outcome", "events"))))
    result = examine([tmp_path / "in"], tmp_path / "batch2")
    assert result.rejects == {"nulls.jsonl": expected_rejects("missing-fields.jsonl")}
    assert result.accounts == {"nulls.jsonl": (5, 0, 0, 5)}


def test_fields_of_the_wrong_type(tmp_path):
    result = examine_fixture("wrong-types.jsonl", tmp_path)
    assert result.traces == ["bi-type-ok"]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "more-types.jsonl").write_text(jsonl(
        {**trace("bi-x"), "trace_id": {"id": "bi-x"}},
        {**trace("bi-src"), "source": ["fixture-agent"]},
        {**trace("bi-task"), "task": {"text": "Sort the inbox"}},
        {**trace("bi-outcome"), "outcome": ["success"]},
        {**trace("bi-empty-id"), "trace_id": "  "},
        trace("bi-ev-id", events=[{"id": " ", "type": "user_message"}]),
        trace("bi-ev-type", events=[{"id": "e1", "type": ""}]),
    ))
    result = examine([tmp_path / "in"], tmp_path / "batch2")
    assert result.traces == []
    assert result.rejects == {"more-types.jsonl": [
        (1, "field 'trace_id' must be a string"), (2, "field 'source' must be a string"),
        (3, "field 'task' must be a string"), (4, "field 'outcome' must be a string"),
        (5, "field 'trace_id' is empty"), (6, "event 1: missing required field 'id'"),
        (7, "event 1: missing required field 'type'")]}
    assert result.accounts == {"more-types.jsonl": (7, 0, 0, 7)}



def test_a_field_s_kind_is_read_from_the_one_parse(tmp_path):
    """The adapter knows a field's JSON kind from the text its single parse kept: a number is an id (as
    its text), a boolean is not, a null is missing, and `events` that is not a list is said to be so."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "kinds.jsonl").write_text(jsonl(
        {**trace("bi-num"), "trace_id": 4711},
        {**trace("bi-bool"), "trace_id": True},
        {**trace("bi-null-src"), "source": None},
        {**trace("bi-ev-str"), "events": "e1, e2"},
        {**trace("bi-ev-null"), "events": None},
        {**trace("bi-quoted"), "trace_id": "bi-\"q\"", "task": 12.5},
    ))
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert sorted(result.traces) == ["4711", 'bi-"q"']
    assert result.rejects == {"kinds.jsonl": [
        (2, "field 'trace_id' must be a string"), (3, "missing required field 'source'"),
        (4, "field 'events' must be a list"), (5, "missing required field 'events'")]}


def test_an_event_id_or_type_of_unicode_spaces_is_empty(tmp_path):
    # The adapter only looks closely at events whose id or type could trim to nothing; these must all be looked at.
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "blank.jsonl").write_text(jsonl(
        trace("bi-nbsp-id", events=[{"id": "\u00a0", "type": "user_message"}]),
        trace("bi-ideo-type", events=[{"id": "e1", "type": "user_message"}, {"id": "e2", "type": "\u3000 "}]),
        trace("bi-spaced-ok", events=[{"id": " e1", "type": "\u00a0user_message"}, {"id": "é2", "type": "final"}]),
    ))
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.traces == ["bi-spaced-ok"]
    assert result.rejects == {"blank.jsonl": [(1, "event 1: missing required field 'id'"),
                                              (2, "event 2: missing required field 'type'")]}

def test_a_null_event_is_not_an_object(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "null-event.jsonl").write_text(jsonl(
        trace("bi-ev-null", events=[{"id": "e1", "type": "user_message"}, None])))
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.rejects == {"null-event.jsonl": [(1, "event 2 is not an object")]}


def test_duplicate_event_ids_in_a_trace(tmp_path):
    def events(*ids: str) -> list[dict]:
        return [{"id": i, "type": "assistant_message", "content": f"step {n}"} for n, i in enumerate(ids, 1)]

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "event-ids.jsonl").write_text(jsonl(
        trace("bi-dup-ev-1", events=events("e1", "e2", "e3", "e4", "e2")),
        trace("bi-dup-ev-2", events=events("e1", "e1", "e2", "e2")),
        trace("bi-dup-ev-ok", events=events("e1", "e2")),  # event ids repeat across traces, not within one
    ))
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.traces == ["bi-dup-ev-ok"]
    assert result.rejects == {"event-ids.jsonl": [(1, "event 5: duplicate event id (the same as event 2)"),
                                                  (2, "event 2: duplicate event id (the same as event 1)")]}
    assert result.accounts == {"event-ids.jsonl": (3, 1, 0, 2)}


def _big_trace(megabytes: int) -> dict:
    """A trace of ~`megabytes` MB on one line: 100 KB assistant messages."""
    rng = random.Random(megabytes)
    words = ["inbox", "sender", "archive", "label", "thread", "reply", "filter", "folder"]
    chunk = " ".join(rng.choice(words) for _ in range(16_000))[:100_000]
    events = [{"id": f"e{i}", "type": "assistant_message", "content": f"{i} {chunk}"} for i in range(megabytes * 10)]
    return trace("bi-big", events=events)


def _check_big_trace_loads(tmp_path: Path, megabytes: int) -> None:
    big = json.dumps(_big_trace(megabytes))
    assert len(big) > megabytes * 1_000_000
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "big.jsonl").write_text(jsonl(trace("bi-small-1")) + big + "\n" + jsonl(trace("bi-small-2")))
    # Read with the shipped default settings: a real run would use them.
    run_batch(discover([str(tmp_path / "in")]), Settings(memory_limit="2GB"), str(tmp_path / "batch"))
    files = pl.read_parquet(tmp_path / "batch" / "files.parquet")
    assert files.select("records", "loaded", "quarantined", "rejected", "unaccounted").row(0) == (3, 3, 0, 0, 0)
    events = pl.read_parquet(tmp_path / "batch" / "events.parquet").filter(pl.col("trace_id") == "bi-big")
    assert events.height == megabytes * 10
    assert events["content"].str.len_chars().sum() == sum(len(e["content"]) for e in _big_trace(megabytes)["events"])


def test_fields_with_no_column_are_kept_in_extra(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "extra.jsonl").write_text(jsonl(
        trace("bi-extra", events=[{"id": "e1", "type": "tool_call", "content": "search", "call_id": "c-7", "attempt": 2},
                                  {"id": "e2", "type": "assistant_message", "content": "found it"}],
              agent_version="1.4"),
        trace("bi-plain", events=[{"id": "e1", "type": "user_message", "content": "hi"}]),
    ))
    con = stage([tmp_path / "in"])
    traces = {r["trace_id"]: r["extra"] for r in rows(con, "SELECT trace_id, extra FROM traces")}
    assert json.loads(traces["bi-extra"]) == {"agent_version": "1.4"} and traces["bi-plain"] is None
    events = rows(con, "SELECT trace_id, seq, tool_name, extra FROM events ORDER BY trace_id, seq")
    assert [(e["trace_id"], e["seq"], e["tool_name"], e["extra"] and json.loads(e["extra"])) for e in events] == [
        ("bi-extra", 1, "search", {"call_id": "c-7", "attempt": 2}),
        ("bi-extra", 2, None, None),
        ("bi-plain", 1, None, None),
    ]


def test_a_15_mb_trace_line_loads(tmp_path):
    _check_big_trace_loads(tmp_path, 15)


def test_a_trace_line_bigger_than_duckdbs_json_object_limit_loads(tmp_path):
    # 16,777,216 bytes is read_json's default maximum_object_size; lessonweaver does not use read_json.
    _check_big_trace_loads(tmp_path, 20)


def test_a_batch_out_of_its_memory_share_is_staged_again_with_the_whole_limit(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "big.jsonl").write_text(json.dumps(_big_trace(40)) + "\n" + jsonl(trace("bi-small-1")))
    files = discover([str(tmp_path / "in")])
    # Two workers share 1 GB: 476 MiB each is too little for a 40 MB trace (25 MB fits), the whole 1 GB is enough.
    result = run_batch(files, Settings(memory_limit="1GB", workers=2), str(tmp_path / "batch"))
    assert result.alone
    accounts = pl.read_parquet(tmp_path / "batch" / "files.parquet")
    assert accounts.select("records", "loaded", "rejected").row(0) == (2, 2, 0)
    # With the whole limit already, there is nothing to fall back on: a clear error, no record text.
    with pytest.raises(BatchError, match="^staging failed for .*big.jsonl: Out of Memory Error") as failed:
        run_batch(files, Settings(memory_limit="476MiB", workers=1), str(tmp_path / "batch-1"))
    assert "inbox" not in str(failed.value)


def _long_text(rng: random.Random, chars: int) -> str:
    words = ["invoice", "ledger", "refund", "credit", "batch", "report", "vendor", "audit"]
    return " ".join(rng.choice(words) for _ in range(chars // 6))[:chars]


def _pieces_outputs(result, name: str) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(Path(folder) / f"{name}.parquet") for folder in result.folders])


def test_large_documents_are_batched_by_their_own_budget():
    """Whole-document files fill a batch only up to the document budget; lines files up to the batch size."""
    docs = [InputFile(path=f"/in/chat-{i}.json", size=4_000_000, mtime=0.0) for i in range(5)]
    lines = [InputFile(path=f"/in/runs-{i}.jsonl", size=4_000_000, mtime=0.0) for i in range(5)]
    assert [len(b) for b in batches(docs, 64_000_000, 10_000_000)] == [2, 2, 1]
    assert [len(b) for b in batches(lines, 64_000_000, 10_000_000)] == [5]
    assert [len(b) for b in batches(docs + lines, 64_000_000, 10_000_000)] == [2, 2, 6]
    assert [len(b) for b in batches(docs, 64_000_000)] == [5]
    assert document_batch_bytes(Settings(memory_limit="1280MB", workers=2, threads=2)) == 610 * 1024**2 // 64


def test_a_batch_that_does_not_fit_even_with_the_whole_limit_is_staged_in_pieces(tmp_path):
    """Eight 1 MB chat transcripts: every record a JSON function reads stays parsed until it is done with
    the vector, so at 400 MB they do not fit at once, though each half does."""
    rng = random.Random(8)
    (tmp_path / "in").mkdir()
    for i in range(8):
        messages = [{"role": "user", "content": f"Reconcile ledger {i}"}] + [
            {"role": "assistant" if j % 2 else "user", "content": f"{j} {_long_text(rng, 50_000)}"} for j in range(20)]
        (tmp_path / "in" / f"chat-{i}.json").write_text(json.dumps({"messages": messages}))
    result = run_batch(discover([str(tmp_path / "in")]), Settings(memory_limit="400MB", workers=1), str(tmp_path / "batch"))
    assert result.pieces >= 2 and len(result.folders) == result.pieces
    accounts = _pieces_outputs(result, "files")
    assert accounts.height == 8 and accounts.select(pl.sum("records", "loaded", "rejected", "unaccounted")).row(0) == (8, 8, 0, 0)
    assert _pieces_outputs(result, "traces")["trace_id"].n_unique() == 8


@pytest.mark.slow
def test_a_file_of_one_trace_per_line_that_does_not_fit_is_cut_at_a_line_end(tmp_path):
    rng = random.Random(10)
    (tmp_path / "in").mkdir()
    runs = [trace(f"bi-long-{i}", events=[{"id": f"e{j}", "type": "assistant_message", "content": _long_text(rng, 500_000)}
                                         for j in range(20)]) for i in range(4)]
    (tmp_path / "in" / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in runs))
    # 40 MB in 476 MiB: all four traces at once do not fit, two at a time do
    result = run_batch(discover([str(tmp_path / "in")]), Settings(memory_limit="476MiB", workers=1), str(tmp_path / "batch"))
    assert result.pieces == 2
    records = _pieces_outputs(result, "trace_records").sort("line")
    assert records.select("trace_id", "line").rows() == [(f"bi-long-{i}", i + 1) for i in range(4)]
    assert _pieces_outputs(result, "files").select(pl.sum("records", "loaded")).row(0) == (4, 4)


def test_a_csv_file_named_json(tmp_path):
    result = examine_fixture("csv-named.json", tmp_path)
    assert result.traces == []
    assert rows(result.con, "SELECT count(*) AS n FROM file_formats")[0]["n"] == 0


def test_a_json_object_of_no_known_format(tmp_path):
    result = examine_fixture("unknown-format.json", tmp_path)
    assert result.traces == []


def test_very_deep_nesting(tmp_path):
    deep_meta = ('{"trace_id": "bi-deep-meta", "source": "fixture-agent", "task": "Sort the inbox", "outcome": "success", '
                 '"events": [{"id": "e1", "type": "user_message", "content": "Sort my inbox."}], '
                 '"metadata": {"tree": ' + '{"k": ' * 5000 + '"leaf"' + '}' * 5000 + '}}')
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "deep.jsonl").write_text("\n".join([
        json.dumps(trace("bi-deep-1")),
        "[" * 100_000 + "]" * 100_000,
        deep_meta,
        "[" * 100_000,  # never closed
        '{"a": ' * 100_000 + "1" + "}" * 100_000,
        json.dumps(trace("bi-deep-2")),
    ]) + "\n")
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.traces == ["bi-deep-1", "bi-deep-2", "bi-deep-meta"]
    assert result.rejects == {"deep.jsonl": [(2, "not a JSON object (got an array)"),
                                             (4, "invalid JSON (nested too deeply)"),
                                             (5, "missing required field 'trace_id'")]}
    assert result.accounts == {"deep.jsonl": (6, 3, 0, 3)}
    (meta,) = rows(result.con, "SELECT metadata FROM traces WHERE trace_id = 'bi-deep-meta'")
    assert meta["metadata"].count('"k"') == 5000


@pytest.mark.slow
def test_a_folder_of_3000_small_files(prefect_server, tmp_path):
    folder = tmp_path / "in"
    for i in range(3000):
        sub = folder / f"part-{i % 30:02d}"
        sub.mkdir(parents=True, exist_ok=True)
        bad = "this is not JSON\n" if i % 100 == 0 else ""
        (sub / f"t{i:04d}.jsonl").write_text(jsonl(trace(f"bi-many-{i:04d}")) + bad)
    db = tmp_path / "lw.duckdb"
    run = nightly(paths=[str(folder)], db=str(db), out=str(tmp_path / "out"))
    assert (run.files_seen, run.files_read, run.files_skipped) == (3000, 3000, 0)
    assert (run.records, run.records_loaded, run.records_quarantined, run.records_rejected) == (3030, 3000, 0, 30)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("SELECT count(*), sum(records), count(*) FILTER (WHERE records <> loaded + quarantined + rejected) "
                           "FROM ingested_files").fetchone() == (3000, 3030, 0)
        assert con.execute("SELECT count(*), count(DISTINCT file) FROM rejects").fetchone() == (30, 30)
        assert con.execute("SELECT count(*) FROM traces").fetchone() == (3000,)
    finally:
        con.close()


def _readable(path: Path) -> bool:
    try:
        path.open("rb").close()
        return True
    except PermissionError:
        return False


def _as_a_plain_user() -> None:
    """In the child before it runs: give up root's power to read any file (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH, dropped from the bounding set, so the program run next has neither), as CI runs
    as root and a mode-000 file is readable to root. A user who is not root has neither to drop."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        libc.prctl(24, capability, 0, 0, 0)  # PR_CAPBSET_DROP; fails harmlessly without CAP_SETPCAP


def test_a_file_that_cannot_be_read(prefect_server, tmp_path):
    folder, db = tmp_path / "in", tmp_path / "lw.duckdb"
    folder.mkdir()
    (folder / "good.jsonl").write_text(jsonl(trace("bi-read-1")))
    locked = folder / "locked.jsonl"
    locked.write_text(jsonl(trace("bi-read-2")))
    locked.chmod(0)
    try:
        if not _readable(locked):  # staged in this process too, where it can be done without root
            result = examine([folder], tmp_path / "batch")
            assert result.traces == ["bi-read-1"] and result.rejects == {}
            assert result.notes == {"locked.jsonl": "could not read file (Permission denied)"}
            assert result.accounts == {"good.jsonl": (1, 1, 0, 0), "locked.jsonl": (0, 0, 0, 0)}
        # the real command, as a user who cannot read the file (root with its power to read anything dropped)
        done = subprocess.run([str(Path(sys.executable).parent / "lessonweaver"), "run", str(folder), "--db", str(db),
                               "--out", str(tmp_path / "out"), "--no-prefect", "-q"],
                              capture_output=True, text=True, preexec_fn=_as_a_plain_user, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "records:    1 = 1 loaded" in done.stdout
        assert f"{locked}: could not read file (Permission denied)" in done.stdout + done.stderr
        con = duckdb.connect(str(db), read_only=True)
        try:  # not recorded as ingested: the next run tries it again
            assert con.execute("SELECT path FROM ingested_files").fetchall() == [(str(folder / "good.jsonl"),)]
        finally:
            con.close()
    finally:
        locked.chmod(0o644)
    again = nightly(paths=[str(folder)], db=str(db), out=str(tmp_path / "out"))
    assert (again.files_read, again.files_skipped, again.traces_loaded) == (1, 1, 1)


def test_a_dangling_symlink_in_a_folder_is_noted_not_fatal(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "good.jsonl").write_text(jsonl(trace("bi-link-1")))
    (tmp_path / "in" / "gone.jsonl").symlink_to(tmp_path / "in" / "deleted.jsonl")
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.traces == ["bi-link-1"]
    assert result.notes == {"gone.jsonl": "could not read file (No such file or directory)"}


def test_the_same_trace_twice_in_one_file_is_one_trace(tmp_path):
    result = examine_fixture("duplicates.jsonl", tmp_path)
    assert result.traces == ["bi-dup-other", "bi-dup-same"]
    # Both identical records belong to the one trace (and count as loaded); its events are stored once.
    assert rows(result.con, "SELECT record FROM record_traces WHERE trace_id = 'bi-dup-same' ORDER BY record") == [
        {"record": 1}, {"record": 3}]
    assert rows(result.con, "SELECT count(*) AS n FROM events WHERE trace_id = 'bi-dup-same'") == [{"n": 2}]


def test_a_conflicting_copy_in_one_file_is_rejected_and_the_first_wins(tmp_path):
    result = examine_fixture("duplicates.jsonl", tmp_path)
    assert result.rejects["duplicates.jsonl"] == [
        (4, f"conflicting duplicate of trace_id bi-dup-other from {FIXTURES / 'duplicates.jsonl'}")]
    assert rows(result.con, "SELECT task FROM traces WHERE trace_id = 'bi-dup-other'") == [{"task": "Sort the inbox"}]
    assert rows(result.con, "SELECT record FROM record_traces WHERE trace_id = 'bi-dup-other'") == [{"record": 2}]


RESERIALISED = {
    "json-file-with-final-newline": lambda t: ("copy.json", json.dumps(t) + "\n"),
    "pretty-printed-json": lambda t: ("copy.json", json.dumps(t, indent=2)),
    "json-array": lambda t: ("copy.json", json.dumps([t])),
    "compact-jsonl": lambda t: ("copy.jsonl", json.dumps(t, separators=(",", ":")) + "\n"),
}


@pytest.mark.parametrize("layout", sorted(RESERIALISED))
def test_the_same_trace_written_another_way_is_one_trace(tmp_path, layout):
    same = trace("bi-same-content")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text(jsonl(same))
    name, text = RESERIALISED[layout](same)
    (tmp_path / "in" / name).write_text(text)
    result = examine([tmp_path / "in"], tmp_path / "batch")
    assert result.traces == ["bi-same-content"]
    assert result.rejects == {}
    assert result.accounts == {"a.jsonl": (1, 1, 0, 0), name: (1, 1, 0, 0)}


def test_the_cli_names_every_bad_file_with_its_rejects(prefect_server, tmp_path, capsys):
    db = tmp_path / "lw.duckdb"
    assert main(["run", str(FIXTURES), "--db", str(db), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out.splitlines()
    names = sorted(p.name for p in FIXTURES.iterdir())
    assert names == sorted(FIXTURE_ACCOUNTS)
    records, loaded, quarantined, rejected = (sum(a[i] for a in FIXTURE_ACCOUNTS.values()) for i in range(4))
    assert f"files:      {len(names)} found, {len(names)} read, 0 unchanged (skipped)" in printed
    assert f"records:    {records} = {loaded} loaded + {quarantined} quarantined + {rejected} rejected" in printed
    for name, rejects in FIXTURE_REJECTS.items():
        examples = "; ".join(f"line {line}: {reason}" for line, reason in expected_rejects(name)[:3])
        more = "; ..." if len(rejects) > 3 else ""
        assert f"  rejected {len(rejects):>5}  {FIXTURES / name}: {examples}{more}" in printed, name
    for name, note in FIXTURE_NOTES.items():
        assert f"  note: {FIXTURES / name}: {note}" in printed
    assert not any("more file with rejects" in line or "more files with rejects" in line for line in printed)
    # Reasons name positions and fields, never what the rejected line said.
    assert not any("prose, not JSON" in line or "bi-csv-1" in line for line in printed)
    con = duckdb.connect(str(db), read_only=True)
    try:
        accounts = con.execute("SELECT path, records, loaded, quarantined, rejected FROM ingested_files").fetchall()
    finally:
        con.close()
    assert {Path(p).name: tuple(a) for p, *a in accounts} == FIXTURE_ACCOUNTS


def test_files_that_are_not_trace_files_are_counted_and_named(tmp_path, capsys):
    """A .csv, .txt or .log in an input folder is not read, but the summary says so; hidden files stay quiet."""
    inputs = tmp_path / "in"
    (inputs / "logs").mkdir(parents=True)
    (inputs / "t.jsonl").write_text(json.dumps({"trace_id": "a", "source": "s", "task": "t", "events": []}) + "\n")
    for name in ("export.csv", "notes.txt", "logs/agent.log", ".DS_Store"):
        (inputs / name).write_text("x\n")
    assert main(["run", str(inputs), "--db", str(tmp_path / "lw.duckdb"), "--out", str(tmp_path / "out"),
                 "--no-prefect", "-q"]) == 0
    out = capsys.readouterr().out
    assert "files:      1 found, 1 read" in out
    line = next(x for x in out.splitlines() if "not read" in x)
    assert "3  files not named like trace files" in line
    assert all(str(inputs / n) in line for n in ("export.csv", "notes.txt", "logs/agent.log"))
    assert ".DS_Store" not in out
    con = duckdb.connect(str(tmp_path / "lw.duckdb"), read_only=True)
    assert con.execute("SELECT files_unread FROM runs").fetchall() == [(3,)]
    con.close()
