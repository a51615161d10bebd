"""Screen: keep sensitive traces out of everything lessonweaver stores or produces.

Two steps, both in the batch's in-memory staging database, before anything is written out:
- `scan` runs over the raw records before adapting: secret and PII patterns (lessonweaver.patterns) in
  DuckDB, set-at-a-time, with Python validators seeing only distinct candidate strings. PII is
  redacted in place to a typed placeholder (or, with pii_mode 'quarantine', marks the record).
- `screen` runs after adapting: a trace is quarantined by its reserved tags, or when any of its
  records carried a secret (or PII in quarantine mode). A quarantined trace leaves only its trace_id,
  file, line and a reason behind; its rows are deleted from staging so no later stage can see them.
  Tenant ids are replaced by a salted hash.
"""

import hashlib

import duckdb
import polars as pl

from lessonweaver import patterns

# Values of the reserved tags that do not make a trace sensitive; any other value does, unknown ones too.
SAFE_SENSITIVITY = ("none", "low", "public")
SAFE_CLASSIFICATION = ("public", "internal")


def _tag_reason(meta: str) -> str:
    """SQL for the first reserved tag in the JSON `meta` that marks it sensitive, or NULL."""
    safe_s = ", ".join(f"'{v}'" for v in SAFE_SENSITIVITY)
    safe_c = ", ".join(f"'{v}'" for v in SAFE_CLASSIFICATION)
    return f"""CASE
        WHEN lw_truthy({meta}->>'contains_secret') THEN 'tag:contains_secret'
        WHEN lw_truthy({meta}->>'contains_pii') THEN 'tag:contains_pii'
        WHEN nullif(trim({meta}->>'sensitivity'), '') IS NOT NULL
             AND lower(trim({meta}->>'sensitivity')) NOT IN ({safe_s}) THEN 'tag:sensitivity'
        WHEN nullif(trim({meta}->>'data_classification'), '') IS NOT NULL
             AND lower(trim({meta}->>'data_classification')) NOT IN ({safe_c}) THEN 'tag:data_classification'
    END"""


PII_MODES = ("redact", "quarantine")


def find(con: duckdb.DuckDBPyConnection, source: str, keys: tuple[str, ...], params: list | None = None) -> None:
    """Find secret and PII matches in `source` (a query returning `keys` and `text`).

    Leaves two temp tables: `scan_texts` (keys, text: the texts with any match) and `scan_hits`
    (keys, kind, hit: each valid match). One pass of one combined expression (patterns.prefilter) picks the
    texts worth a closer look; only those are searched pattern by pattern; validators (Luhn, IBAN, numbering plans,
    id checksums, password entropy) see the distinct candidate strings, never the texts.
    """
    cols = ", ".join(keys)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE scan_texts AS SELECT {cols}, text FROM ({source}) "
        f"WHERE text IS NOT NULL AND regexp_matches(text, '{_sql_string(patterns.prefilter())}')",
        params or [],
    )
    selects = [
        f"SELECT {cols}, '{p.kind}' AS kind, "
        f"unnest(regexp_extract_all(text, '{_sql_string(patterns.regex_for(p))}', 2)) AS hit FROM scan_texts"
        for p in patterns.PATTERNS
    ]
    con.execute("CREATE OR REPLACE TEMP TABLE scan_hits AS " + " UNION ALL ".join(selects))
    checked = [p.kind for p in patterns.PATTERNS if p.validate is not None]
    candidates = con.execute(
        "SELECT DISTINCT kind, hit FROM scan_hits WHERE list_contains(?, kind)", [checked]).fetchall()
    rejected = pl.DataFrame([(k, h) for k, h in candidates if not patterns.valid(k, h)],
                            schema={"kind": pl.Utf8, "hit": pl.Utf8}, orient="row")
    con.register("rejected_candidates", rejected)
    con.execute("DELETE FROM scan_hits WHERE EXISTS (SELECT 1 FROM rejected_candidates r "
                "WHERE r.kind = scan_hits.kind AND r.hit = scan_hits.hit)")
    con.unregister("rejected_candidates")


def scan(con: duckdb.DuckDBPyConnection, pii_mode: str = "redact") -> None:
    """Find secrets and PII in the staged `records`; redact PII in place unless it quarantines.

    Leaves `record_findings(file_id, record, category, kind)`: one row per kind found in a record.
    """
    if pii_mode not in PII_MODES:
        raise ValueError(f"pii mode must be one of {', '.join(PII_MODES)}, not '{pii_mode}'")
    find(con, "SELECT file_id, record, CAST(doc AS VARCHAR) AS text FROM records", ("file_id", "record"))
    con.execute(
        f"""
        CREATE OR REPLACE TABLE record_findings AS
        SELECT DISTINCT file_id, record, {category_sql('kind')} AS category, kind FROM scan_hits
        """
    )
    if pii_mode == "redact":
        _redact(con)
    con.execute("DROP TABLE scan_texts; DROP TABLE scan_hits")


def category_sql(column: str) -> str:
    return "CASE " + column + " " + " ".join(f"WHEN '{p.kind}' THEN '{p.category}'" for p in patterns.PATTERNS) + " END"


def _sql_string(text: str) -> str:
    return text.replace("'", "''")


def _redact(con: duckdb.DuckDBPyConnection) -> None:
    """Replace every valid PII match with its placeholder, longest first, keeping the JSON valid."""
    placeholders = " ".join(f"WHEN '{p.kind}' THEN '{p.placeholder}'" for p in patterns.PII)
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE redacted AS
        SELECT s.file_id, s.record,
               list_reduce(list({{'hit': h.hit, 'placeholder': CASE h.kind {placeholders} END}}
                                ORDER BY length(h.hit) DESC, h.hit),
                           lambda acc, x: replace(acc, x.hit, x.placeholder), any_value(s.text)) AS text
        FROM scan_texts s JOIN scan_hits h USING (file_id, record)
        WHERE list_contains({[p.kind for p in patterns.PII]}, h.kind)
        GROUP BY s.file_id, s.record;

        UPDATE records SET doc = CAST(r.text AS JSON)
        FROM redacted r
        WHERE records.file_id = r.file_id AND records.record = r.record AND json_valid(r.text);

        -- A redaction that broke the JSON (it should not happen) keeps the record out entirely.
        INSERT INTO record_findings
        SELECT file_id, record, 'secret', 'unredactable_pii' FROM redacted WHERE NOT json_valid(text);
        DROP TABLE redacted;
        """
    )


def screen(con: duckdb.DuckDBPyConnection, pii_mode: str = "redact", salt: str = "") -> None:
    """Move every sensitive trace into the staging table `quarantine` and delete its content."""
    flagged = "('secret', 'pii')" if pii_mode == "quarantine" else "('secret')"
    order = " ".join(f"WHEN '{p.kind}' THEN {i}" for i, p in enumerate(patterns.PATTERNS))
    con.execute(
        f"""
        CREATE OR REPLACE TABLE quarantine AS
        SELECT trace_id, arg_min(reason, rank) AS reason FROM (
            SELECT trace_id, {_tag_reason('metadata')} AS reason, 0 AS rank FROM traces
            UNION ALL
            SELECT trace_id, {_tag_reason('metadata')} AS reason, seq AS rank FROM events
            UNION ALL
            SELECT rt.trace_id, f.category || ':' || f.kind,
                   1000000 + (CASE f.category WHEN 'secret' THEN 0 ELSE 1000 END) + coalesce(CASE f.kind {order} END, 999)
            FROM record_findings f JOIN record_traces rt USING (file_id, record)
            WHERE f.category IN {flagged}
        ) WHERE reason IS NOT NULL GROUP BY trace_id;

        DELETE FROM events WHERE trace_id IN (SELECT trace_id FROM quarantine);
        DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM quarantine);
        """
    )
    hash_tenants(con, salt)


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
    SELECT trace_id, concat_ws(chr(10), event_id, evidence, problem, lesson) FROM detections{traces}
    """


def audit_staged(con: duckdb.DuckDBPyConnection) -> int:
    """Audit a batch's output before it is written anywhere: every text the adapters and detectors
    produced, scanned with the same patterns as the records. The records were scanned as written; what
    adapters decode (JSON escapes, values taken out of nested structures) is seen only here. A trace with
    a finding is quarantined (reason `audit:<category>:<kind>`) and its rows deleted, so nothing of it
    leaves the batch. Returns the number of traces quarantined."""
    find(con, trace_texts(), ("trace_id",))
    order = " ".join(f"WHEN '{p.kind}' THEN {i}" for i, p in enumerate(patterns.PATTERNS))
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE audit_held AS
        SELECT trace_id, arg_min('audit:' || {category_sql('kind')} || ':' || kind, CASE kind {order} END) AS reason
        FROM scan_hits WHERE trace_id NOT IN (SELECT trace_id FROM quarantine) GROUP BY trace_id;
        DROP TABLE scan_texts; DROP TABLE scan_hits;
        INSERT INTO quarantine SELECT trace_id, reason FROM audit_held;
        DELETE FROM detections WHERE trace_id IN (SELECT trace_id FROM audit_held);
        DELETE FROM events WHERE trace_id IN (SELECT trace_id FROM audit_held);
        DELETE FROM traces WHERE trace_id IN (SELECT trace_id FROM audit_held);
        """
    )
    held = con.execute("SELECT count(*) FROM audit_held").fetchone()[0]
    con.execute("DROP TABLE audit_held")
    return held


TENANT_KEYS = ("tenant_id", "tenant_id_hash", "tenant")


def tenant_hash(salt: str, tenant: str) -> str:
    """The salted hash outputs show for a tenant id (the same as hash_tenants computes in SQL)."""
    return "tenant-" + hashlib.sha256(f"{salt}:{tenant}".encode()).hexdigest()[:16]


def hash_tenants(con: duckdb.DuckDBPyConnection, salt: str) -> None:
    """Replace each trace's tenant id by a salted hash: in traces.tenant, in metadata and extra fields
    named like a tenant id, and wherever the raw id appears in event content."""
    keys = ", ".join(f"'{k}'" for k in TENANT_KEYS)
    patch = "json_object(" + ", ".join(f"'{k}', CASE WHEN json_exists(x, '$.{k}') THEN h.hashed END" for k in TENANT_KEYS) + ")"
    con.execute(
        """
        CREATE OR REPLACE TEMP TABLE tenant_hashes AS
        SELECT trace_id, tenant AS raw, 'tenant-' || substr(sha256(? || ':' || tenant), 1, 16) AS hashed
        FROM traces WHERE tenant IS NOT NULL AND tenant <> ''
        """,
        [salt],
    )
    con.execute(
        f"""
        CREATE OR REPLACE TEMP MACRO lw_hide_tenant(x, h) AS
            CASE WHEN x IS NOT NULL AND json_type(x) = 'OBJECT'
                      AND len(list_intersect(json_keys(x), [{keys}])) > 0
                 THEN json_merge_patch(x, {patch.replace('h.hashed', 'h')})
                 ELSE x END;

        UPDATE events SET content = replace(content, h.raw, h.hashed),
                          metadata = lw_hide_tenant(metadata, h.hashed),
                          extra = lw_hide_tenant(extra, h.hashed)
        FROM tenant_hashes h WHERE events.trace_id = h.trace_id;

        UPDATE traces SET tenant = h.hashed,
                          metadata = lw_hide_tenant(metadata, h.hashed),
                          extra = lw_hide_tenant(extra, h.hashed)
        FROM tenant_hashes h WHERE traces.trace_id = h.trace_id;

        DROP TABLE tenant_hashes;
        """
    )
