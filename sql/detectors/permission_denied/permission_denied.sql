-- id: permission_denied
-- title: The harness refused a call by its permission settings
-- severity: medium
-- family: permission_denied
-- description: A call the harness refused by its permission settings (its result's status is `denied`: "auto-
--   denied", "requires approval", "you haven't granted it"), as the producer's adapter marks it: neither the
--   tool failing nor the agent's error, and no correction by the person (a tool use the person rejected is
--   human_correction's). One finding per trace and tool (for a shell, its program), at the first refusal;
--   its cost is how often a refused call of that tool was sent again. Sent again: severity medium; refused
--   once and left alone: low (the settings did their job). The rule is what a person would write: don't
--   resend a refused call; ask for approval or hand the person the command; pre-approve the tools a
--   background agent needs.
WITH refused AS (
    SELECT f.trace_id, f.seq, f.result_event_id, f.tool_key, f.call_hash, f.command, f.output,
           row_number() OVER (PARTITION BY f.trace_id, f.tool_key ORDER BY f.seq) AS nth,
           count(*) OVER (PARTITION BY f.trace_id, f.tool_key) AS times
    FROM facts f
    WHERE f.type = 'tool_call' AND f.actor = 'agent' AND f.denied
),
first_refusal AS (
    SELECT * FROM refused WHERE nth = 1
)
SELECT r.trace_id, r.result_event_id AS event_id, r.seq,
       lw_clip(coalesce(nullif(trim(lw_first_line(r.output, 200)), ''), 'refused'), 200) || ' (`' || lw_call_brief(r.command) || '`)' AS evidence,
       'The harness refused `' || coalesce(r.tool_key, 'a call') || '` by its permission settings'
           || CASE WHEN r.times > 1 THEN ', and the agent sent it ' || (r.times - 1) || ' more '
                                         || CASE WHEN r.times = 2 THEN 'time' ELSE 'times' END ELSE '' END || '.' AS problem,
       CASE WHEN r.times > 1 THEN 'medium' ELSE 'low' END AS severity,
       'refused by the permission settings: ' || coalesce(r.tool_key, 'a call') AS signature,
       r.tool_key AS tool,
       r.times - 1 AS wasted_steps,
       '`' || coalesce(r.tool_key, 'A call') || '` is refused by the permission settings' AS title,
       '`' || coalesce(r.tool_key, 'This call') || '` is refused by the permission settings here ("'
           || lw_clip(trim(lw_first_line(r.output, 200)), 120) || '"): do not send a refused call again; ask the person to '
           || 'approve it, or hand them the command to run, and pre-approve the tools a background agent needs.' AS lesson
FROM first_refusal r
