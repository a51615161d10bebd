-- id: unresolved_escalation
-- title: The agent handed over a problem its own steps had not fixed
-- severity: medium
-- confidence: likely
-- description: A handover to a human (a transfer tool, or the agent saying it is transferring the user, as
--   `escalation` finds them) after the person had said, since the first step taken to fix the problem (a
--   call that did more than look: the agent's, or the person's own on their device), that the problem was
--   still there (facts.reports_failure: "it still fails", "still not working"): the agent ran out of steps
--   and passed the problem on unresolved. A handover after the agent declined what its policy forbids, one
--   the person asked for before anything was tried, or one after the agent only looked things up, is no
--   finding here (`escalation` notes every handover at info).
-- lesson: When the person says your fix did not work, take the next step your policy or runbook lists for the problem; hand it to a person only when no step within your tools is left, and say which you tried.
WITH handovers AS (
    SELECT trace_id, event_id, seq, type = 'tool_call' AS by_tool,
           CASE WHEN type = 'tool_call' THEN tool_name ELSE lw_clip(content, 160) END AS what
    FROM events
    WHERE lw_actor(type, actor) = 'agent' AND lw_handover(type, tool_name, content)
),
first_handover AS (
    SELECT * FROM handovers
    QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY seq, by_tool DESC) = 1
),
-- the first step taken to fix the problem: a call that did more than look (facts.reads), the agent's or
-- the person's own (a customer toggling a setting on their phone as the agent asked)
acted AS (
    SELECT trace_id, min(seq) AS first_call FROM facts SEMI JOIN first_handover USING (trace_id)
    WHERE type = 'tool_call' AND (actor = 'agent' OR lw_person(actor)) AND NOT coalesce(reads, false)
    GROUP BY trace_id
),
reported AS (
    SELECT h.trace_id, h.event_id, h.seq, h.what, h.by_tool, arg_max(lw_clip(e.content, 160), f.seq) AS report
    FROM first_handover h JOIN acted a USING (trace_id)
    JOIN facts f ON f.trace_id = h.trace_id AND f.seq > a.first_call AND f.seq < h.seq
    JOIN events e ON e.trace_id = f.trace_id AND e.seq = f.seq
    WHERE f.type IN ('user_message', 'human_correction') AND lw_person(f.actor) AND f.reports_failure
    GROUP BY ALL
)
SELECT trace_id, event_id, seq,
       '"' || report || '", then ' || what AS evidence,
       'The agent handed the problem to a person after the person said its steps had not fixed it.' AS problem,
       'The agent handed over a problem its own steps had not fixed ('
           || CASE WHEN by_tool THEN what ELSE 'said in words' END || ')' AS title,
       -- one cause however the handover was made or worded
       'handed over after a fix had failed' AS signature
FROM reported
