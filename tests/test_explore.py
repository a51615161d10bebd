"""Ad-hoc exploration: the views, the shipped example queries, `lessonweaver sql` and `lessonweaver.open()`,
on a database built by the real nightly flow over the demo data (two nights), and never in a run's way."""

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

import lessonweaver
from conftest import REPO, cli, copy_db, query_db, write_traces
from lessonweaver import examples, explore, store
from lessonweaver.store import StoreError

EXAMPLES = sorted((REPO / "sql" / "examples").glob("*.sql"))
VIEWS = ("lesson_trend", "detections_by_source", "trace_timeline", "detector_trend")
# Night one leaves out two files; night two reads them (every other file is unchanged and skipped), so
# one lesson is seen on both nights and the trends have two nights.
LATER = {"data/workflow-agent/runs.json", "data/support-bot/legacy-export.jsonl"}


@pytest.fixture(scope="module")
def demo(prefect_server, tmp_path_factory) -> Path:
    from flows.nightly import nightly

    folder = tmp_path_factory.mktemp("explore")
    db, out = folder / "lessonweaver.duckdb", folder / "reports"
    first = sorted(str(p) for p in (REPO / "data").rglob("*.json*")
                   if p.relative_to(REPO).as_posix() not in LATER)
    nightly(paths=first, db=str(db), out=str(out), night="2026-11-28")
    nightly(paths=[str(REPO / "data")], db=str(db), out=str(out), night="2026-11-29")
    return db


def header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"--\s*(\w+):\s*(.*)", line)
        if not m:
            break
        fields[m[1]] = m[2].strip()
    return fields


def sql_cli(capsys, *argv: str) -> tuple[int, str, str]:
    return cli(capsys, "sql", *argv)


# --- views -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("view", VIEWS)
def test_each_view_has_rows_on_the_demo_data(demo: Path, view: str):
    assert query_db(demo, f"SELECT count(*) FROM {view}")[0][0] > 0


def test_trend_views_follow_sightings_over_nights(demo: Path):
    assert query_db(demo, "SELECT list(DISTINCT night ORDER BY night)::VARCHAR[] FROM detector_trend") == [
        (["2026-11-28", "2026-11-29"],)]
    # Per night, the detector trend adds up to what the runs of that night detected.
    assert query_db(demo, "SELECT night, sum(occurrences) FROM detector_trend GROUP BY night ORDER BY night") == \
        query_db(demo, "SELECT night, sum(detections) FROM runs GROUP BY night ORDER BY night")
    twice = query_db(demo, "SELECT lesson_id FROM lesson_trend GROUP BY lesson_id HAVING count(*) = 2 ORDER BY 1")
    assert twice and twice == query_db(demo, """SELECT lesson_id FROM detections JOIN runs USING (run_id)
                                             GROUP BY lesson_id HAVING count(DISTINCT night) = 2 ORDER BY 1""")
    # One row per lesson and night, and a lesson's nights add up to its occurrences.
    assert query_db(demo, "SELECT count(*) FROM (SELECT DISTINCT lesson_id, night FROM lesson_trend)") == \
        query_db(demo, "SELECT count(*) FROM lesson_trend")
    assert query_db(demo, """SELECT count(*) FROM lessons l JOIN (SELECT lesson_id, sum(occurrences) AS n
                          FROM lesson_trend GROUP BY lesson_id) t USING (lesson_id) WHERE t.n <> l.occurrences""") == [(0,)]


def test_detections_by_source_adds_up(demo: Path):
    assert query_db(demo, "SELECT sum(detections), count(DISTINCT detector) FROM detections_by_source") == \
        query_db(demo, "SELECT count(*), count(DISTINCT detector) FROM detections")


def test_trace_timeline_marks_flagged_events_and_traces(demo: Path):
    assert query_db(demo, "SELECT count(*) FROM trace_timeline") == query_db(demo, "SELECT count(*) FROM events")
    # Every event-level detection shows on its event, and no event shows a detector that did not flag it.
    assert query_db(demo, """SELECT count(*) FROM detections d JOIN trace_timeline t USING (trace_id, seq)
                          WHERE NOT list_contains(t.detectors, d.detector)""") == [(0,)]
    assert query_db(demo, """SELECT count(*) FROM trace_timeline t, unnest(t.detectors) AS u(detector)
                          WHERE NOT EXISTS (SELECT 1 FROM detections d WHERE d.trace_id = t.trace_id
                                            AND d.seq = t.seq AND d.detector = u.detector)""") == [(0,)]
    # Trace-level findings show on every event of their trace.
    assert query_db(demo, """SELECT count(*) FROM detections d JOIN trace_timeline t USING (trace_id)
                          WHERE d.seq IS NULL AND NOT list_contains(t.trace_detectors, d.detector)""") == [(0,)]
    assert query_db(demo, "SELECT max(length(content)), count(*) FILTER (WHERE content LIKE '%' || chr(10) || '%') "
                       "FROM trace_timeline") == [(100, 0)]


def test_views_are_created_again_on_every_read_write_open(tmp_path: Path):
    db = str(tmp_path / "lw.duckdb")
    store.connect(db).close()
    con = store.connect(db)  # a second open replaces them without error
    con.execute("DROP VIEW lesson_trend")
    con.close()
    store.connect(db).close()
    assert query_db(Path(db), "SELECT count(*) FROM duckdb_views() WHERE NOT internal AND view_name IN "
                           "('lesson_trend', 'detections_by_source', 'trace_timeline', 'detector_trend')") == [(4,)]


# --- example queries -----------------------------------------------------------------------------------

def test_there_are_five_to_eight_examples():
    assert 5 <= len(EXAMPLES) <= 8


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_and_returns_the_columns_it_promises(demo: Path, path: Path):
    fields = header(path)
    assert fields.get("title") and fields.get("description"), f"{path.name}: header needs title and description"
    promised = [c.strip() for c in fields["columns"].split(",")]
    text, declared = examples.read(path.stem)
    # Every parameter it declares, it uses, and the other way round: its defaults make it run as it is.
    assert {p.name for p in declared} == {p for s in duckdb.extract_statements(text) for p in s.named_parameters}
    (result,) = explore.run(str(demo), text, "json", examples.bind(explore.split(text), declared, []))
    assert result.columns == promised
    assert len(json.loads(result.text)) > 0, f"{path.name} returns no rows on the demo data"


def test_examples_are_listed_with_what_each_answers_and_takes(capsys):
    code, out, _ = sql_cli(capsys, "--examples")
    assert code == 0
    lines = out.splitlines()
    for path in EXAMPLES:
        fields = header(path)
        assert f"{path.stem:<24}{fields['title']}: {fields['description']}" in lines
    assert "                          --param limit=20  how many lessons" in lines
    assert lines[-1] == (f"({len(EXAMPLES)} examples in sql/examples/; "
                         "run one with: lessonweaver sql --file NAME [--param NAME=VALUE ...])")
    code, _, err = sql_cli(capsys, "--examples", "--file", "top_lessons")
    assert code == 2 and err == "lessonweaver: error: --examples lists the shipped queries: give it alone\n"


def test_an_example_takes_named_parameters_instead_of_edits(demo: Path, capsys):
    code, out, _ = sql_cli(capsys, "--file", "top_lessons", "--param", "limit=3", "--db", str(demo), "--format", "json")
    top = query_db(demo, "SELECT lesson_id FROM lessons WHERE review <> 'rejected' ORDER BY priority DESC, lesson_id")
    assert code == 0 and [r["lesson_id"] for r in json.loads(out)] == [r[0] for r in top[:3]]
    code, out, _ = sql_cli(capsys, "--file", "top_lessons", "--db", str(demo), "--format", "json")
    assert len(json.loads(out)) == min(20, len(top))  # the declared default
    twice = query_db(demo, "SELECT lesson_id FROM lesson_trend GROUP BY 1 HAVING count(*) = 2 ORDER BY 1")[0][0]
    code, out, _ = sql_cli(capsys, "--file", "lesson_trend", "--param", f"lesson_id={twice}", "--db", str(demo),
                           "--format", "json")
    assert code == 0 and [(r["lesson_id"], r["night"]) for r in json.loads(out)] == [
        (twice, "2026-11-28"), (twice, "2026-11-29")]
    first_28 = query_db(demo, "SELECT lesson_id FROM sightings SEMI JOIN lessons USING (lesson_id) "  # findings below the
                              "GROUP BY 1 HAVING min(night) = DATE '2026-11-28' ORDER BY 1")  # floor are no lesson
    code, out, _ = sql_cli(capsys, "--file", "new_and_regressed", "--param", "night=2026-11-28", "--db", str(demo),
                           "--format", "json")
    assert code == 0 and first_28 and sorted((r["status"], r["lesson_id"]) for r in json.loads(out)) == [
        ("new", lid) for (lid,) in first_28]  # as of that night, though every lesson was seen again on the 29th
    code, out, _ = sql_cli(capsys, "SELECT $n::INTEGER * 2 AS doubled", "--param", "n=21", "--db", str(demo))
    assert (code, out) == (0, "doubled\n-------\n     42\n(1 row)\n")


@pytest.mark.parametrize("argv, message", [
    (["--file", "top_lessons", "--param", "nope=1"], "the query has no parameter $nope (its parameters: $limit, $status)"),
    (["--file", "top_lessons", "--param", "limit"], "--param takes NAME=VALUE, not 'limit'"),
    (["SELECT $x AS x"], "the query needs a value for $x: --param x=VALUE"),
    (["--param", "x=1"], "--param goes with a QUERY or --file"),
])
def test_parameters_given_wrong_are_one_line(demo: Path, capsys, argv: list[str], message: str):
    code, out, err = sql_cli(capsys, *argv, "--db", str(demo))
    assert (code, out, err) == (2, "", f"lessonweaver: error: {message}\n")


def test_cli_runs_a_shipped_example_by_path_and_by_name(demo: Path, capsys):
    code, by_path, _ = sql_cli(capsys, "--file", str(REPO / "sql/examples/top_lessons.sql"), "--db", str(demo))
    assert code == 0
    code, by_name, _ = sql_cli(capsys, "--file", "top_lessons", "--db", str(demo))
    assert code == 0 and by_name == by_path
    top = query_db(demo, "SELECT lesson_id FROM lessons ORDER BY priority DESC, lesson_id LIMIT 1")[0][0]
    assert by_path.splitlines()[2].startswith(top)


# --- lessonweaver sql ------------------------------------------------------------------------------------

Q = "SELECT lesson_id, occurrences, example_trace_ids, title FROM lessons ORDER BY priority DESC, lesson_id LIMIT 5"


def test_table_output_is_aligned_with_a_row_count(demo: Path, capsys):
    code, out, err = sql_cli(capsys, Q, "--db", str(demo))
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["lesson_id", "occurrences", "example_trace_ids", "title"]
    assert re.fullmatch(r"-+( +-+){3}", lines[1])
    assert lines[-1] == "(5 rows)" and len(lines) == 2 + 5 + 1
    starts = [m.start() for m in re.finditer(r"-+", lines[1])]
    expected = query_db(demo, Q)
    for line, (lesson_id, occurrences, example_ids, title) in zip(lines[2:-1], expected):
        assert line[starts[0]:].startswith(lesson_id)
        assert line[starts[1]:starts[2]].strip() == str(occurrences)
        assert line[starts[1]:starts[2]].endswith(f"{occurrences}  ")  # numbers right-aligned
        assert line[starts[2]:].startswith("[" + ", ".join(example_ids) + "]")
        assert line[starts[3]:] == title


def test_table_cells_are_cut_to_max_width(demo: Path, capsys):
    sql = "SELECT content FROM events ORDER BY length(content) DESC LIMIT 1"
    _, cut, _ = sql_cli(capsys, sql, "--db", str(demo), "--max-width", "30")
    cell = cut.splitlines()[2]
    assert 25 <= len(cell) <= 30 and cell.endswith("…")
    _, whole, _ = sql_cli(capsys, sql, "--db", str(demo), "--max-width", "0")
    longest = query_db(demo, sql)[0][0]
    assert whole.splitlines()[2] == longest.replace("\n", "\\n")


def test_csv_output(demo: Path, capsys):
    code, out, _ = sql_cli(capsys, Q, "--db", str(demo), "--format", "csv")
    assert code == 0
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["lesson_id", "occurrences", "example_trace_ids", "title"]
    assert rows[1:] == [[i, str(n), "[" + ", ".join(e) + "]", t] for i, n, e, t in query_db(demo, Q)]


def test_json_output_is_one_array_with_typed_values(demo: Path, capsys):
    code, out, _ = sql_cli(capsys, Q, "--db", str(demo), "--format", "json")
    assert code == 0 and out.count("\n") == 1
    assert json.loads(out) == [{"lesson_id": i, "occurrences": n, "example_trace_ids": e, "title": t}
                               for i, n, e, t in query_db(demo, Q)]
    _, empty, _ = sql_cli(capsys, "SELECT * FROM lessons WHERE false", "--db", str(demo), "--format", "json")
    assert json.loads(empty) == []
    _, meta, _ = sql_cli(capsys, "SELECT metadata FROM traces WHERE metadata IS NOT NULL LIMIT 1",
                         "--db", str(demo), "--format", "json")
    assert isinstance(json.loads(meta)[0]["metadata"], dict)  # JSON columns stay JSON


def test_several_statements_print_each_result(demo: Path, capsys):
    code, out, _ = sql_cli(capsys, "SELECT 1 AS a; SET threads = 1; SELECT 2 AS b;", "--db", str(demo))
    assert code == 0
    assert out == "a\n-\n1\n(1 row)\n\nb\n-\n2\n(1 row)\n"
    # Statements of one query share a connection: a temporary table lives until the query ends.
    code, out, _ = sql_cli(capsys, "CREATE TEMP TABLE t AS SELECT 7 AS x; SELECT x FROM t", "--db", str(demo))
    assert (code, out) == (0, "x\n-\n7\n(1 row)\n")
    # A failing statement: what came before it is shown, then the error; nothing after it runs.
    code, out, err = sql_cli(capsys, "SELECT 1 AS a; DELETE FROM lessons; SELECT 3 AS c", "--db", str(demo))
    assert (code, out) == (1, "a\n-\n1\n(1 row)\n") and "read-only" in err


def test_the_prompt_reads_statements_from_stdin(demo: Path):
    statements = ("SELECT count(*) AS n\n  FROM lessons;\n"
                  "SELECT no_such_column FROM lessons;\n"
                  ".tables\n"
                  "SELECT 'after the error' AS still;\n"
                  ".quit\n"
                  "SELECT 'never' AS reached;\n")
    # Where the database is, with the default --db, as a user would type it.
    done = subprocess.run([sys.executable, "-m", "lessonweaver.cli", "sql"],
                          input=statements, capture_output=True, text=True, timeout=120, cwd=demo.parent)
    assert done.returncode == 1, done.stderr  # one statement failed
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("lessonweaver: error: Binder Error:")
    assert "Traceback" not in done.stderr
    assert "(1 row)" in done.stdout and "after the error" in done.stdout and "never" not in done.stdout
    assert "lesson_trend\n" in done.stdout and "trace_timeline\n" in done.stdout  # .tables lists the views


def test_the_prompt_runs_an_unterminated_statement_at_end_of_input(demo: Path):
    done = subprocess.run([sys.executable, "-m", "lessonweaver.cli", "sql", "--db", str(demo), "--format", "csv"],
                          input="SELECT count(*) AS n FROM traces", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"n\n{query_db(demo, 'SELECT count(*) FROM traces')[0][0]}\n"


def test_writes_are_refused_and_change_nothing(demo: Path, capsys):
    before = query_db(demo, "SELECT (SELECT count(*) FROM lessons), (SELECT count(*) FROM events)")
    for statement in ("DELETE FROM lessons", "DROP TABLE events", "UPDATE lessons SET priority = 0",
                      "CREATE TABLE mine AS SELECT 1"):
        code, out, err = sql_cli(capsys, statement, "--db", str(demo))
        kind = statement.split()[0]
        assert (code, out) == (1, "")
        assert err == f"lessonweaver: error: the database is open read-only: {kind} statements are refused\n"
    done = subprocess.run([sys.executable, "-m", "lessonweaver.cli", "sql", "--db", str(demo)],
                          input="DELETE FROM lessons;\n", capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "read-only" in done.stderr
    with pytest.raises(duckdb.Error, match="read-only"):
        lessonweaver.open(demo).sql("DELETE FROM traces")
    assert query_db(demo, "SELECT (SELECT count(*) FROM lessons), (SELECT count(*) FROM events)") == before
    assert before[0][0] > 0


def test_errors_are_one_line(demo: Path, tmp_path: Path, capsys):
    code, out, err = sql_cli(capsys, "SELECT 1", "--db", str(tmp_path / "missing.duckdb"))
    assert (code, out) == (2, "")
    assert err == f"lessonweaver: error: no database at {tmp_path / 'missing.duckdb'} (run `lessonweaver run` first)\n"
    code, _, err = sql_cli(capsys, "SELEC 1", "--db", str(demo))
    assert code == 1 and err == 'lessonweaver: error: Parser Error: syntax error at or near "SELEC"\n'
    code, _, err = sql_cli(capsys, "SELECT CAST(content AS INTEGER) FROM events", "--db", str(demo))
    assert code == 1 and err.startswith("lessonweaver: error: Conversion Error") and err.count("\n") == 1
    code, _, err = sql_cli(capsys, "SELECT 1", "--file", "x.sql", "--db", str(demo))
    assert code == 2 and err == "lessonweaver: error: give a QUERY or --file, not both\n"
    code, _, err = sql_cli(capsys, "--file", str(tmp_path / "nope.sql"), "--db", str(demo))
    assert code == 2 and err == (f"lessonweaver: error: no SQL file at {tmp_path / 'nope.sql'} "
                                 "(the shipped examples: lessonweaver sql --examples)\n")


# --- never in a run's way -------------------------------------------------------------------------------

def run_cli(db: Path, inputs: Path, night: str = "2026-11-30") -> subprocess.CompletedProcess:
    """A run in another process, as the nightly schedule would start it (in-process core, no server)."""
    return subprocess.run([sys.executable, "-m", "lessonweaver.cli", "run", str(inputs), "--db", str(db),
                           "--out", str(db.parent / "out"), "-q", "--no-prefect", "--night", night],
                          capture_output=True, text=True, timeout=300)


def test_a_reader_holding_the_database_open_through_a_whole_run(demo: Path, tmp_path: Path):
    db = copy_db(demo, tmp_path / "lw.duckdb")
    new = write_traces(tmp_path / "in", "late.jsonl", [{
        "trace_id": "held-1", "source": "coding-agent", "task": "Review a pull request", "outcome": "corrected_by_human",
        "events": [{"id": "e1", "type": "human_correction", "content": "Open the diff before approving."}]}])
    # A raw connection, as the DuckDB CLI, a notebook or a BI tool keeps one: it holds the file.
    reader = duckdb.connect(str(db), read_only=True)
    try:
        before = reader.execute("SELECT count(*) FROM traces").fetchone()[0]
        events = reader.execute("SELECT count(*) FROM events").fetchone()[0]
        done = run_cli(db, new)
        assert done.returncode == 0, done.stderr
        # The reader keeps the database it opened, whole: events included.
        assert reader.execute("SELECT count(*) FROM traces").fetchone()[0] == before
        assert reader.execute("SELECT count(*) FROM events").fetchone()[0] == events
    finally:
        reader.close()
    assert query_db(db, "SELECT count(*) FROM traces") == [(before + 1,)]
    assert query_db(db, "SELECT count(*) FROM events") == [(events + 1,)]


def test_queries_read_the_last_published_database_while_a_run_holds_it(demo: Path, tmp_path: Path, capsys):
    db = copy_db(demo, tmp_path / "lw.duckdb")
    handle = lessonweaver.open(db)
    lessons = handle.lessons().height
    with store.writing(str(db)) as work:  # a run, or a review, writing its copy
        con = store.connect(work)
        con.execute("DELETE FROM reviews; UPDATE lessons SET review = 'rejected'")
        con.close()
        assert handle.lessons().height == lessons
        code, out, _ = sql_cli(capsys, "SELECT count(*) AS n FROM lessons WHERE review = 'rejected'", "--db", str(db))
        assert code == 0 and out.splitlines()[2].strip() == "0"
    code, out, _ = sql_cli(capsys, "SELECT count(*) AS n FROM lessons WHERE review = 'rejected'", "--db", str(db))
    assert out.splitlines()[2].strip() == str(lessons)


def test_a_nightly_run_proceeds_while_a_handle_exists(demo: Path, tmp_path: Path):
    from prefect.settings import PREFECT_API_URL

    db = copy_db(demo, tmp_path / "lw.duckdb")
    handle = lessonweaver.open(db)
    before = handle.sql("SELECT count(*) AS n FROM traces")["n"][0]
    assert explore.run(str(db), "SELECT 1")  # the CLI path too, just before the run
    new = write_traces(tmp_path / "in", "late.jsonl", [{
        "trace_id": "late-1", "source": "coding-agent", "task": "Review a pull request", "outcome": "corrected_by_human",
        "events": [{"id": "e1", "type": "human_correction", "content": "Open the diff before approving."}]}])
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    done = subprocess.run([sys.executable, "-m", "lessonweaver.cli", "run", str(new), "--db", str(db),
                           "--out", str(tmp_path / "out"), "-q", "--night", "2026-11-30"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    # The same handle sees the run's rows: every query opens the file afresh.
    assert handle.sql("SELECT count(*) AS n FROM traces")["n"][0] == before + 1
    assert handle.timeline("late-1")["detectors"].to_list() == [["human_correction"]]


# --- lessonweaver.open() ----------------------------------------------------------------------------------

def test_open_helpers_return_polars_frames(demo: Path):
    lw = lessonweaver.open(demo)
    lessons = lw.lessons()
    assert isinstance(lessons, pl.DataFrame) and lessons.height == query_db(demo, "SELECT count(*) FROM lessons")[0][0]
    assert lessons["priority"].to_list() == sorted(lessons["priority"].to_list(), reverse=True)
    new = lw.lessons("new")
    assert 0 < new.height < lessons.height and set(new["status"]) == {"new"}
    with pytest.raises(ValueError, match="unknown status"):
        lw.lessons("fixed")
    trend = lw.trend()
    assert isinstance(trend, pl.DataFrame) and trend.columns == [
        "lesson_id", "title", "detector", "status", "night", "occurrences", "traces"]
    twice = query_db(demo, "SELECT lesson_id FROM lesson_trend GROUP BY 1 HAVING count(*) = 2")[0][0]
    assert [str(n) for n in lw.trend(twice)["night"]] == ["2026-11-28", "2026-11-29"]
    retries = lw.detections("retry")
    assert isinstance(retries, pl.DataFrame) and retries.height > 0 and set(retries["detector"]) == {"retry"}
    assert {"source", "task", "evidence"} <= set(retries.columns)
    assert lw.detections().height == query_db(demo, "SELECT count(*) FROM detections")[0][0]
    flagged = query_db(demo, "SELECT trace_id FROM detections WHERE seq IS NOT NULL ORDER BY trace_id LIMIT 1")[0][0]
    timeline = lw.timeline(flagged)
    assert isinstance(timeline, pl.DataFrame) and timeline["seq"].to_list() == sorted(timeline["seq"].to_list())
    assert any(timeline["detectors"].to_list())
    assert lw.timeline("no-such-trace").height == 0
    frame = lw.sql("SELECT lesson_id FROM lessons WHERE occurrences >= ? ORDER BY lesson_id", [2])
    assert frame["lesson_id"].to_list() == [r[0] for r in query_db(
        demo, "SELECT lesson_id FROM lessons WHERE occurrences >= 2 ORDER BY lesson_id")]
    with pytest.raises(StoreError, match="no database"):
        lessonweaver.open(demo.parent / "missing.duckdb")


def test_importing_the_package_stays_light():
    code = "import sys, lessonweaver; print(sorted(m for m in ('duckdb', 'polars') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
