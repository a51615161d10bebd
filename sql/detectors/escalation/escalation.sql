-- id: escalation
-- title: The agent handed the conversation to a human
-- severity: info
-- description: A transfer to a human agent: a tool such as transfer_to_human_agents, escalate_to_human or
--   handoff_to_operator, or the agent saying that it is transferring the user ("I'm transferring you to a
--   human agent"; an offer to transfer is not one). Often the right move, not a failure: recorded once per
--   trace so that a team sees how often, and for what, its agent needs a person.
WITH handovers AS (
    SELECT trace_id, event_id, seq, type = 'tool_call' AS by_tool,
           CASE WHEN type = 'tool_call' THEN tool_name || coalesce(': ' || lw_clip(lw_call_args(metadata, extra, NULL), 160), '')
                ELSE lw_clip(content, 200) END AS evidence,
           CASE WHEN type = 'tool_call' THEN tool_name ELSE lw_clip(content, 160) END AS what
    FROM events
    WHERE lw_handover(type, tool_name, content)
)
SELECT trace_id, event_id, seq, evidence,
       'The agent handed the conversation to a human.' AS problem,
       'Note what made the agent hand over to a human, and whether it could have done it itself: ' || what AS lesson
FROM handovers
QUALIFY row_number() OVER (PARTITION BY trace_id ORDER BY by_tool DESC, seq) = 1
