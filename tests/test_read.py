"""Reading raw files: layouts, compression, encodings, and a reason for every record that is not used."""

import gzip
import json

from conftest import rows, stage

GOOD = {"trace_id": "t1", "source": "s", "task": "do it", "outcome": "success",
        "events": [{"id": "e1", "type": "user_message", "content": "hi"}]}


def good(tid: str) -> dict:
    return {**GOOD, "trace_id": tid}


def fates(con) -> dict:
    """Per file: records, and the ids loaded."""
    return {
        "traces": sorted(r["trace_id"] for r in rows(con, "SELECT trace_id FROM traces")),
        "rejects": sorted((r["line"], r["record"], r["reason"]) for r in rows(con, "SELECT * FROM rejects")),
    }


def test_layouts_object_array_lines_and_gzip(tmp_path):
    (tmp_path / "one.json").write_text(json.dumps(good("a")))
    (tmp_path / "many.json").write_text(json.dumps([good("b"), good("c")]))
    (tmp_path / "lines.jsonl").write_text(json.dumps(good("d")) + "\n\n" + json.dumps(good("e")) + "\r\n")
    (tmp_path / "packed.jsonl.gz").write_bytes(gzip.compress((json.dumps(good("f")) + "\n").encode(), mtime=0))
    (tmp_path / "pretty.jsonl").write_text(json.dumps(good("g"), indent=2))
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(good("h")).encode())
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + (json.dumps(good("i")) + "\n").encode())
    # Characters a DuckDB file reader would take as a pattern, and a quote.
    (tmp_path / "odd [1]*{x}?'s.jsonl").write_text(json.dumps(good("j")) + "\n")
    (tmp_path / "it's.jsonl").write_text(json.dumps(good("k")) + "\n")
    (tmp_path / "notes.txt").write_text("not a trace file")  # passed over when walking a folder
    con = stage([tmp_path])
    assert fates(con) == {"traces": list("abcdefghijk"), "rejects": []}
    assert rows(con, "SELECT line FROM traces WHERE trace_id = 'i'") == [{"line": 1}]


def test_bad_records_are_rejected_with_line_and_reason(tmp_path):
    lines = [
        json.dumps(good("ok1")),
        '{"trace_id": "broken", "source": ',
        json.dumps({k: v for k, v in good("x").items() if k != "task"}),
        json.dumps({**good("y"), "events": {"id": "e1"}}),
        json.dumps([good("z")]),
        json.dumps({**good("w"), "events": [{"id": "e1"}]}),
        "42",
        json.dumps(good("ok2")),
    ]
    (tmp_path / "mixed.jsonl").write_text("\n".join(lines) + "\n")
    con = stage([tmp_path])
    result = fates(con)
    assert result["traces"] == ["ok1", "ok2"]
    assert result["rejects"] == [
        (2, 2, "invalid JSON (unexpected end of input)"),
        (3, 3, "missing required field 'task'"),
        (4, 4, "field 'events' must be a list"),
        (5, 5, "not a JSON object (got an array)"),
        (6, 6, "event 1: missing required field 'type'"),
        (7, 7, "not a JSON object (got a number)"),
    ]


def test_non_utf8_line_and_truncated_gzip(tmp_path):
    (tmp_path / "bytes.jsonl").write_bytes(
        json.dumps(good("u1")).encode() + b"\n" + b'{"trace_id": "\xff"}\n' + json.dumps(good("u2")).encode() + b"\n")
    payload = gzip.compress((json.dumps(good("g1")) + "\n" + json.dumps(good("g2")) + "\n").encode(), mtime=0)
    (tmp_path / "cut.jsonl.gz").write_bytes(payload[: len(payload) - 12])
    con = stage([tmp_path])
    result = fates(con)
    assert "u1" in result["traces"] and "u2" in result["traces"]
    assert (2, 2, "not valid UTF-8 (byte 0xff at column 15)") in result["rejects"]
    assert "g1" in result["traces"] and "g2" not in result["traces"]
    assert (2, 2, "invalid JSON (unexpected end of input)") in result["rejects"]
    notes = rows(con, "SELECT path, note FROM files WHERE note IS NOT NULL")
    assert [n["note"] for n in notes] == ["truncated gzip stream: kept the lines before the cut"]


def test_unknown_format_is_rejected_with_a_clear_reason(tmp_path):
    (tmp_path / "other.jsonl").write_text('{"name": "not a trace", "value": 3}\n'
                                          '{"jane.roe@example.com": 1, "b": 2, "a": {"deep": 1}}\n')
    con = stage([tmp_path])
    reasons = [r["reason"] for r in rows(con, "SELECT reason FROM rejects ORDER BY line")]
    assert reasons[0].startswith("not a trace in any known format (keys: name, value; known: ")
    assert "lessonweaver" in reasons[0]
    # keys that are not plain names are not quoted (and the address was redacted anyway)
    assert reasons[1].startswith("not a trace in any known format (keys: …, a, b; known: ")


def test_duplicate_trace_ids(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps(good("same")) + "\n" + json.dumps(good("diff")) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps(good("same")) + "\n" + json.dumps({**good("diff"), "task": "other"}) + "\n")
    con = stage([tmp_path])
    assert fates(con)["traces"] == ["diff", "same"]
    (reject,) = rows(con, "SELECT * FROM rejects")
    assert reject["reason"] == f"conflicting duplicate of trace_id diff from {tmp_path / 'a.jsonl'}"


def test_a_record_cut_inside_its_last_word_or_number_is_cut_short():
    """A line cut inside `false` or a number ends early; it is no misplaced value (a property test found it)."""
    from lessonweaver.read import json_error_reason

    for cut in ('{"a": fal', '{"a": -1.', '{"a": "tex', '{"a": 1', '{"a": '):
        assert json_error_reason(cut) == "invalid JSON (unexpected end of input)", cut
    assert json_error_reason('{"a": tru e}') == "invalid JSON (expecting value at column 7)"
    assert json_error_reason("not json at all") == "invalid JSON (expecting value at column 1)"
