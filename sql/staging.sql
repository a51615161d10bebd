-- The adapter contract: the staging tables every adapter writes (in a batch's in-memory database).
-- An adapter reads the view `records_in` (file_id, file, line, record, doc JSON: its format's records)
-- and inserts into `traces` and `events` (every row with the file_id and record it came from), into
-- `rejects` (file_id, line, record, reason) for a record it cannot use, and into `record_links` for a
-- record that only repeats what another record already delivered. Columns an adapter does not know stay
-- NULL; `extra` keeps the fields of a record that no column took. tests/test_adapters.py holds every
-- adapter to this.
CREATE OR REPLACE TABLE traces (
    trace_id VARCHAR, format VARCHAR, source VARCHAR, task VARCHAR, outcome VARCHAR, tenant VARCHAR,
    file VARCHAR, line BIGINT, started_at TIMESTAMP, ended_at TIMESTAMP, metadata JSON, extra JSON,
    file_id BIGINT, record BIGINT
);
CREATE OR REPLACE TABLE events (
    trace_id VARCHAR, seq INTEGER, event_id VARCHAR, type VARCHAR, raw_type VARCHAR, content VARCHAR,
    status VARCHAR, success BOOLEAN, tool_name VARCHAR, ts TIMESTAMP, parent_id VARCHAR, metadata JSON,
    extra JSON, file_id BIGINT, record BIGINT,
    actor VARCHAR  -- who acted, from the producer's structure (the adapter's `roles` header): human,
                   -- counterpart, harness, parent, agent, tool or provider; NULL: as the type says (lw_actor)
);
CREATE OR REPLACE TABLE file_formats (file_id BIGINT, format VARCHAR);
-- A record that only repeats an event already delivered (a replay, the same run in another file) is
-- linked to its trace here instead of being rejected: it counts as loaded, with its trace.
CREATE OR REPLACE TABLE record_links (file_id BIGINT, record BIGINT, trace_id VARCHAR);
