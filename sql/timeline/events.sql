-- The events of the traces $traces (a list of trace ids), in order, for their timelines
-- (lessonweaver/timeline.py), with the type as written, the tool's name, `call` (what a tool call ran: a
-- shell's command, else its arguments, else its text) and `stored`: how many events the trace has. With
-- $limit, at most that many per trace: with $around, the events nearest to that seq; else the events a
-- detection points to first, then those within two of one, then the earliest. With $limit NULL, every
-- event.
-- The ids are tested as a list, not joined: the test reaches the scan of the event files, whose row groups
-- (sorted by trace) are then skipped where their range of ids holds none, text and all.
WITH flagged AS (
    SELECT DISTINCT trace_id, seq FROM detections
    WHERE seq IS NOT NULL AND list_contains($traces::VARCHAR[], trace_id)
),
picked AS (
    SELECT e.trace_id, e.seq, e.ts, e.type, e.raw_type, e.status, e.tool_name, e.content, f.seq IS NOT NULL AS flagged,
           CASE WHEN e.type = 'tool_call' THEN
                CASE WHEN lw_shell_tool(e.tool_name) THEN lw_command(lw_call_args(e.metadata, e.extra, e.content))
                     ELSE lw_call_args(e.metadata, e.extra, e.content) END END AS call
    FROM events e LEFT JOIN flagged f ON f.trace_id = e.trace_id AND f.seq = e.seq
    WHERE list_contains($traces::VARCHAR[], e.trace_id)
),
ranked AS (
    SELECT *, count(*) OVER (PARTITION BY trace_id) AS stored,
           row_number() OVER (PARTITION BY trace_id
                              ORDER BY abs(seq - coalesce($around::BIGINT, seq)), flagged DESC, near DESC, seq) AS pick
    FROM (SELECT *, max(flagged::INTEGER) OVER (PARTITION BY trace_id ORDER BY seq
                                                ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) AS near
          FROM picked)
)
SELECT trace_id, seq, ts, type, raw_type, status, tool_name, content, call, stored
FROM ranked
WHERE $limit::BIGINT IS NULL OR pick <= $limit::BIGINT
ORDER BY trace_id, seq;
