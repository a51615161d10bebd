-- id: unfinished_run
-- title: The run stopped before the agent finished
-- severity: high
-- family: unfinished_run
-- description: A run that ended before the agent finished its task. Either the producer says so: the
--   outcome names a limit or an abort (tau2-bench max_steps or too_many_errors, mini-swe-agent
--   LimitsExceeded, SWE-agent exit_cost, exit_context or exit_format, an iteration or step limit, a budget,
--   a time-out, an agent stuck in a loop). Or the log shows it: a run given its task once (one human turn)
--   whose last event is a call of the agent's that got no result (and has no status of its own) and is not
--   a finish or submit call: the
--   run was cut off mid-action, at its iteration budget. A person ending an interactive session is no
--   finding (several turns), nor is a run that ends by finishing, submitting or answering.
-- lesson: Finish within the run's budget: {evidence}
WITH per_trace AS (
    SELECT trace_id, max(turn) AS turns, max(seq) AS last_seq,
           count(*) FILTER (WHERE type = 'tool_call' AND actor = 'agent') AS calls
    FROM facts GROUP BY trace_id
),
last_event AS MATERIALIZED (
    SELECT p.trace_id, p.turns, p.calls,
           -- a call's outcome: its result, or a status the producer wrote on the call itself
           {'type': f.type, 'actor': f.actor, 'tool': f.tool_name, 'command': f.command, 'event_id': f.event_id,
            'seq': f.seq, 'outcome': f.result_seq IS NOT NULL OR e.status IS NOT NULL OR e.success IS NOT NULL} AS last
    FROM per_trace p JOIN facts f ON f.trace_id = p.trace_id AND f.seq = p.last_seq
    JOIN events e ON e.trace_id = p.trace_id AND e.seq = p.last_seq
),
stopped AS (
    SELECT * FROM (
        SELECT trace_id, outcome,
               regexp_extract(lower(coalesce(outcome, '')), '(max_steps|too_many_errors|limits?[ _]?exceeded|exit_cost|exit_context|exit_format|max(imum)?[ _]iterations?|iteration limit|step[ _]limit|budget|stuck|timed? ?out|time_?limit|context[ _](length|window))', 1) AS why
        FROM traces)
    WHERE why <> ''
)
SELECT s.trace_id, NULL AS event_id, NULL AS seq,
       'the run ended with ' || lw_clip(s.outcome, 120) || ' after ' || coalesce(l.calls, 0) || ' tool calls' AS evidence,
       'The run stopped at a limit (' || s.why || ') before the agent finished.' AS problem,
       'The run stopped at its limit (' || s.why || ') before the agent finished: plan the work to fit the budget, '
           || 'stop exploring once the cause is found, and finish or hand over before the limit.' AS lesson,
       'run stopped: ' || s.why AS signature,
       'The run hit its limit before the agent finished (' || s.why || ')' AS title
FROM stopped s LEFT JOIN last_event l USING (trace_id)

UNION ALL

SELECT l.trace_id, l.last.event_id, l.last.seq,
       'the run ended mid-action after ' || l.calls || ' tool calls: the last call, `'
           || lw_clip(lw_first_line(coalesce(l.last.command, l.last.tool), 120), 120) || '`, got no result and the agent never finished',
       'The run was cut off mid-action, before the agent finished (its iteration budget).',
       'The run was cut off before the agent finished, at its iteration budget: plan the work to fit the budget, '
           || 'stop exploring once the cause is found, and finish before the limit.',
       'run stopped: cut off mid-action',
       'The run was cut off before the agent finished'
FROM last_event l
WHERE coalesce(l.turns, 0) <= 1
  AND l.last.type = 'tool_call' AND l.last.actor = 'agent' AND NOT l.last.outcome
  AND lower(coalesce(lw_words(l.last.tool)[1], '')) NOT IN ('finish', 'submit', 'done', 'complete', 'attempt', 'task',
                                                             'end', 'exit', 'stop', 'final', 'answer', 'return', 'respond')
  AND l.trace_id NOT IN (SELECT trace_id FROM stopped)
