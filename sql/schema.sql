-- The lessonweaver database: the public SQL interface (documented in docs/tables.md).
-- Applied on every open; every statement is idempotent. The `runs` table is made from the run summary
-- (lessonweaver/summary.py), with each column's meaning as its comment.

CREATE TABLE IF NOT EXISTS ingested_files (
    path        VARCHAR,
    content_hash VARCHAR,  -- XXH3-128 of its bytes as stored: tells a changed file from an unchanged one
    size        BIGINT,
    mtime       DOUBLE,
    format      VARCHAR,
    records     BIGINT,
    loaded      BIGINT,
    quarantined BIGINT,
    rejected    BIGINT,
    note        VARCHAR,   -- what went wrong with the file as a whole (a truncated gzip stream, no JSON, ...)
    run_id      VARCHAR,
    ingested_at TIMESTAMP
);

CREATE TABLE IF NOT EXISTS traces (
    trace_id   VARCHAR,
    format     VARCHAR,
    source     VARCHAR,
    task       VARCHAR,
    outcome    VARCHAR,
    tenant     VARCHAR,    -- salted hash of the producer's tenant id, never the id itself
    file       VARCHAR,
    line       BIGINT,
    started_at TIMESTAMP,
    ended_at   TIMESTAMP,
    metadata   JSON,
    extra      JSON,       -- top-level fields with no canonical column
    content_hash VARCHAR,  -- hash of the trace's records as stored (a redaction marker without its salted hash): tells a re-delivery from a conflict
    run_id     VARCHAR,
    loaded_at  TIMESTAMP
);

-- Events live in Parquet files beside the database (lessonweaver/eventstore.py): this lists the files
-- that hold the stored events, relative to the events folder; the view `events` reads them.
CREATE TABLE IF NOT EXISTS event_files (
    file       VARCHAR,    -- e.g. 20261202T031500Z-ab12cd-3f9a1b/part-0.parquet
    run_id     VARCHAR,    -- the run whose load wrote its events (a rewrite keeps the run)
    events     BIGINT,
    written_at TIMESTAMP
);

CREATE TABLE IF NOT EXISTS detections (
    detector    VARCHAR,
    trace_id    VARCHAR,
    event_id    VARCHAR,   -- NULL for a trace-level finding
    seq         INTEGER,
    severity    VARCHAR,
    evidence    VARCHAR,
    problem     VARCHAR,
    lesson      VARCHAR,   -- proposed lesson text for this occurrence
    lesson_id   VARCHAR,   -- NULL when the trace opted out (lesson_candidate false)
    run_id      VARCHAR,
    detected_at TIMESTAMP
);

-- What each turn of a person or a counterpart means (sql/facts/turns.sql): derived, like detections, and
-- worked out again by redetect.
CREATE TABLE IF NOT EXISTS turns (
    trace_id       VARCHAR,
    seq            INTEGER,   -- the event (events.seq)
    event_id       VARCHAR,
    speaker        VARCHAR,   -- human (the person operating the agent) | counterpart (a customer, a simulated user)
    nth            INTEGER,   -- the speaker's turns so far in the trace (1: the task)
    words          INTEGER,
    intent         VARCHAR,   -- correction | instruction | answer | acknowledgement | paste | interruption | unknown
    reason         VARCHAR,   -- a correction's: recorded | objection | disputed | missing | failed | repeated | conceded
    interrupted    BOOLEAN,   -- the person stopped the agent just before this turn
    agent_asked    BOOLEAN,   -- the agent's last words before it asked something
    agent_changed  BOOLEAN,   -- the agent changed something (a call that did more than look) since the person last spoke
    agent_conceded BOOLEAN,   -- the agent's next words granted it was wrong ("you're right", "my mistake")
    run_id         VARCHAR
);

CREATE TABLE IF NOT EXISTS lessons (
    lesson_id         VARCHAR,
    detector          VARCHAR,
    severity          VARCHAR,
    source            VARCHAR,
    task              VARCHAR,
    tenant            VARCHAR,   -- salted hash of the tenant, when traces carry one
    title             VARCHAR,
    problem           VARCHAR,
    lesson            VARCHAR,
    evidence          VARCHAR,
    example_trace_ids VARCHAR[],
    occurrences       BIGINT,
    trace_count       BIGINT,
    first_seen        TIMESTAMP,
    last_seen         TIMESTAMP
);

CREATE TABLE IF NOT EXISTS quarantine (
    trace_id       VARCHAR,
    file           VARCHAR,
    line           BIGINT,
    reason         VARCHAR,
    run_id         VARCHAR,
    quarantined_at TIMESTAMP
);

-- A quarantined trace that has a sealed finding (secret_exposed): its findings are stored under `sealed`,
-- a salted hash of its id, and the weave reads its tenant, source and project from here. Its content is
-- gone, as every quarantined trace's.
CREATE TABLE IF NOT EXISTS sealed_traces (
    sealed   VARCHAR,
    trace_id VARCHAR,
    tenant   VARCHAR,
    source   VARCHAR,
    project  VARCHAR,
    file     VARCHAR
);

CREATE TABLE IF NOT EXISTS rejects (
    file        VARCHAR,
    line        BIGINT,    -- line in the file, when the record is a line
    record      BIGINT,    -- 1-based record index within the file
    reason      VARCHAR,
    run_id      VARCHAR,
    rejected_at TIMESTAMP
);

-- The detectors the latest run used: titles and descriptions for reports and queries.
CREATE TABLE IF NOT EXISTS detectors (
    detector    VARCHAR,
    title       VARCHAR,
    severity    VARCHAR,
    description VARCHAR,
    path        VARCHAR
);

-- Which version of each detector made its stored detections (lessonweaver/versions.py): a run that uses
-- another version says so and points to `lessonweaver redetect`, which brings it up to date.
CREATE TABLE IF NOT EXISTS detector_versions (
    detector    VARCHAR,
    fingerprint VARCHAR,   -- a hash of the detector's header and query
    recorded_at TIMESTAMP
);

-- Settings the database keeps for itself, e.g. the salt for tenant hashes (when none is configured).
CREATE TABLE IF NOT EXISTS settings (
    key   VARCHAR,
    value VARCHAR
);

-- What each run saw, per lesson and detector: the lifecycle and the per-night trends are built from
-- this. Kept when the traces behind it are replaced or forgotten; redetect recounts the detectors it ran.
CREATE TABLE IF NOT EXISTS sightings (
    run_id      VARCHAR,
    night       DATE,      -- the night the run counts for (runs.night)
    detector    VARCHAR,
    lesson_id   VARCHAR,   -- NULL for detections of traces that opted out of lessons
    occurrences BIGINT,
    traces      BIGINT
);

-- Which lesson each wording of a cause belongs to. A variant is the exact key (detector family and
-- signature); near-duplicate variants share one lesson. Kept, so merges are stable.
CREATE TABLE IF NOT EXISTS lesson_variants (
    variant_id VARCHAR,
    lesson_id  VARCHAR,
    similarity DOUBLE,     -- token-set (Jaccard) similarity to the variant it was merged with; 1 for the first
    merged_at  TIMESTAMP
);

-- A person's decision on a lesson (`lessonweaver review`): one row per lesson, survives every re-run.
CREATE TABLE IF NOT EXISTS reviews (
    lesson_id  VARCHAR,
    decision   VARCHAR,    -- pending | accepted | rejected
    text       VARCHAR,    -- the lesson text as edited by the reviewer, or NULL for the proposed text
    note       VARCHAR,
    decided_at TIMESTAMP
);

-- Columns added after the first release: older databases gain them here.
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS tenant VARCHAR;
ALTER TABLE traces ADD COLUMN IF NOT EXISTS content_hash VARCHAR;
-- the kinds of secret replaced in the trace by a marker `[SECRET:<kind>#<hash>]`; NULL: none
ALTER TABLE traces ADD COLUMN IF NOT EXISTS redacted VARCHAR[];
ALTER TABLE ingested_files ADD COLUMN IF NOT EXISTS note VARCHAR;
ALTER TABLE detections ADD COLUMN IF NOT EXISTS variant_id VARCHAR;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS status VARCHAR;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS first_night DATE;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS last_night DATE;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS nights_seen BIGINT;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS priority DOUBLE;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS review VARCHAR;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS proposed_lesson VARCHAR;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS variants BIGINT;
ALTER TABLE detections ADD COLUMN IF NOT EXISTS category VARCHAR;    -- agent | environment | policy | producer_flag
ALTER TABLE detections ADD COLUMN IF NOT EXISTS confidence VARCHAR;  -- certain | likely
ALTER TABLE detections ADD COLUMN IF NOT EXISTS signature VARCHAR;  -- the cause, what varies masked (was lesson_key)
ALTER TABLE detections ADD COLUMN IF NOT EXISTS family VARCHAR;     -- detectors whose findings of one signature are one cause
ALTER TABLE detections ADD COLUMN IF NOT EXISTS tool VARCHAR;       -- what the finding is about: a tool, or the program a shell ran
ALTER TABLE detections ADD COLUMN IF NOT EXISTS recovery VARCHAR;   -- what worked after it, in the same trace
ALTER TABLE detections ADD COLUMN IF NOT EXISTS recovery_kind VARCHAR;  -- changed | again | other | correction | final_answer
ALTER TABLE detections ADD COLUMN IF NOT EXISTS wasted_steps INTEGER;  -- the agent's calls between the failure and what worked
ALTER TABLE detections ADD COLUMN IF NOT EXISTS title VARCHAR;      -- the cause in a few words, when the detector says
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS category VARCHAR;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS confidence VARCHAR;
ALTER TABLE detectors ADD COLUMN IF NOT EXISTS category VARCHAR;
ALTER TABLE detectors ADD COLUMN IF NOT EXISTS confidence VARCHAR;
ALTER TABLE detectors ADD COLUMN IF NOT EXISTS family VARCHAR;
ALTER TABLE detectors ADD COLUMN IF NOT EXISTS floor BOOLEAN;  -- false: even a one-off finding is a lesson
-- A lesson is a cause (lessons.py): what it is about, what worked, how far it reaches and what it cost.
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS family VARCHAR;        -- the detectors whose findings it groups
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS detectors VARCHAR[];   -- every detector that found it
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS signature VARCHAR;     -- the cause, what varies masked
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS tool VARCHAR;          -- the tool or program it is about, when one
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS recovery VARCHAR;      -- what worked, from its findings
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS recovery_kind VARCHAR;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS wasted_steps BIGINT;   -- calls its failures cost before something worked
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS sources BIGINT;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS projects VARCHAR[];    -- the projects of its traces (lw_project)
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS environment VARCHAR;   -- where its traces ran, when they share it (lw_environment)
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS tenants BIGINT;
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS human BOOLEAN;         -- a person had to step in
ALTER TABLE lessons ADD COLUMN IF NOT EXISTS frequency VARCHAR;     -- "18 times in 3 sessions across 2 projects"

-- Traces `lessonweaver forget` removed: only a hash of each id, so that a trace delivered again is
-- not stored again (its records are rejected), and how it was asked for.
CREATE TABLE IF NOT EXISTS forgotten (
    trace_hash   VARCHAR,    -- sha256 of the trace_id
    asked_by     VARCHAR,    -- trace, tenant or source: what the request named
    forgotten_at TIMESTAMP
);

-- A lesson as one tenant sees it: only that tenant's findings' texts and counts, so a per-tenant report
-- (--tenant) filters the shared lessons without showing one tenant's evidence to another (lessons_for).
CREATE TABLE IF NOT EXISTS lesson_tenants (
    lesson_id         VARCHAR,
    tenant            VARCHAR,
    title             VARCHAR,
    problem           VARCHAR,
    proposed_lesson   VARCHAR,
    evidence          VARCHAR,
    recovery          VARCHAR,
    example_trace_ids VARCHAR[],
    occurrences       BIGINT,
    trace_count       BIGINT,
    frequency         VARCHAR,
    first_seen        TIMESTAMP,
    last_seen         TIMESTAMP
);
