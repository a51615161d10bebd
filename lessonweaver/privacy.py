"""Screen: keep sensitive traces out of everything lessonweaver stores or produces.

Two steps, both in the batch's in-memory staging database, before anything is written out:
- `scan` runs over the raw records before adapting: secret and PII patterns (lessonweaver.patterns) in
  DuckDB, set-at-a-time, with Python validators seeing only distinct candidate strings. PII is
  redacted in place to a typed placeholder (or, with pii_mode 'quarantine', marks the record).
- `screen` runs after adapting: a trace is quarantined by its reserved tags, or when any of its
  records carried a secret (or PII in quarantine mode). A quarantined trace leaves only its trace_id,
  file, line and a reason behind; its rows are deleted from staging so no later stage can see them.
  Tenant ids are replaced by a salted hash.
Their SQL is in sql/stage/ (redact.sql, screen.sql, tenants.sql, audit_staged.sql).
"""

import hashlib
import secrets

import duckdb
import polars as pl

from lessonweaver import patterns
from lessonweaver.queries import execute

MODES = ("redact", "quarantine")  # what becomes of PII, and of secrets, in untagged traces


def find(con: duckdb.DuckDBPyConnection, source: str, keys: tuple[str, ...], params: list | None = None) -> None:
    """Find secret and PII matches in `source` (a query returning `keys` and `text`, with `params`
    bound to its `?`).

    Leaves two temp tables: `scan_texts` (keys, text: the texts with any match) and `scan_hits`
    (keys, kind, category, hit: each valid match). One pass of one combined expression (patterns.prefilter)
    picks the texts worth a closer look; only those are searched pattern by pattern; validators (Luhn, IBAN,
    numbering plans, id checksums, password entropy) see the distinct candidate strings, never the texts.
    """
    cols = ", ".join(keys)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE scan_texts AS SELECT {cols}, text FROM ({source}) "
        "WHERE text IS NOT NULL AND regexp_matches(text, ?)",
        [*(params or []), patterns.prefilter()],
    )
    # One SELECT per pattern: DuckDB compiles a regular expression once when it is a constant of the
    # query (a bound parameter is one), not when it comes from a column. In context (LEAD) a pattern
    # reads every byte, at about 300 MB/s; a pattern's guard (fixed text every match holds) is found
    # far faster, so texts without it are passed over.
    guards = [patterns.guard_for(p) for p in patterns.PATTERNS]
    selects = [f"SELECT {cols}, ? AS kind, ? AS category, unnest(regexp_extract_all(text, ?, 2)) AS hit "
               "FROM scan_texts" + (" WHERE regexp_matches(text, ?)" if guard else "") for guard in guards]
    con.execute("CREATE OR REPLACE TEMP TABLE scan_hits AS " + " UNION ALL ".join(selects),
                [v for p, guard in zip(patterns.PATTERNS, guards)
                 for v in (p.kind, p.category, patterns.regex_for(p), *([guard] if guard else []))])
    checked = [p.kind for p in patterns.PATTERNS if p.validate is not None]
    candidates = con.execute(
        "SELECT DISTINCT kind, hit FROM scan_hits WHERE list_contains(?, kind)", [checked]).fetchall()
    rejected = pl.DataFrame([(k, h) for k, h in candidates if not patterns.valid(k, h)],
                            schema={"kind": pl.Utf8, "hit": pl.Utf8}, orient="row")
    con.register("rejected_candidates", rejected)
    con.execute("DELETE FROM scan_hits WHERE EXISTS (SELECT 1 FROM rejected_candidates r "
                "WHERE r.kind = scan_hits.kind AND r.hit = scan_hits.hit)")
    con.unregister("rejected_candidates")


def scan(con: duckdb.DuckDBPyConnection, pii_mode: str = "redact", secrets_mode: str = "redact", salt: str = "") -> None:
    """Find secrets and PII in the staged `records`; redact them in place, each unless its mode quarantines.

    Opaque blobs (encrypted reasoning, base64 images) are set aside first: they are not text, hold
    key-shaped runs by chance, and nothing learns from them. Leaves `record_findings(file_id, record,
    category, kind)`: one row per kind found in a record; `secret_hits(file_id, record, kind, hit)`, the
    secrets themselves, for the screen to place (in memory, dropped once placed: never written); and
    `secret_redactions(file_id, record, kinds)`, the kinds of secret replaced by a marker in a record.
    """
    for mode, name in ((pii_mode, "pii"), (secrets_mode, "secrets")):
        if mode not in MODES:
            raise ValueError(f"{name} mode must be one of {', '.join(MODES)}, not '{mode}'")
    execute(con, "stage/opaque.sql")
    find(con, "SELECT file_id, record, CAST(doc AS VARCHAR) AS text FROM records", ("file_id", "record"))
    con.execute("CREATE OR REPLACE TABLE record_findings AS SELECT DISTINCT file_id, record, category, kind FROM scan_hits")
    con.execute("CREATE OR REPLACE TEMP TABLE secret_hits AS "
                "SELECT DISTINCT file_id, record, kind, hit FROM scan_hits WHERE category = 'secret'")
    hits = con.execute("SELECT DISTINCT kind, hit FROM secret_hits").fetchall() if secrets_mode == "redact" else []
    cores = pl.DataFrame([(k, h, patterns.core(k, h)) for k, h in hits],
                         schema={"kind": pl.Utf8, "hit": pl.Utf8, "core": pl.Utf8}, orient="row")
    con.register("secret_cores", cores)
    pii = patterns.PII if pii_mode == "redact" else ()
    execute(con, "stage/redact.sql", pii_kinds=[p.kind for p in pii], placeholders=[p.placeholder for p in pii],
            redact_secrets=secrets_mode == "redact", salt=salt or secrets.token_hex(16), kinds=_kinds())
    con.unregister("secret_cores")
    con.execute("DROP TABLE scan_texts; DROP TABLE scan_hits")


def _kinds() -> list[str]:
    return [p.kind for p in patterns.PATTERNS]


def screen(con: duckdb.DuckDBPyConnection, pii_mode: str = "redact", salt: str = "", secrets_mode: str = "redact") -> None:
    """Move every sensitive trace into the staging table `quarantine` and delete its content; first note
    where the agent itself exposed a secret (`exposures`, for the detector secret_exposed), and mark the
    traces whose secrets were redacted (`traces.redacted`: the kinds)."""
    execute(con, "facts/exposures.sql")
    if secrets_mode == "redact":
        execute(con, "facts/exposure_markers.sql", kept=False)
    else:
        execute(con, "stage/exposures.sql")
    execute(con, "facts/exposures_place.sql", salt=salt, sealed=True, kinds=_kinds())
    con.execute("DROP TABLE secret_hits")
    flagged = ["unredactable"] + (["secret"] if secrets_mode == "quarantine" else []) + (
        ["pii"] if pii_mode == "quarantine" else [])
    execute(con, "stage/screen.sql", flagged=flagged, kinds=_kinds())
    hash_tenants(con, salt)


def exposures_of_kept(con: duckdb.DuckDBPyConnection) -> None:
    """Note where the agent exposed a secret in the traces the connection sees (kept ones: their markers),
    in place of anything noted for them before; for the detector secret_exposed."""
    execute(con, "facts/exposure_markers.sql", kept=True)
    execute(con, "facts/exposures_place.sql", salt="", sealed=False, kinds=_kinds())


# What a detection says, as one text to scan: everything a detector wrote that may come from a trace.
DETECTION_TEXT = "concat_ws(chr(10), event_id, evidence, problem, lesson, signature, tool, recovery, title)"


def trace_texts(of_run: bool = False) -> str:
    """A query of what the adapters and detectors made of each trace, one text per row of traces, events
    and detections: (trace_id, text). `of_run`: only the rows of the run bound as $run (stored tables)."""
    traces = " WHERE run_id = $run" if of_run else ""
    events = " SEMI JOIN (SELECT trace_id FROM traces WHERE run_id = $run) r USING (trace_id)" if of_run else ""
    return f"""
    SELECT trace_id, concat_ws(chr(10), trace_id, source, task, outcome, tenant, file,
                               CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)) AS text FROM traces{traces}
    UNION ALL
    SELECT trace_id, concat_ws(chr(10), event_id, raw_type, content, status, tool_name, parent_id,
                               CAST(metadata AS VARCHAR), CAST(extra AS VARCHAR)) FROM events{events}
    UNION ALL
    SELECT trace_id, {DETECTION_TEXT} FROM detections{traces}
    """


def audit_staged(con: duckdb.DuckDBPyConnection) -> int:
    """Audit a batch's output before it is written anywhere: every text the adapters and detectors
    produced, scanned with the same patterns as the records. The records were scanned as written; what
    adapters decode (JSON escapes, values taken out of nested structures) is seen only here. A trace with
    a finding is quarantined (reason `audit:<category>:<kind>`) and its rows deleted, so nothing of it
    leaves the batch. Returns the number of traces quarantined."""
    find(con, trace_texts(), ("trace_id",))
    held = execute(con, "stage/audit_staged.sql", kinds=_kinds()).fetchone()[0]
    con.execute("DROP TABLE audit_held")
    return held


def tenant_hash(salt: str, tenant: str) -> str:
    """The salted hash outputs show for a tenant id (the same as sql/stage/tenants.sql computes)."""
    return "tenant-" + hashlib.sha256(f"{salt}:{tenant}".encode()).hexdigest()[:16]


def hash_tenants(con: duckdb.DuckDBPyConnection, salt: str) -> None:
    """Replace each trace's tenant id by a salted hash: in traces.tenant, in metadata and extra fields
    named like a tenant id, and wherever the raw id appears in event content."""
    execute(con, "stage/tenants.sql", salt=salt)
