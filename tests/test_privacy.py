"""Privacy beyond tags: planted secrets and PII in untagged traces, a false-positive corpus, the audit."""

import base64
import datetime as dt
import json
import hashlib
import re
import uuid
from pathlib import Path

import duckdb
import pytest

from conftest import leaks, rows, stage, write_traces
from flows.nightly import nightly
from lessonweaver.config import Settings
from lessonweaver.pipeline import run_local
from lessonweaver.serve import Lessons
from lessonweaver import patterns, privacy
from lessonweaver.cli import main
from lessonweaver.scrub import scrub

# Fake values of every kind the scan knows, each valid for its validator. Built from parts so that this
# file itself does not trip a repository secret scanner.
SECRETS = {
    "aws_access_key": "AKIA" + "Q3ZRT7WNB2KD5LMH",
    "aws_secret_key": "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYQ7MZ2KE9WY",
    "github_token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gitlab_token": "glpat-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm",
    "slack_token": "xoxb-" + "2048-4096-Ab3dEf6hIj9k",
    "openai_key": "sk-proj-" + "T3stK3yT3stK3yT3stK3yT3stK3yT3stK3yAbCd",
    "anthropic_key": "sk-ant-" + "api03-Qw3rTy9UiOp4AsDfGhJkL",
    "stripe_key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "google_api_key": "AIza" + "SyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer_token": "Bearer " + "mF_9.B5f-4.1JqM.tokenvalue000111",
    "private_key": "-----BEGIN RSA " + "PRIVATE KEY-----\\nMIIEowIBAAKCAQEA7b",
    "url_password": "postgres://admin:" + "s3cr3tP4ss@db.example.com/app",
    "password": "password=" + "Tr0ub4dor-horse",
}
PII = {
    "email": ("jane.roe@example.com", "<EMAIL>"),
    "phone": ("+44 20 7946 0958", "<PHONE>"),
    "card": ("4111 1111 1111 1111", "<CARD>"),
    "iban": ("DE89370400440532013000", "<IBAN>"),
    "ip_address": ("203.0.113.42", "<IP>"),
    "us_ssn": ("123-45-6789", "<NATIONAL_ID>"),
    "es_dni": ("12345678Z", "<NATIONAL_ID>"),
    "it_codice_fiscale": ("RSSMRA85T10A562S", "<NATIONAL_ID>"),
    "se_personnummer": ("811218-9876", "<NATIONAL_ID>"),
}
PLACES = ("content", "metadata", "tool_arguments")


def planted(tid: str, value: str, place: str) -> dict:
    """An untagged trace carrying `value` in one place, with a correction so it would make a lesson."""
    events = [{"id": "e1", "type": "user_message", "content": "Please fix the deploy."},
              {"id": "e2", "type": "tool_call", "content": "run_shell", "status": "success"},
              {"id": "e3", "type": "human_correction", "content": "Use the staging cluster first."}]
    meta = {}
    if place == "content":
        events[0]["content"] = f"Please fix the deploy, context: {value} thanks"
    elif place == "metadata":
        meta = {"note": f"seen with {value}"}
    else:
        events[1]["metadata"] = {"tool": "run_shell", "arguments": {"cmd": f"deploy --with '{value}'"}}
    return {"trace_id": tid, "source": "ops-agent", "task": "Fix the deploy", "events": events,
            "outcome": "corrected_by_human", "metadata": meta}


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    traces = []
    for i, (kind, value) in enumerate(SECRETS.items()):
        traces.append(planted(f"sec-{kind}", value, PLACES[i % 3]))
    for i, (kind, (value, _)) in enumerate(PII.items()):
        traces.append(planted(f"pii-{kind}", value, PLACES[i % 3]))
    return write_traces(tmp_path / "in", "planted.jsonl", traces).parent


MARKER = re.compile(r"\[SECRET:([a-z_]+)#[0-9a-f]{8}\]")


@pytest.mark.parametrize("mode", ["redact", "quarantine"])
def test_planted_secrets_are_redacted_or_quarantine_and_pii_is_redacted(corpus: Path, mode: str):
    con = stage([corpus], secrets=mode)
    reasons = {r["trace_id"]: r["reason"] for r in rows(con, "SELECT trace_id, reason FROM quarantine")}
    if mode == "quarantine":
        assert reasons == {f"sec-{kind}": f"secret:{kind}" for kind in SECRETS}
    else:
        assert reasons == {}
        kept = {r["trace_id"]: r for r in rows(
            con, "SELECT t.trace_id, any_value(t.redacted) AS redacted, concat_ws(' ', any_value(CAST(t.metadata AS VARCHAR)), "
                 "string_agg(concat_ws(' ', e.content, CAST(e.metadata AS VARCHAR)), ' ')) AS text "
                 "FROM traces t JOIN events e USING (trace_id) GROUP BY t.trace_id")}
        for kind, value in SECRETS.items():
            trace = kept[f"sec-{kind}"]
            assert trace["redacted"] == [kind] and MARKER.findall(trace["text"]) == [kind], kind
            assert patterns.core(kind, value.replace("\\n", "\n")) not in trace["text"], kind
    loaded = {r["trace_id"]: r["text"] for r in rows(
        con, "SELECT trace_id, string_agg(concat_ws(' ', content, metadata), ' ') AS text FROM events GROUP BY 1")}
    meta = {r["trace_id"]: r["m"] for r in rows(con, "SELECT trace_id, CAST(metadata AS VARCHAR) AS m FROM traces")}
    for kind, (value, placeholder) in PII.items():
        text = loaded[f"pii-{kind}"] + (meta[f"pii-{kind}"] or "")
        assert value not in text and placeholder in text, kind


def test_pii_quarantine_mode(corpus: Path):
    con = stage([corpus], pii="quarantine")
    reasons = {r["trace_id"]: r["reason"] for r in rows(con, "SELECT trace_id, reason FROM quarantine")}
    assert {t: r for t, r in reasons.items() if t.startswith("pii-")} == {f"pii-{k}": f"pii:{k}" for k in PII}


@pytest.mark.parametrize("mode", ["redact", "quarantine"])
def test_no_planted_value_reaches_any_byte_and_the_audit_passes(prefect_server, corpus: Path, tmp_path: Path, capsys,
                                                                mode: str):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    run = nightly(paths=[str(corpus)], db=str(db), out=str(out), secrets=mode)
    if mode == "quarantine":
        assert run.traces_quarantined == len(SECRETS) and run.traces_loaded == len(PII) and run.traces_redacted == 0
    else:
        assert run.traces_quarantined == 0 and run.traces_loaded == len(PII) + len(SECRETS)
        assert run.traces_redacted == len(SECRETS) and run.redaction_kinds == {k: 1 for k in sorted(SECRETS)}
    values = [v.replace("\\n", "\n") for v in SECRETS.values()] + [v for v, _ in PII.values()]
    # every file the run left (database, WAL, event Parquet, reports), Parquet read row by row
    assert leaks(db, out, "Use the staging cluster first.") != []  # the scan sees what was stored
    for value in values:
        assert leaks(db, out, value) == [], f"a planted {value[:4]}… value is stored"
    # the redacted traces were stored with their placeholders, and their lesson is in the report
    stored = duckdb.connect(str(db), read_only=True)
    said = {r[0] for r in stored.execute("SELECT content FROM events WHERE trace_id LIKE 'pii-%' AND event_id = 'e1'").fetchall()}
    stored.close()
    assert any("<EMAIL>" in c for c in said) and any("<IBAN>" in c for c in said)
    assert "Use the staging cluster first." in (out / "lessons.md").read_text()
    assert main(["audit", "--db", str(db), "--out", str(out)]) == 0
    assert "clean" in capsys.readouterr().out


def test_the_audit_fails_on_a_leaky_file_and_masks_what_it_found(tmp_path: Path, capsys):
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    out.mkdir()
    from lessonweaver import store

    store.connect(str(db)).close()
    token = SECRETS["github_token"]
    (out / "leaky.md").write_text(f"# notes\nthe token is {token} and mail jane.roe@example.com\n")
    assert main(["audit", "--db", str(db), "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "secret:github_token" in printed and "pii:email" in printed and "leaky.md" in printed
    assert token not in printed and "jane.roe@example.com" not in printed


def test_the_audit_finds_quarantined_ids_in_report_files(tmp_path: Path):
    from lessonweaver import audit, store

    con = store.connect(str(tmp_path / "lw.duckdb"))
    con.execute("INSERT INTO quarantine (trace_id, file, reason) SELECT 'held-' || i, 'f.jsonl', 'secret:jwt' "
                "FROM range(1000, 21000) t(i)")
    con.execute("INSERT INTO quarantine (trace_id, file, reason) VALUES ('tiny', 'f.jsonl', 'tag:sensitivity')")
    # a session file named after its session: the report names the file, which is not the trace's content
    con.execute("INSERT INTO quarantine (trace_id, file, reason) VALUES ('5d0c9e4a-7b1f', 'projects/5d0c9e4a-7b1f.jsonl', 'secret:jwt')")
    clean, leaky = tmp_path / "clean.md", tmp_path / "leaky.md"
    clean.write_text("lessons from held-99 and tiny-looking traces; kept out: projects/5d0c9e4a-7b1f.jsonl\n")
    leaky.write_text("see (held-20999) and held-1234.\n")
    found = [(Path(f.place).name, f.kind, f.sample) for f in audit.audit_files(con, [str(clean), str(leaky)])]
    # held-20999 holds held-2099 too: ids are searched as substrings, whatever surrounds them
    assert found == [("leaky.md", "quarantined trace id", "'hel…' (9 chars)"),
                     ("leaky.md", "quarantined trace id", "'hel…' (9 chars)"),
                     ("leaky.md", "quarantined trace id", "'hel…' (10 chars)")]


def store_events(con, *events: tuple) -> None:
    """Write (trace_id, seq, event_id, type, content, status) events to the event files, as a load would."""
    from lessonweaver import eventstore

    names = ("trace_id", "seq", "event_id", "type", "content", "status")
    params = {f"{n}{i}": v for i, event in enumerate(events) for n, v in zip(names, event)}
    rows = " UNION ALL ".join(
        f"SELECT $trace_id{i} AS trace_id, $seq{i}::INTEGER AS seq, $event_id{i} AS event_id, $type{i} AS type, "
        f"NULL AS raw_type, $content{i} AS content, $status{i}::VARCHAR AS status, NULL AS success, "
        "NULL AS tool_name, NULL AS ts, NULL AS parent_id, NULL AS metadata, NULL AS extra" for i in range(len(events)))
    eventstore.write(con, rows, "test", params)


def test_the_audit_finds_pii_and_quarantined_ids_in_the_database(tmp_path: Path):
    from lessonweaver import audit, eventstore, store

    con = store.connect(str(tmp_path / "lw.duckdb"))
    con.execute("INSERT INTO quarantine (trace_id, file, reason) VALUES ('secret-trace-1', 'f.jsonl', 'secret:jwt')")
    store_events(con, ("secret-trace-1", 1, "e1", "user_message", "hello", None),
                 ("t2", 1, "e1", "user_message", "call 4111 1111 1111 1111", None))
    found = {(f.place, f.kind) for f in audit.audit_database(con)}
    assert found == {("events.trace_id", "quarantined trace id with content"), ("events.content", "pii:card")}
    # Columns are searched together (joined by a newline, which no pattern spans), then one by one:
    # digits split between two columns are no card.
    eventstore.remove(con, "(SELECT 't2' AS trace_id)", runs="SELECT 'test'")  # events with no trace row
    store_events(con, ("t3", 1, "e1", "user_message", "card 4111 1111", "1111 1111"))
    assert {(f.place, f.kind) for f in audit.audit_database(con)} == {
        ("events.trace_id", "quarantined trace id with content")}


FALSE_POSITIVES = [
    f"request {uuid.UUID(int=7)} and {uuid.uuid5(uuid.NAMESPACE_DNS, 'lessonweaver.example')}",
    f"commit {hashlib.sha1(b'x').hexdigest()} on branch main, tree {hashlib.sha256(b'y').hexdigest()}",
    "data:image/png;base64," + base64.b64encode(bytes(range(256)) * 4).decode(),
    "The password reset flow sends a link; the bearer of the link can set a new password.",
    "Token budget: 4096 tokens; the api_key field is optional; set secret: true to hide it.",
    "Use scikit-learn (sk-learn) 1.5.2 with numpy 2.1.0; build 2026-11-28T02:00:00Z took 12.5 s.",
    "Order #10023455 shipped; tracking 1Z999AA10123456784; invoice INV-2026-000123.",
    "password: ******** and password=${DB_PASSWORD} and api_key: <redacted>",
    "Call the function authorize(user) then POST /v1/authorization/check.",
    "Build 1750000000123 finished at 1750000000.456; ticket 555-1234.",
]
# Coding traces are full of code that looks like secrets: none of these is one (the URLs' user parts at
# example.com are redacted as e-mail addresses, not quarantined).
CODE_NOT_SECRETS = [
    # code where a secret would go: names, calls, attributes, format slots
    "headers['Proxy-Authorization'] = _basic_auth_str(username, password)",
    "session = requests.Session(); session: CaseInsensitiveDict({'Accept': '*/*'})",
    "conn = connect(password=settings.DATABASES.password, api_key=os.environ.get(KEY))",
    "token = f\"{prefix}{suffix}\"; secret = '{password}'.format(password=user_password)",
    "Edge cases we considered: username=None, password=non-None: both reject.",
    # documentation placeholders and obvious test fakes
    "'http://foo:bar@example.com', 'http://user:pass@example.com', 'http://user:pass@word'",
    "DATABASES = {'default': {'user': 'test_user', 'password': 'test_password'}}",
    "backend.authenticate(None, username='jo', password=\"test123\"); PASSWORD=changeme",
]


def test_false_positive_corpus_yields_no_secret(tmp_path: Path):
    traces = [{"trace_id": f"fp-{i}", "source": "s", "task": "t", "outcome": "success",
               "events": [{"id": "e1", "type": "assistant_message", "content": text}],
               "metadata": {"note": text}} for i, text in enumerate(FALSE_POSITIVES)]
    con = stage([write_traces(tmp_path, "fp.jsonl", traces)])
    assert rows(con, "SELECT * FROM quarantine") == []
    findings = rows(con, "SELECT DISTINCT kind FROM record_findings")
    assert findings == [], findings
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == len(FALSE_POSITIVES)



# Card numbers of every issuer prefix, written as people write them, and digit runs no card starts with.
CARDS = ["4111 1111 1111 1111", "5555-5555-5555-4444", "3782 822463 10005", "6011111111111117",
         "2223 0031 2200 3222", "3530 1113 3330 0000", "3622 720627 1667"]
NOT_CARDS = ['"startTimeUnixNano":"1795831204000000000"', '"ts": 1733400000123', '"spanId":"0000000004000002"',
             "build 1234567890123456 done", '"timeUnixNano": "1795831208250000000"']


def test_cards_of_every_issuer_are_found_and_digit_runs_no_card_starts_with_are_not_candidates():
    """Every OpenTelemetry span carries 19-digit nanosecond timestamps: read as card candidates, they sent
    every span through the per-pattern scan and the validator (40x the typed parse of the records)."""
    con = duckdb.connect()
    texts = [(i, f"paid with {c} yesterday") for i, c in enumerate(CARDS)]
    texts += [(100 + i, t) for i, t in enumerate(NOT_CARDS)]
    con.execute("CREATE TABLE t (id INTEGER, text VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", texts)
    privacy.find(con, "SELECT id, text FROM t", ("id",))
    assert rows(con, "SELECT id, kind FROM scan_hits ORDER BY id") == [{"id": i, "kind": "card"} for i in range(len(CARDS))]
    assert rows(con, "SELECT id FROM scan_texts WHERE id >= 100") == []

def test_a_guard_passes_over_no_text_its_pattern_matches():
    """A pattern is searched in context only in the texts that hold its guard, fixed text RE2 finds far
    faster (patterns.guard_for). Every planted value of this suite, as written, inside JSON and inside
    JSON written in a JSON string, gives the same matches as a search of every text with every pattern."""
    values = list(SECRETS.values()) + [v for v, _ in PII.values()] + list(CODING_SECRETS.values())
    values.append("Authorization: Basic " + "ZGVwbG95OkdoN3gyS3E5TG00Vg==")
    texts = [t for v in values for t in (f"note: {v} end", json.dumps({"k": f"x {v}"}), json.dumps(json.dumps({"v": v})))]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id INTEGER, text VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(texts)))
    privacy.find(con, "SELECT id, text FROM t", ("id",))
    found = con.execute("SELECT id, kind, hit FROM scan_hits ORDER BY ALL").fetchall()
    everywhere = sorted((i, p.kind, hit) for p in patterns.PATTERNS
                        for i, hit in con.execute("SELECT id, unnest(regexp_extract_all(text, ?, 2)) FROM t",
                                                  [patterns.regex_for(p)]).fetchall()
                        if patterns.valid(p.kind, hit))
    assert found == everywhere
    guarded = {p.kind for p in patterns.PATTERNS if patterns.guard_for(p)}
    assert guarded - {kind for _, kind, _ in found} == set()  # each guard was put to the test


# Real-looking credentials where a coding agent meets them: a diff it wrote, a file it read, a command's
# output, a config it printed. Each must quarantine its trace, code around it or not.
CODING_SECRETS = {
    "diff": "diff --git a/.env b/.env\n+++ b/.env\n+AWS_SECRET_ACCESS_KEY=" + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vLkP2",
    "file": "$ cat config/settings.py\nDATABASE_PASSWORD = '" + "Zq8!vR2#pLm9xT" + "'\nDEBUG = False",
    "shell": "$ gh auth token\n" + "ghp_" + "9fK2mQ7xR4tL8vB1nC6zW3yH5jD0sA2pE7uG",
    "json": '{"service": "billing", "password": "' + "N7#kq2Vx!pR9" + '", "retries": 3}',
    "key": "$ cat ~/.ssh/id_ed25519\n-----BEGIN OPENSSH " + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
    "url": "git remote -v\norigin https://deploy:" + "Gh7x2Kq9Lm4V" + "@git.internal.corp/app.git (push)",
}
# the credential in each, as the redaction must take it out
CODING_VALUES = {"diff": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8vLkP2", "file": "Zq8!vR2#pLm9xT",
                 "shell": "9fK2mQ7xR4tL8vB1nC6zW3yH5jD0sA2pE7uG", "json": "N7#kq2Vx!pR9",
                 "key": "b3BlbnNzaC1rZXktdjEAAAAA", "url": "Gh7x2Kq9Lm4V"}


@pytest.mark.parametrize("mode", ["redact", "quarantine"])
@pytest.mark.parametrize("where", sorted(CODING_SECRETS))
def test_real_credentials_in_coding_traces_are_redacted_or_quarantine(tmp_path: Path, where: str, mode: str):
    trace = {"trace_id": f"code-{where}", "source": "coder", "task": "Fix the build", "outcome": "success",
             "events": [{"id": "e1", "type": "tool_call", "content": "bash", "status": "success"},
                        {"id": "e2", "type": "tool_result", "content": CODING_SECRETS[where], "status": "success"}]}
    con = stage([write_traces(tmp_path, "code.jsonl", [trace])], secrets=mode)
    value = CODING_VALUES[where]
    found = rows(con, "SELECT trace_id, event_id, evidence, lesson, tool FROM detections WHERE detector = 'secret_exposed'")
    assert len(found) == 1 and found[0]["tool"] == "bash"
    assert "`bash` printed a credential (" in found[0]["evidence"]
    if mode == "quarantine":
        assert [r["trace_id"] for r in rows(con, "SELECT trace_id FROM quarantine")] == [f"code-{where}"]
        assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == 0
        # the agent's own call printed it: a finding under the trace's sealed key, naming the kind, never the value
        assert found[0]["trace_id"].startswith("sealed-") and found[0]["event_id"] is None
        assert not any(value in (v or "") or f"code-{where}" in (v or "") for v in found[0].values())
    else:
        # kept, the value replaced in place; the finding names the trace and the event, never the value
        assert rows(con, "SELECT trace_id FROM quarantine") == []
        said = con.execute("SELECT content FROM events WHERE event_id = 'e2'").fetchone()[0]
        assert MARKER.search(said) and CODING_VALUES[where] not in said
        assert (found[0]["trace_id"], found[0]["event_id"]) == (f"code-{where}", "e2")
        assert not any(value in (v or "") for v in found[0].values())


def test_redaction_keeps_escapes_whole_in_json_written_inside_json(tmp_path: Path):
    """A tool result holding JSON text (an agent's transcript in a transcript) has escaped escapes:
    `\\n@dataclasses.dataclass` there and a plain line break before the same letters elsewhere. Redacting
    the look-alike must not cut a `\n` in half (the record would be lost as unredactable)."""
    inner = json.dumps({"source": "import dataclasses\n@dataclasses.dataclass\nclass Duck: pass"})
    trace = {"trace_id": "nested-1", "source": "coder", "task": "Add a class", "outcome": "success",
             "events": [{"id": "e1", "type": "tool_result", "content": inner, "status": "success"},
                        {"id": "e2", "type": "assistant_message",
                         "content": "Added it:\n@dataclasses.dataclass\nWrite to jane.roe@example.com."}]}
    con = stage([write_traces(tmp_path, "nested.jsonl", [trace])])
    assert rows(con, "SELECT * FROM quarantine") == []
    said = con.execute("SELECT content FROM events WHERE event_id = 'e2'").fetchone()[0]
    assert "<EMAIL>" in said and "jane.roe" not in said and "\n@dataclasses.dataclass" in said


def test_an_address_named_many_times_is_redacted_everywhere(tmp_path: Path):
    """Each distinct match is replaced once per record (a replacement reads the whole text), wherever it
    appears: in one message, in several, and beside a longer match that holds it."""
    said = ("Mail jane.roe@example.com, then jane.roe@example.com again; cc mary.jane.roe@example.com "
            "from 203.0.113.42 and 203.0.113.42.")
    trace = {"trace_id": "many-1", "source": "support", "task": "Reply", "outcome": "success",
             "events": [{"id": "e1", "type": "user_message", "content": said},
                        {"id": "e2", "type": "assistant_message", "content": said + " Done: jane.roe@example.com"}]}
    con = stage([write_traces(tmp_path, "many.jsonl", [trace])])
    texts = [r[0] for r in con.execute("SELECT content FROM events ORDER BY seq").fetchall()]
    assert texts[0] == ("Mail <EMAIL>, then <EMAIL> again; cc <EMAIL> from <IP> and <IP>.")
    assert texts[1] == texts[0] + " Done: <EMAIL>"


def test_code_and_placeholders_under_secret_keys_are_no_secret(tmp_path: Path):
    traces = [{"trace_id": f"code-{i}", "source": "coder", "task": "t", "outcome": "success",
               "events": [{"id": "e1", "type": "tool_result", "content": text, "status": "success"}]}
              for i, text in enumerate(CODE_NOT_SECRETS)]
    con = stage([write_traces(tmp_path, "code.jsonl", traces)])
    assert rows(con, "SELECT * FROM quarantine") == []
    assert rows(con, "SELECT DISTINCT kind FROM record_findings WHERE category = 'secret'") == []
    assert con.execute("SELECT count(*) FROM traces").fetchone()[0] == len(CODE_NOT_SECRETS)


def test_html_templates_escape_trace_content(tmp_path: Path):
    from lessonweaver import render, store

    con = store.connect(str(tmp_path / "lw.duckdb"))
    con.execute("INSERT INTO lessons (lesson_id, detector, title, evidence, occurrences, trace_count) "
                "VALUES ('L1', 'd', 't', '<script>alert(1)</script>', 1, 1)")
    mine = tmp_path / "templates"
    mine.mkdir()
    (mine / "page.html.j2").write_text("<ul>{% for l in lessons %}<li>{{ l.evidence }}</li>{% endfor %}</ul>")
    from lessonweaver.summary import RunSummary

    run = RunSummary(run_id="r", started_at=dt.datetime(2026, 11, 29, 2)).as_dict()
    render.render(con, run, str(tmp_path / "out"), str(mine))
    html = (tmp_path / "out" / "page.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    con.close()
    duckdb.connect(str(tmp_path / "lw.duckdb"), read_only=True).close()


def test_tenants_become_salted_hashes_and_reports_can_be_per_tenant(prefect_server, tmp_path: Path, monkeypatch):
    from lessonweaver.privacy import tenant_hash

    def traced(tid: str, tenant: str, correction: str) -> dict:
        return {"trace_id": tid, "source": "bot", "task": "Answer", "outcome": "corrected_by_human",
                "metadata": {"tenant_id": tenant},
                "events": [{"id": "e1", "type": "user_message", "content": f"hello from {tenant}"},
                           {"id": "e2", "type": "human_correction", "content": correction}]}

    folder = write_traces(tmp_path / "in", "t.jsonl", [
        traced("acme-t1", "acme-corp-7731", "Quote the contract number to Northwind."),
        traced("globex-t1", "globex-4410", "Quote the contract number to Umbrella."),
    ]).parent
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    run = nightly(paths=[str(folder)], db=str(db), out=str(out))
    assert run.status == "completed"
    con = duckdb.connect(str(db), read_only=True)
    salt = con.execute("SELECT value FROM settings WHERE key = 'tenant_salt'").fetchone()[0]
    tenants = dict(con.execute("SELECT trace_id, tenant FROM traces").fetchall())
    lessons = con.execute("SELECT tenant, tenants, occurrences FROM lessons").fetchall()
    per_tenant = con.execute("SELECT tenant, occurrences, example_trace_ids, evidence FROM lesson_tenants "
                             "ORDER BY tenant").fetchall()
    con.close()
    assert tenants == {"acme-t1": tenant_hash(salt, "acme-corp-7731"), "globex-t1": tenant_hash(salt, "globex-4410")}
    # the same cause in two tenants is one lesson; each tenant sees it with its own findings only
    assert lessons == [(None, 2, 2)]
    assert per_tenant == sorted([(tenants["acme-t1"], 1, ["acme-t1"], "Quote the contract number to Northwind."),
                                 (tenants["globex-t1"], 1, ["globex-t1"], "Quote the contract number to Umbrella.")])
    for f in [*out.iterdir(), *tmp_path.glob("lw.duckdb*")]:
        assert b"acme-corp-7731" not in f.read_bytes() and b"globex-4410" not in f.read_bytes(), f.name
    only = tmp_path / "acme"
    nightly(paths=[str(folder)], db=str(db), out=str(only), tenant="acme-corp-7731")
    jsonl = [json.loads(line) for line in (only / "lessons.jsonl").read_text().splitlines()]
    assert [(j["tenant"], j["occurrences"], j["example_trace_ids"]) for j in jsonl] == [(tenants["acme-t1"], 1, ["acme-t1"])]
    for f in only.iterdir():  # nothing of the other tenant reaches this tenant's reports
        assert b"Umbrella" not in f.read_bytes() and b"globex-t1" not in f.read_bytes(), f.name
    assert b"Northwind" in (only / "lessons.md").read_bytes()


def test_tags_and_tenant_keys_spelt_with_escapes_in_event_metadata_still_count(tmp_path: Path):
    """The screen looks at an event's metadata text before its keys; a key written with JSON escapes
    (\\u0073ensitivity) is the same key and must not slip past that look."""
    lines = [
        # a reserved tag on one event, its key escaped
        '{"trace_id": "esc-tag", "source": "bot", "task": "t", "outcome": "ok", "events": ['
        '{"id": "e1", "type": "user_message", "content": "hi"},'
        '{"id": "e2", "type": "assistant_message", "content": "yo", "metadata": {"\\u0073ensitivity": "high"}}]}',
        # a tenant key on an event, escaped, next to the trace's tenant
        '{"trace_id": "esc-tenant", "source": "bot", "task": "t", "outcome": "ok", "metadata": {"tenant_id": "acme-77"},'
        ' "events": [{"id": "e1", "type": "user_message", "content": "hi", "metadata": {"\\u0074enant_id": "acme-77"}},'
        ' {"id": "e2", "type": "assistant_message", "content": "plain", "metadata": {"tool": "x"}}]}',
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n")
    con = stage([path])
    assert con.execute("SELECT trace_id, reason FROM quarantine").fetchall() == [("esc-tag", "tag:sensitivity")]
    metas = [r[0] for r in con.execute("SELECT CAST(metadata AS VARCHAR) FROM events WHERE trace_id = 'esc-tenant' ORDER BY seq").fetchall()]
    assert "acme-77" not in metas[0] and "tenant-" in metas[0]
    assert metas[1] == '{"tool":"x"}'


def _printed_by_the_agent(key: str) -> list[dict]:
    """Two sessions in which `gh auth token` printed `key`: the agent's act, not the person's."""
    return [{"trace_id": f"leaky-{n}", "source": "coder", "task": "Debug the deploy", "outcome": "success",
             "metadata": {"cwd": "/home/dev/deployer"},
             "events": [{"id": "e1", "type": "user_message", "content": "Why does the deploy fail?"},
                        {"id": "e2", "type": "tool_call", "content": "Bash", "status": "success",
                         "metadata": {"arguments": {"command": "gh auth token"}}},
                        {"id": "e3", "type": "tool_result", "content": key, "status": "success"},
                        {"id": "e4", "type": "final_answer", "content": "The token is valid; the runner lacks it."}]}
            for n in (1, 2)]


def test_a_secret_the_agent_printed_is_a_lesson_on_its_kept_trace(prefect_server, tmp_path: Path, capsys):
    """Secrets redacted (the default): the trace is kept with a marker in place of the key; the finding names
    the trace and the event, never the value; the audit finds nothing; an export carries no marker's hash;
    forgetting the trace takes its finding too."""
    key = CODING_SECRETS["shell"].split("\n")[1]
    traces = _printed_by_the_agent(key)
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    run = nightly(paths=[str(write_traces(tmp_path / "in", "s.jsonl", traces))], db=str(db), out=str(out))
    assert run.traces_quarantined == 0 and run.traces_redacted == 2 and run.status == "completed"
    lessons = [json.loads(line) for line in (out / "lessons.jsonl").read_text().splitlines()]
    exposed = [x for x in lessons if x["detector"] == "secret_exposed"]
    assert len(exposed) == 1 and exposed[0]["trace_count"] == 2
    assert "`gh auth` printed a credential (github token)" in exposed[0]["evidence"]
    assert sorted(exposed[0]["example_trace_ids"]) == ["leaky-1", "leaky-2"]
    assert leaks(db, out, key) == [] and leaks(db, out, key[4:]) == []
    assert main(["audit", "--db", str(db), "--out", str(out)]) == 0
    stored = duckdb.connect(str(db), read_only=True)
    try:
        marker = stored.execute("SELECT content FROM events WHERE event_id = 'e3'").fetchall()
        found = stored.execute("SELECT trace_id, event_id FROM detections WHERE detector = 'secret_exposed' ORDER BY 1").fetchall()
    finally:
        stored.close()
    assert len({m for (m,) in marker}) == 1 and MARKER.fullmatch(marker[0][0])  # one key, one marker
    assert found == [("leaky-1", "e3"), ("leaky-2", "e3")]
    # what leaves the database (reports, exports: scrubbed text) keeps a marker's kind, never its hash
    assert not [p for p in out.iterdir() if marker[0][0][-9:-1].encode() in p.read_bytes()]
    assert scrub(f"paste {marker[0][0]} here") == "paste [SECRET:github_token] here"
    # nor what the MCP server answers: the lesson shown whole, and found by the program it is about
    served = Lessons(str(db), pending=True)
    answers = [served.audited(served.show(exposed[0]["lesson_id"])), served.audited(served.search(words="gh auth"))]
    assert exposed[0]["lesson_id"] in answers[1]
    assert not [a for a in answers if marker[0][0][-9:-1] in a or key[4:] in a]
    assert main(["forget", "--db", str(db), "--trace", "leaky-1"]) == 0
    stored = duckdb.connect(str(db), read_only=True)
    try:
        left = stored.execute("SELECT trace_id FROM detections WHERE detector = 'secret_exposed'").fetchall()
    finally:
        stored.close()
    assert left == [("leaky-2",)]


def test_a_secret_the_agent_printed_is_a_lesson_while_its_trace_stays_quarantined(prefect_server, tmp_path: Path, capsys):
    """Secrets quarantined: the finding is stored under a sealed key: the lesson, the report and the audit
    never meet the trace's id or the value; forgetting the trace takes its finding too."""
    key = CODING_SECRETS["shell"].split("\n")[1]
    traces = _printed_by_the_agent(key)
    db, out = tmp_path / "lw.duckdb", tmp_path / "reports"
    run = nightly(paths=[str(write_traces(tmp_path / "in", "s.jsonl", traces))], db=str(db), out=str(out),
                  secrets="quarantine")
    assert run.traces_quarantined == 2 and run.status == "completed"
    lessons = [json.loads(line) for line in (out / "lessons.jsonl").read_text().splitlines()]
    exposed = [x for x in lessons if x["detector"] == "secret_exposed"]
    assert len(exposed) == 1 and exposed[0]["trace_count"] == 2 and exposed[0]["projects"] == ["deployer"]
    assert "`gh auth` printed a credential (github token)" in exposed[0]["evidence"]
    assert all(t.startswith("sealed-") for t in exposed[0]["example_trace_ids"])
    assert not [p for p in leaks(db, out, "leaky-1") if p.startswith(str(out))]  # the id: only in the quarantine table
    assert leaks(db, out, key) == []
    assert main(["audit", "--db", str(db), "--out", str(out)]) == 0
    assert main(["forget", "--db", str(db), "--trace", "leaky-1"]) == 0
    stored = duckdb.connect(str(db), read_only=True)
    try:
        left = stored.execute("SELECT count(*) FROM detections WHERE detector = 'secret_exposed'").fetchone()[0]
        sealed = stored.execute("SELECT trace_id FROM sealed_traces").fetchall()
    finally:
        stored.close()
    assert left == 1 and sealed == [("leaky-2",)]


def test_a_redacted_trace_hashes_and_weaves_the_same_in_any_database(tmp_path: Path):
    """A marker's hash is salted per database, so a redacted trace's stored text differs from one database
    to the next; its content hash (which also orders findings when a lesson picks the one that speaks for
    it) must not: the same files make the same lesson wherever they are run."""
    folder = tmp_path / "in"
    for n, note in ((1, f"context: {SECRETS['github_token']}"), (2, "context: none")):
        trace = planted(f"same-{n}", "", "content")
        trace["events"][0]["content"] = f"Please fix the deploy, {note}"
        write_traces(folder, f"t{n}.jsonl", [trace])
    seen = []
    for db in (tmp_path / "a.duckdb", tmp_path / "b.duckdb"):
        run_local(Settings(paths=(str(folder),), db=str(db), out=str(tmp_path / db.stem), workers=1))
        con = duckdb.connect(str(db), read_only=True)
        try:
            seen.append((con.execute("SELECT trace_id, redacted, content_hash FROM traces ORDER BY 1").fetchall(),
                         con.execute("SELECT detector, trace_count, evidence, proposed_lesson FROM lessons ORDER BY ALL").fetchall()))
        finally:
            con.close()
    assert seen[0][0][0][1] == ["github_token"]
    assert seen[0] == seen[1]
