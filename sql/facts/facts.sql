-- Facts: what detectors and the weave would each derive again from the events, worked out once per
-- batch (and once per redetect, over the stored events). One row per event; the columns after `actor`
-- are set on tool calls (and say about the call and its result), `turn` on every event.
--   actor         who acted (lw_actor: the adapter's word, else the type's)
--   turn          human turns so far (a user message or correction by a person starts one)
--   result_seq    a call's result: by id (parent_id, tool_call_id), else the next result of its tool, else
--                 an error recorded on its span; result_event_id its id (where a finding about the call's
--                 outcome points)
--   command       what a call ran: a shell's command (lw_command), else its arguments
--   call_hash     the call's whole arguments, hashed: two calls with one hash are the same call
--   edited        the files the call changed, as it names them (lw_edited_files) or its producer says
--                 (the call's metadata `edited_files`: SWE-agent 0.x's `edit N:M` changes the open file)
--   changes       the call changed files: an edit, or a shell command that writes, moves or removes
--                 files (lw_changes_files)
--   coding_run    (every event) a call of the agent's in the trace changes files
--   tool_key      what a call is about, for grouping: the program a shell ran, else the tool (lw_tool_key)
--   output        what came back: its result's text (or the error on its span, or its own text)
--   failed        the call or its result failed, or an error was recorded on its span (not where the
--                 program's exit status answers a question: lw_answer_exit; not a call refused)
--   denied        the harness refused the call by its permission settings (its result's status is denied)
--   environment   the failure is the environment's (lw_environment_failure): no lesson for the agent
--   error         the line of the output that says what went wrong (lw_error_line)
--   error_sig     that line with what varies masked (lw_mask): the cause, across tasks and sessions; for a
--                 call that edits files (lw_edited_files), 'the edit did not apply', whatever the line
--   recovery_seq  what worked after a failed call, in the same trace: the next call of the same tool_key
--   recovery_kind   that did not fail ('changed': other arguments, 'again': the same), else another tool
--   recovery      that did the same job before the person spoke again ('other': it did not fail, is no
--                 bookkeeping (a plan, a to-do list), and works on a path, file or URL the failed call
--                 named, or came right after where neither names one), else the person's next turn when it is a correction
--                 ('correction', set by turns.sql), else the final answer when no person spoke again
--                 ('final_answer'); `recovery` is its text, `recovery_tool` the tool_key of a call that
--                 worked. Nothing of these: NULL, no fix seen yet
--   wasted_steps  the agent's calls between the failure and what worked (to the end when nothing did)
--   between       the tools (tool_key) the agent used in between, at most three, in order: `rg, sed`;
--                 changed_files the files it changed in between (lw_edited_files), at most three
--   reads         (tool calls) the call only looked: a read, a search, a listing (lw_reads)
-- The text tests several detectors ask of what was said, run once here (set on user messages and
-- corrections, whoever the adapter says spoke; their text as lw_lowered reads it):
--   objection     the turn objects to what the agent did or said (lw_objection)
--   reports_failure  it reports that what the agent did does not work (lw_reports_failure)
--   asks_for_check   it asks the agent to run or test its work (lw_asks_for_check)
--
-- Four statements, not one query: each holds only what it needs, and what a statement made is dropped
-- once read. As one query every CTE read twice was held at once (the events' projection, the calls,
-- their outcomes, the windows over them) beside the facts being written: 768 MB of DuckDB's memory for
-- a 64 MB part of short traces (480k events), against 440 MB now (benchmarks/README.md).
-- 1. the turn of every event, counted on narrow rows
CREATE OR REPLACE TEMP TABLE event_turns AS
SELECT trace_id, seq,
       count(*) FILTER (WHERE type IN ('user_message', 'human_correction')
                          AND lw_person(lw_actor(type, actor))) OVER (PARTITION BY trace_id ORDER BY seq) AS turn
FROM events;
-- 2. every call with what came back, whether it failed, and the error it met
CREATE OR REPLACE TEMP TABLE call_outcomes AS
-- Windows and joins carry only the columns they need: the events' text is read for the few rows that use
-- it (calls, results, errors, the person's words after a failure), not carried through every sort.
WITH ev AS (
    SELECT e.trace_id, e.seq, e.event_id, e.type, e.tool_name, e.parent_id, e.raw_type,
           e.metadata->>'tool_call_id' AS call_ref, lw_actor(e.type, e.actor) AS actor,
           -- a call the person refused did not fail: it is their correction (human_correction finds it); nor did
           -- one the harness refused by its permission settings (status denied: permission_denied finds it)
           lw_failed(e.status, e.success) AND lower(coalesce(e.status, '')) NOT IN ('rejected', 'denied') AS own_failed,
           lower(coalesce(e.status, '')) = 'rejected' AS rejected,
           lower(coalesce(e.status, '')) = 'denied' AS denied,
           t.turn,
           e.actor AS given_actor
    FROM events e JOIN event_turns t USING (trace_id, seq)
    WHERE e.type IN ('tool_call', 'tool_result')
),
calls AS (
    SELECT *, lw_tool_key(tool_name, command) AS tool_key
    FROM (
        SELECT trace_id, seq, event_id, tool_name, call_ref, actor, own_failed, turn, content, raw_type, given_actor,
               md5(coalesce(args, '')) AS call_hash, shell, said_edited,
               -- what it ran, as a person would write it: a shell's command, else the tool and all its arguments
               -- (an editor's `command` is only its sub-command: `view`, `create`, not what it viewed or made)
               CASE WHEN shell THEN lw_command(args)
                    WHEN json_valid(args) AND json_type(args) = 'OBJECT' THEN concat_ws(' ', tool_name, nullif(args, '{}'))
                    ELSE concat_ws(' ', tool_name, nullif(nullif(lw_command(args), tool_name), '{}')) END AS command
        FROM (SELECT v.*, e.content, lw_call_args(e.metadata, e.extra, e.content) AS args, lw_shell_tool(v.tool_name) AS shell,
                     -- the files the producer says the call changed, where its command does not name them
                     TRY_CAST(e.metadata->'edited_files' AS VARCHAR[]) AS said_edited
              FROM ev v JOIN events e USING (trace_id, seq) WHERE v.type = 'tool_call' AND e.type = 'tool_call'))
),
results AS (
    SELECT v.trace_id, v.seq, v.event_id, v.tool_name, v.parent_id, v.call_ref, e.content, v.own_failed, v.rejected,
           v.denied, coalesce(TRY_CAST(e.metadata->>'exit_code' AS INTEGER), lw_exit_code(e.content)) AS exit_code
    FROM ev v JOIN events e USING (trace_id, seq) WHERE v.type = 'tool_result' AND e.type = 'tool_result'
),
by_id AS (
    SELECT r.trace_id, r.seq, c.seq AS call_seq
    FROM results r JOIN calls c ON c.trace_id = r.trace_id
                               AND (c.event_id = r.parent_id OR (r.call_ref IS NOT NULL AND c.call_ref = r.call_ref))
    WHERE c.seq < r.seq
    QUALIFY row_number() OVER (PARTITION BY r.trace_id, r.seq ORDER BY c.seq DESC) = 1
),
by_order AS (
    SELECT r.trace_id, r.seq, c.seq AS call_seq
    FROM (SELECT trace_id, seq, tool_name FROM results ANTI JOIN by_id USING (trace_id, seq)) r
    ASOF JOIN (SELECT trace_id, seq, tool_name FROM calls) c
        ON c.trace_id = r.trace_id AND c.tool_name IS NOT DISTINCT FROM r.tool_name AND r.seq > c.seq
),
paired AS (
    SELECT p.call_seq, r.* FROM (SELECT * FROM by_id UNION ALL SELECT * FROM by_order) p JOIN results r USING (trace_id, seq)
    QUALIFY row_number() OVER (PARTITION BY r.trace_id, p.call_seq ORDER BY r.seq) = 1
),
-- an error recorded on a call's own span (OpenTelemetry: the exception event of a tool span)
span_errors AS (
    SELECT c.trace_id, c.seq AS call_seq, arg_min(x.content, x.seq) AS content, min(x.seq) AS seq,
           arg_min(x.event_id, x.seq) AS event_id
    FROM calls c JOIN events x ON x.trace_id = c.trace_id AND x.parent_id = c.event_id AND x.type = 'error'
    GROUP BY c.trace_id, c.seq
),
outcome AS (
    SELECT c.*, coalesce(p.seq, s.seq) AS result_seq, coalesce(p.event_id, s.event_id) AS result_event_id,
           coalesce(p.content, s.content, CASE WHEN c.own_failed THEN c.content END) AS output,
           coalesce(p.denied, false) AS denied,
           (c.own_failed OR coalesce(p.own_failed, false) OR s.content IS NOT NULL)
               -- a search that found nothing, a test that came out false (lw_answer_exit): no failure (a call
               -- with no tool name has no tool key: coalesce, or `failed` would be NULL)
               AND NOT coalesce((c.shell OR c.tool_key IN ('rg', 'grep', 'egrep', 'fgrep', 'git grep', 'ag', 'ack'))
                                AND lw_answer_exit(CASE WHEN c.shell THEN c.command ELSE c.tool_key || ' ' || c.command END,
                                                   p.exit_code, coalesce(p.content, s.content)), false) AS failed
    FROM calls c
    LEFT JOIN paired p ON p.trace_id = c.trace_id AND p.call_seq = c.seq
    LEFT JOIN span_errors s ON s.trace_id = c.trace_id AND s.call_seq = c.seq
)
-- whether a call changes files or only looks, worked out once here for the statements after
SELECT *, len(edited) > 0 OR lw_changes_files(command) AS changes, lw_reads(tool_key, command) AS reads
FROM (
    SELECT o.* EXCLUDE (content, said_edited), list_distinct(list_concat(lw_edited_files(o.command), coalesce(o.said_edited, []))) AS edited,
           o.failed AND lw_environment_failure('tool_call', o.raw_type, o.tool_name, o.output, o.given_actor) AS environment,
           -- a result that only repeats the tool's name, or the call itself, says nothing of what went wrong
           CASE WHEN o.failed AND trim(coalesce(o.output, '')) NOT IN (o.tool_name, o.tool_key, trim(coalesce(o.content, '')))
                THEN lw_error_line(lw_shell_output(o.output, o.command)) END AS error
    FROM outcome o);
-- 3. what is known of each call besides: what worked after a failure, and at what cost
CREATE OR REPLACE TEMP TABLE call_facts AS
WITH
-- what came next, for every call: windows over the agent's calls
agent_calls AS (
    SELECT j.trace_id, j.seq, j.command, j.tool_key, j.turn, j.failed, j.environment, j.edited, j.changes,
           j.reads, lw_call_targets(j.command) AS targets,
           first_value(CASE WHEN NOT j.failed THEN j.seq END IGNORE NULLS) OVER same_key AS next_ok_same,
           first_value(CASE WHEN NOT j.failed THEN j.command END IGNORE NULLS) OVER same_key AS next_ok_same_command,
           row_number() OVER (PARTITION BY j.trace_id ORDER BY j.seq) AS nth_call,
           count(*) OVER (PARTITION BY j.trace_id) AS calls_in_trace
    FROM call_outcomes j
    WHERE j.actor = 'agent'
    WINDOW same_key AS (PARTITION BY j.trace_id, j.tool_key ORDER BY j.seq ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
),
-- the calls whose failure asks what worked after it: the environment's too (retry tells operators whether
-- calling a refused tool again worked; the detectors of the agent's failures leave them out)
failures AS (
    SELECT * FROM agent_calls WHERE failed
),
-- another tool that did the same job after a failure, in the same turn: it worked, is no bookkeeping of the
-- agent's own (a plan, a to-do list), is no look unless the failed call was one and no edit unless the
-- failed call was one (reading or editing a script does not run it), and works on what the failed call
-- worked on (a path, a file, a URL both name), or, where neither names one, it came right after (an
-- unrelated next call is no fix: what worked is then not seen yet)
other_ok AS (
    SELECT f.trace_id, f.seq, min(o.seq) AS other_seq, arg_min(o.command, o.seq) AS other_text,
           arg_min(o.tool_key, o.seq) AS other_tool
    FROM failures f JOIN agent_calls o ON o.trace_id = f.trace_id AND o.turn = f.turn AND o.seq > f.seq
                                       AND NOT o.failed AND o.tool_key IS DISTINCT FROM f.tool_key
                                       AND NOT lw_bookkeeping(o.tool_key) AND lower(coalesce(o.tool_key, '')) <> 'taskoutput'
                                       AND (NOT o.reads OR f.reads)
                                       AND (NOT o.changes OR f.changes)
    WHERE f.next_ok_same IS NULL
      AND (list_has_any(f.targets, o.targets)
           OR (len(f.targets) = 0 AND len(o.targets) = 0 AND o.nth_call = f.nth_call + 1))
    GROUP BY f.trace_id, f.seq
),
-- whether a person spoke after a failure (their correction, when it is one, is what worked: turns.sql
-- says, after the turns are read), and the next final answer
humans AS (
    SELECT e.trace_id, e.seq
    FROM events e SEMI JOIN failures f USING (trace_id)
    WHERE e.type IN ('user_message', 'human_correction') AND lw_person(lw_actor(e.type, e.actor))
),
finals AS (
    SELECT e.trace_id, e.seq, e.content FROM events e SEMI JOIN failures f USING (trace_id) WHERE e.type = 'final_answer'
),
later AS (
    SELECT f.trace_id, f.seq, h.seq AS next_human, a.seq AS next_final, a.content AS next_final_text
    FROM (SELECT trace_id, seq FROM failures) f
    ASOF LEFT JOIN humans h ON h.trace_id = f.trace_id AND h.seq > f.seq
    ASOF LEFT JOIN finals a ON a.trace_id = f.trace_id AND a.seq > f.seq
),
recovered AS (
    SELECT a.trace_id, a.seq,
           CASE WHEN a.next_ok_same IS NOT NULL THEN CASE WHEN a.next_ok_same_command IS DISTINCT FROM a.command THEN 'changed' ELSE 'again' END
                WHEN o.other_seq IS NOT NULL THEN 'other'
                WHEN l.next_final IS NOT NULL AND l.next_human IS NULL THEN 'final_answer' END AS recovery_kind,
           CASE WHEN a.next_ok_same IS NOT NULL THEN a.next_ok_same
                WHEN o.other_seq IS NOT NULL THEN o.other_seq
                WHEN l.next_human IS NULL THEN l.next_final END AS recovery_seq,
           CASE WHEN a.next_ok_same IS NOT NULL THEN a.next_ok_same_command
                WHEN o.other_seq IS NOT NULL THEN o.other_text
                WHEN l.next_human IS NULL THEN l.next_final_text END AS recovery,
           CASE WHEN a.next_ok_same IS NOT NULL THEN a.tool_key
                WHEN o.other_seq IS NOT NULL THEN o.other_tool END AS recovery_tool,
           a.nth_call, a.calls_in_trace
    FROM failures a LEFT JOIN other_ok o USING (trace_id, seq) LEFT JOIN later l USING (trace_id, seq)
),
-- what the agent did between a failure and what worked: the tools it used and the files it changed
steps_between AS (
    SELECT r.trace_id, r.seq, array_to_string(list_distinct(list(b.tool_key ORDER BY b.seq))[1:3], ', ') AS between,
           array_to_string(list_distinct(flatten(list(b.edited ORDER BY b.seq)))[1:3], ', ') AS changed_files
    FROM recovered r JOIN agent_calls b ON b.trace_id = r.trace_id AND b.seq > r.seq AND b.seq < r.recovery_seq
                                       AND NOT lw_bookkeeping(b.tool_key)
    WHERE r.recovery_kind IN ('changed', 'again', 'other')
    GROUP BY r.trace_id, r.seq
),
-- calls wasted: those after the failure and before what worked (the calls made before it, less this one's place)
costed AS (
    SELECT r.* EXCLUDE (nth_call, calls_in_trace),
           CASE WHEN r.recovery_seq IS NULL THEN r.calls_in_trace ELSE coalesce(b.nth_call, 0) END - r.nth_call AS wasted_steps
    FROM recovered r
    ASOF LEFT JOIN (SELECT trace_id, seq, nth_call FROM agent_calls) b ON b.trace_id = r.trace_id AND r.recovery_seq > b.seq
),
-- the calls, with all that is known of them
known AS (
    SELECT j.trace_id, j.seq, j.result_seq, j.result_event_id, j.command, j.call_hash, j.tool_key, j.output,
           j.edited, j.changes, j.reads,
           j.failed, j.denied, j.environment, j.error,
           -- an edit that did not apply is one cause per tool, however the tool words it (a hunk it cannot
           -- parse, lines it cannot find, a file that is not there): the edit did not match the file or the
           -- tool's format
           CASE WHEN j.error IS NOT NULL AND len(j.edited) > 0 THEN 'the edit did not apply'
                WHEN j.error IS NOT NULL THEN lw_mask(j.error) END AS error_sig,
           c.recovery_seq, c.recovery_kind, c.recovery, c.recovery_tool, c.wasted_steps, s.between,
           nullif(s.changed_files, '') AS changed_files, j.actor
    FROM call_outcomes j
    LEFT JOIN costed c USING (trace_id, seq)
    LEFT JOIN steps_between s USING (trace_id, seq)
)
SELECT * FROM known;
DROP TABLE call_outcomes;
-- 4. the facts: every event, with what is known of its call and the text tests on what a person said
CREATE OR REPLACE TEMP TABLE facts AS
-- the text tests on what was said, one pass over those turns
WITH spoken AS (
    SELECT trace_id, seq, lw_objection(said) AS objection, lw_reports_failure(said) AS reports_failure,
           lw_asks_for_check(said) AS asks_for_check
    FROM (SELECT trace_id, seq, lw_lowered(content) AS said FROM events
          WHERE type IN ('user_message', 'human_correction'))
),
-- a coding run: the agent changes files somewhere in the trace
coding AS (
    SELECT DISTINCT trace_id FROM call_facts WHERE actor = 'agent' AND changes
)
SELECT e.trace_id, e.seq, e.event_id, e.type, e.tool_name, e.actor, e.turn,
       k.result_seq, k.result_event_id, k.command, k.call_hash, k.tool_key, k.output,
       k.edited, k.changes, g.trace_id IS NOT NULL AS coding_run,
       coalesce(k.failed, e.own_failed) AS failed, coalesce(k.denied, false) AS denied, k.environment, k.error, k.error_sig,
       k.recovery_seq, k.recovery_kind, k.recovery, k.recovery_tool, k.wasted_steps, k.between, k.changed_files,
       k.reads, w.objection, w.reports_failure, w.asks_for_check
FROM (SELECT e.trace_id, e.seq, e.event_id, e.type, e.tool_name, lw_actor(e.type, e.actor) AS actor, t.turn,
             lw_failed(e.status, e.success) AND lower(coalesce(e.status, '')) NOT IN ('rejected', 'denied') AS own_failed
      FROM events e JOIN event_turns t USING (trace_id, seq)) e
LEFT JOIN call_facts k ON k.trace_id = e.trace_id AND k.seq = e.seq AND e.type = 'tool_call'
LEFT JOIN spoken w ON w.trace_id = e.trace_id AND w.seq = e.seq
LEFT JOIN coding g ON g.trace_id = e.trace_id;
DROP TABLE event_turns;
DROP TABLE call_facts;
