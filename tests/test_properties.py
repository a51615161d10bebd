"""Properties over generated collections: every record lands in exactly one place, a second run changes
nothing, and nothing of a quarantined or rejected record, nor a planted token, is stored.

A collection is 1-4 files mixing lessonweaver traces (ids from a small pool, so duplicates and conflicts
happen; events of canonical and unknown types), corrupt lines and sensitive traces (tagged, or carrying
a planted GitHub token). Every trace body and every corrupt line carries a unique marker word, so the
tests can tell where each record's content went. `expect` models what must become of each record.
"""

import gzip
import json
import os
import string
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest
from conftest import rows, stage
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from flows.nightly import nightly
from lessonweaver.patterns import placeholder

TRACE_IDS = ("trace-a", "trace-b", "trace-c", "trace-d")
CANONICAL = ("user_message", "assistant_message", "tool_call", "tool_result", "error", "retry",
             "human_correction", "evaluation_result", "final_answer", "workflow_step")
UNKNOWN = ("thinking", "plan_update", "Heartbeat", "x-custom")
WORDS = ("inbox", "sender", "label", "archive", "reply", "thread", "filter", "folder", "check", "first")
SENSITIVE_TAGS = ({"contains_pii": True}, {"contains_pii": "yes"}, {"contains_secret": 1},
                  {"sensitivity": "high"}, {"data_classification": "restricted"})
SAFE_TAGS = ({}, {"contains_pii": False}, {"contains_secret": "no"}, {"sensitivity": "low"},
             {"data_classification": "internal"})
REQUIRED = ("trace_id", "source", "task", "outcome", "events")
SUFFIXES = (".jsonl", ".json", ".jsonl.gz")

# Once another module has started the session's Prefect server, its background threads use `random`
# while Hypothesis draws an example, in any test here; that is not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")


@dataclass(frozen=True)
class Body:
    """A trace, before its marker is planted."""
    tid: str
    outcome: str
    events: tuple[tuple[str, str], ...]  # (type, words)
    privacy: str  # clean | tag | event_tag | secret
    tags: tuple[tuple[str, object], ...]
    token: str  # a fake GitHub token, planted when privacy is 'secret'
    token_place: str  # content | metadata

    @property
    def tagged(self) -> bool:
        """Tagged sensitive by its producer: quarantined, whatever it holds. A planted token alone is
        redacted in place (the default), and the trace loaded."""
        return self.privacy in ("tag", "event_tag")


@dataclass(frozen=True)
class Line:
    kind: str  # body | truncated | garbage | number | array | string | invalid | blank
    body: int = -1  # for 'body': which of the collection's bodies (the same index twice is an identical copy)
    own: Body | None = None  # for 'truncated' and 'invalid': a body of the line's own
    cut: float = 0.5  # for 'truncated': where the line is cut
    missing: str = ""  # for 'invalid': the required field left out


@dataclass(frozen=True)
class Collection:
    bodies: tuple[Body, ...]
    files: tuple[tuple[str, tuple[Line, ...]], ...]  # (suffix, lines)


def marker(n: int) -> str:
    """A unique word of letters only (digits could look like personal data to the scan)."""
    return "mk" + "".join(chr(97 + (n // 26 ** i) % 26) for i in range(5)) + "q"


def render(body: Body, mark: str) -> dict:
    tags = dict(body.tags)
    events = [{"id": f"e{i}", "type": t, "content": f"{words} {mark}", "status": "failed" if t == "error" else "ok"}
              for i, (t, words) in enumerate(body.events, 1)]
    metadata = {"note": f"seen with {mark}"}
    if body.privacy == "event_tag" and events:
        events[-1]["metadata"] = tags
    else:
        metadata.update(tags)
    if body.privacy == "secret":
        if body.token_place == "content" and events:
            events[0]["content"] += f" token {body.token} end"
        else:
            metadata["credential"] = f"token {body.token} end"
    return {"trace_id": body.tid, "source": "prop-agent", "task": f"Sort the inbox {mark}",
            "outcome": body.outcome, "metadata": metadata, "events": events}


words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)
# a token that could be real: the scan passes over what only stands in for one (a run of one character, a
# stop word such as "test"), and so does a scanner like gitleaks
tokens = st.text(string.ascii_letters + string.digits, min_size=36, max_size=36).map(lambda s: "ghp_" + s).filter(
    lambda t: not placeholder(t))


@st.composite
def bodies(draw) -> Body:
    privacy = draw(st.sampled_from(("clean",) * 5 + ("tag", "event_tag", "secret")))
    tags = draw(st.sampled_from(SENSITIVE_TAGS if privacy in ("tag", "event_tag") else SAFE_TAGS))
    return Body(
        tid=draw(st.sampled_from(TRACE_IDS)),
        outcome=draw(st.sampled_from(("success", "failure", "corrected_by_human"))),
        events=tuple(draw(st.lists(st.tuples(st.sampled_from(CANONICAL + UNKNOWN), words), max_size=4))),
        privacy=privacy,
        tags=tuple(tags.items()),
        token=draw(tokens),
        token_place=draw(st.sampled_from(("content", "metadata"))),
    )


@st.composite
def collections(draw) -> Collection:
    pool = tuple(draw(st.lists(bodies(), min_size=1, max_size=6)))
    # Traces are drawn more often than anything else, so that copies and conflicts are common.
    kinds = st.sampled_from(("body",) * 6 + ("truncated", "invalid", "garbage", "number", "array", "string", "blank"))
    line = kinds.flatmap(lambda kind: {
        "body": st.integers(0, len(pool) - 1).map(lambda i: Line("body", body=i)),
        "truncated": st.builds(lambda b, c: Line("truncated", own=b, cut=c), bodies(), st.floats(0.02, 0.98)),
        "invalid": st.builds(lambda b, f: Line("invalid", own=b, missing=f), bodies(), st.sampled_from(REQUIRED)),
    }.get(kind, st.just(Line(kind))))
    files = draw(st.lists(st.tuples(st.sampled_from(SUFFIXES), st.lists(line, max_size=7).map(tuple)),
                          min_size=1, max_size=4))
    return Collection(pool, tuple(files))


@dataclass
class Expected:
    accounts: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)  # name -> records, loaded, quar., rej.
    rejects: dict[str, list[tuple[int | None, str]]] = field(default_factory=dict)  # name -> (line, reason)
    stored: set[str] = field(default_factory=set)  # markers that must reach the database
    hidden: set[str] = field(default_factory=set)  # markers and tokens that must not


def write(collection: Collection, folder: Path) -> tuple[list[Path], Expected]:
    """Write the collection's files into `folder` and model what must become of every record.

    Files are read in path order and lines in order; the first valid copy of a trace_id wins, a later
    identical copy joins it, a later different copy is a conflicting duplicate. A trace is quarantined
    when its winning copy is tagged sensitive; one carrying a token is loaded with the token redacted.
    """
    expected = Expected()
    winners: dict[str, tuple[int, str]] = {}  # trace_id -> (winning body, its file)
    paths = []
    serial = len(collection.bodies)
    for n, (suffix, lines) in enumerate(collection.files):
        name = f"f{n}{suffix}"
        texts, fates, rejects = [], [], []
        records = [line for line in lines if line.kind != "blank"]
        # A file whose only record is an array is one JSON document: its elements are the records.
        single_array = len(records) == 1 and records[0].kind == "array"
        # A .json file holding one trace is read as one document (line 1, whatever blank lines surround
        # it); it is written bare, so that the model's line numbers stay those of JSON Lines.
        as_document = suffix == ".json" and len(records) == 1
        for line in lines:
            serial += 1
            mark = marker(serial)
            number = len(texts) + 1
            reason = None
            if line.kind == "blank":
                if not as_document:
                    texts.append("   ")
                continue
            if line.kind == "body":
                body = collection.bodies[line.body]
                mark = marker(line.body)
                texts.append(json.dumps(render(body, mark)))
                winner, winner_file = winners.setdefault(body.tid, (line.body, name))
                if winner != line.body:
                    reason = f"conflicting duplicate of trace_id {body.tid} from {folder / winner_file}"
                else:
                    fates.append("quarantined" if body.tagged else "loaded")
                    (expected.hidden if body.tagged else expected.stored).add(mark)
                    if body.privacy != "clean":
                        expected.hidden.add(body.token)
            elif line.kind == "truncated":
                text = json.dumps(render(line.own, mark))
                texts.append(text[: max(1, min(len(text) - 1, int(len(text) * line.cut)))])
                reason = "invalid JSON (unexpected end of input)"
                expected.hidden.add(line.own.token)
            elif line.kind == "invalid":
                doc = render(line.own, mark)
                del doc[line.missing]
                texts.append(json.dumps(doc))
                reason = f"missing required field '{line.missing}'"
                expected.hidden.add(line.own.token)
            elif line.kind == "garbage":
                texts.append(f"not json {mark} at all")
                reason = "invalid JSON (expecting value at column 1)"
            elif line.kind == "number":
                texts.append("42")
                reason = "not a JSON object (got a number)"
            elif line.kind == "string":
                texts.append(json.dumps(f"a string {mark}"))
                reason = "not a JSON object (got a string)"
            elif line.kind == "array":
                texts.append(json.dumps([f"an array {mark}", 7]))
                reason = "not a JSON object (got an array)"
            if reason is None:
                continue
            expected.hidden.add(mark)
            if single_array:
                rejects += [(None, "not a JSON object (got a string)"), (None, "not a JSON object (got a number)")]
                fates += ["rejected", "rejected"]
            else:
                rejects.append((number, reason))
                fates.append("rejected")
        data = ("\n".join(texts) + ("" if as_document or not texts else "\n")).encode()
        path = folder / name
        path.write_bytes(gzip.compress(data, mtime=0) if suffix.endswith(".gz") else data)
        paths.append(path)
        expected.accounts[name] = (len(fates), fates.count("loaded"), fates.count("quarantined"), fates.count("rejected"))
        if rejects:
            expected.rejects[name] = rejects
    return paths, expected


FAST = settings(max_examples=25, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
# No shrinking for flow runs: each step would be three flow runs; a failure shows the example as drawn.
FLOW = settings(FAST, max_examples=10, phases=[Phase.explicit, Phase.generate])


@FAST
@given(collections())
def test_staging_puts_every_record_in_exactly_one_place(collection: Collection):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _, expected = write(collection, folder)
        con = stage([folder])
        accounts = rows(con, "SELECT path, records, loaded, quarantined, rejected, unaccounted FROM file_accounts")
        assert all(a["unaccounted"] == 0 for a in accounts), accounts
        assert all(a["records"] == a["loaded"] + a["quarantined"] + a["rejected"] for a in accounts), accounts
        assert {Path(a["path"]).name: (a["records"], a["loaded"], a["quarantined"], a["rejected"])
                for a in accounts} == expected.accounts
        rejects: dict[str, list] = {}
        for r in rows(con, "SELECT f.path, j.line, j.reason FROM rejects j JOIN files f USING (file_id) "
                           "ORDER BY f.path, j.record"):
            rejects.setdefault(Path(r["path"]).name, []).append((r["line"], r["reason"]))
        assert rejects == expected.rejects
        # What survives staging (and is all a batch writes out) holds nothing of a record that did not load.
        survivors = " ".join(str(v) for table in ("traces", "events", "detections")
                             for r in rows(con, f"SELECT * FROM {table}") for v in r.values())
        assert [m for m in expected.hidden if m in survivors] == []
        assert [m for m in expected.stored if m not in survivors] == []


TABLES = ("traces", "events", "detections", "lessons", "quarantine", "rejects")


def snapshot(db: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
    finally:
        con.close()


def database_text(db: Path) -> str:
    """Every text value in every table of the database, as one string."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        columns = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main' "
            "AND (data_type IN ('VARCHAR', 'JSON') OR data_type LIKE '%[]')").fetchall()
        return " ".join(str(v) for t, c in columns for (v,) in con.execute(f'SELECT "{c}" FROM "{t}"').fetchall())
    finally:
        con.close()


@pytest.mark.slow
@FLOW
@given(collections())
def test_flow_accounts_for_everything_reruns_change_nothing_and_nothing_hidden_is_stored(prefect_server, collection):
    with tempfile.TemporaryDirectory() as tmp:
        folder, db, out = Path(tmp) / "in", Path(tmp) / "db" / "lw.duckdb", Path(tmp) / "out"
        folder.mkdir()
        paths, expected = write(collection, folder)
        first = nightly(paths=[str(folder)], db=str(db), out=str(out))
        assert first.status == "completed"
        totals = [sum(a[i] for a in expected.accounts.values()) for i in range(4)]
        assert [first.records, first.records_loaded, first.records_quarantined, first.records_rejected] == totals

        con = duckdb.connect(str(db), read_only=True)
        try:
            accounts = con.execute("SELECT path, records, loaded, quarantined, rejected FROM ingested_files").fetchall()
        finally:
            con.close()
        assert all(r == lo + q + rej for _, r, lo, q, rej in accounts)
        assert {Path(p).name: tuple(a) for p, *a in accounts} == expected.accounts

        before = snapshot(db)
        second = nightly(paths=[str(folder)], db=str(db), out=str(out))
        assert (second.files_skipped, second.records) == (len(paths), 0)
        assert snapshot(db) == before
        # Touched files (a copy that did not keep times) are read again and recognised by their content.
        for path in paths:
            os.utime(path, (1, 1))
        third = nightly(paths=[str(folder)], db=str(db), out=str(out))
        assert (third.files_read, third.records) == (0, 0)
        assert snapshot(db) == before

        outputs = [p for p in [*db.parent.iterdir(), *out.iterdir()] if p.is_file() and not p.name.endswith(".lock")]
        assert db in outputs and out / "lessons.md" in outputs
        leaks = [(p.name, m) for p in outputs for m in expected.hidden if m.encode() in p.read_bytes()]
        assert leaks == []
        text = database_text(db)
        assert [m for m in expected.hidden if m in text] == []
        assert [m for m in expected.stored if m not in text] == []  # the markers do reach it when they should
