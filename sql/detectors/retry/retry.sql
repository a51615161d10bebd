-- id: retry
-- title: The agent had to retry
-- severity: medium
-- family: tool_failure
-- description: A call of the agent's that failed, and the same tool (for a shell, the same program:
--   `pytest`, `git push`) called again: one finding per trace, tool and failure for the calls that
--   failed in a row before one worked ("(3 times)"), with what worked then (other arguments, the same
--   call once the cause was fixed, another tool, the user's words) and the calls it cost. When nothing
--   worked, the retries were exhausted: severity high. In a run where the agent changes files (a coding
--   run), a failure followed by a call that worked is how code gets written: severity low; so is code run
--   (no edit) that raised an exception and was followed by a change of the code, even when it was not seen
--   to work again (a reproduction script given up for the fix); a failing edit, or a push or a test run
--   never made to work, stays high. Also a retry
--   event after an error or a failed step. A tool the environment refused (a rate limit, a quota, a
--   rejected key: facts.environment) and the agent called again is a retry too, but the environment's:
--   category environment, in environment_error's family with its signature (one cause, one lesson for
--   operators, whichever detector saw it), low when calling again worked, else medium (never the agent's
--   exhausted retry). A model provider's failure and the runtime's own retries of it are environment_error's
--   alone.
-- lesson: Prevent this failure instead of retrying it: {evidence}
-- a tool's episodes: its calls since it last worked; the failures of one episode, retried, are one finding
-- (the windows carry the few columns they need; the rest is joined back for the failures)
WITH ordered AS (
    SELECT trace_id, seq, failed, environment,
           count(*) FILTER (WHERE NOT failed) OVER (PARTITION BY trace_id, tool_key ORDER BY seq) AS episode,
           lead(seq) OVER (PARTITION BY trace_id, tool_key ORDER BY seq) AS again_seq
    FROM facts WHERE type = 'tool_call' AND actor = 'agent'
      -- only the traces with a failed call of the agent's: no window over every other trace
      AND trace_id IN (SELECT trace_id FROM facts WHERE type = 'tool_call' AND actor = 'agent' AND failed)
),
episodes AS (
    SELECT f.*, o.episode, o.again_seq
    FROM ordered o JOIN facts f USING (trace_id, seq)
    WHERE o.failed AND o.again_seq IS NOT NULL  -- a failure, and the tool called again
),
-- the environment's failures of an episode and the agent's are two findings: two causes
implicit AS (
    SELECT trace_id, tool_key, episode, environment, bool_or(coding_run) AS coding_run, bool_or(changes) AS changes,
           -- the finding points at the first failure's result, where it shows
           arg_min(coalesce(result_event_id, event_id), seq) AS event_id, arg_min(coalesce(result_seq, seq), seq) AS seq,
           count(*) AS times,
           arg_min(error, seq) AS error, arg_min(error_sig, seq) AS error_sig,
           arg_min({'kind': recovery_kind, 'text': recovery, 'wasted': wasted_steps, 'between': between,
                    'command': command, 'changed': changed_files}, seq) AS first
    FROM episodes
    -- an explicit retry event in between is the other branch's
    WHERE NOT EXISTS (SELECT 1 FROM events x WHERE x.trace_id = episodes.trace_id AND x.type = 'retry'
                                                AND x.seq > episodes.seq AND x.seq < episodes.again_seq)
    GROUP BY trace_id, tool_key, episode, environment
),
-- a refused tool's first failure read as environment_error reads it (its result, else the call): the same
-- kind and party, so the same signature
refused AS (
    SELECT i.*, coalesce(lw_environment_class(x.message, x.provider_failure), 'provider') AS kind,
           lw_environment_party(x.message, x.tool_name, x.provider_failure, NULL) AS party, x.message
    FROM implicit i
    JOIN (SELECT e.trace_id, e.seq, e.tool_name, coalesce(nullif(trim(e.content), ''), e.status, e.raw_type) AS message,
                 lw_provider_failure(e.type, e.raw_type, e.tool_name, e.content, e.actor) AS provider_failure
          FROM events e SEMI JOIN implicit j ON j.trace_id = e.trace_id AND j.seq = e.seq AND j.environment) x
        USING (trace_id, seq)
    WHERE i.environment
),
-- the agent's last change of files in each trace with a failure retried: a failed run followed by a change is
-- how code gets written, whether or not that run was seen to work again
last_change AS (
    SELECT trace_id, max(seq) AS changed_seq
    FROM facts
    WHERE type = 'tool_call' AND actor = 'agent' AND changes AND trace_id IN (SELECT trace_id FROM implicit)
    GROUP BY trace_id
),
failures AS (
    SELECT trace_id, seq, event_id, type, tool_name, content
    FROM events
    WHERE (type = 'error' OR lw_failed(status, success))
      AND NOT lw_environment_failure(type, raw_type, tool_name, content, actor)  -- environment_error's
),
explicit AS (
    SELECT r.trace_id, r.event_id, r.seq,
           arg_max(coalesce(f.tool_name || ' failed', f.type) || ': '
                   || coalesce(nullif(trim(f.content), ''), '(no message)'), f.seq) AS failure,
           arg_max(f.tool_name, f.seq) AS tool,
           arg_max(lw_error_line(f.content), f.seq) AS error,
           any_value(r.content) AS retry_text,
           -- exhausted: the step failed again after the retry, and nothing at all succeeded later
           EXISTS (SELECT 1 FROM failures x WHERE x.trace_id = r.trace_id AND x.seq > r.seq)
               AND NOT EXISTS (SELECT 1 FROM events s WHERE s.trace_id = r.trace_id AND s.seq > r.seq
                                                      AND lw_succeeded(s.status, s.success)) AS exhausted
    FROM events r JOIN failures f ON f.trace_id = r.trace_id AND f.seq < r.seq
    WHERE r.type = 'retry'
    GROUP BY r.trace_id, r.event_id, r.seq
)
SELECT trace_id, event_id, seq,
       tool_key || ': ' || lw_clip(coalesce(error, 'failed, with no message'), 200) AS evidence,
       CASE -- in a coding run (facts.coding_run) a failure then a call that worked is how code gets written, and
            -- so is code run (no edit) that raised, then a change of the code, though that run was not seen to work
            WHEN coding_run AND NOT changes AND changed_seq > seq AND coalesce(first.kind NOT IN ('changed', 'again', 'other'), true)
                 AND regexp_matches(coalesce(error, ''), '\b[A-Z]\w*(Error|Exception)\b') THEN 'low'
            WHEN first.kind NOT IN ('changed', 'again', 'other') OR first.kind IS NULL THEN 'high'
            WHEN coding_run THEN 'low' END AS severity,
       CASE WHEN first.kind IN ('changed', 'again', 'other')
            THEN '`' || tool_key || '` failed and was run again' || CASE WHEN times > 1 THEN ' (' || times || ' times)' ELSE '' END || '.'
            ELSE '`' || tool_key || '` kept failing and the agent never got it to work.' END AS problem,
       lw_failure_rule(tool_key, error, lw_what_worked(first.kind, first.text, first.command, first.between, first.changed)) AS lesson,
       tool_key || ': ' || coalesce(error_sig, 'failed') AS signature, tool_key AS tool,
       lw_what_worked(first.kind, first.text, first.command, first.between, first.changed) AS recovery,
       first.kind AS recovery_kind, first.wasted AS wasted_steps,
       lw_failure_title(tool_key, error) AS title, NULL AS category, NULL AS family
FROM implicit LEFT JOIN last_change USING (trace_id)
WHERE NOT environment
UNION ALL
SELECT trace_id, event_id, seq,
       tool_key || ': ' || lw_clip(coalesce(error, 'failed, with no message'), 200),
       CASE WHEN first.kind IN ('changed', 'again', 'other') THEN 'low' END,
       lw_environment_problem(kind, party) || ' The agent called `' || tool_key || '` again'
           || CASE WHEN times > 1 THEN ' (' || times || ' times)' ELSE '' END
           || CASE WHEN first.kind IN ('changed', 'again', 'other') THEN ': it worked.' ELSE ': it never worked.' END,
       lw_environment_rule(kind, party, message),
       kind || ' | ' || party, party,
       lw_what_worked(first.kind, first.text, first.command, first.between, first.changed), first.kind, first.wasted,
       'The environment failed the agent: ' || replace(kind, '_', ' ') || ' at ' || party, 'environment', 'environment_error'
FROM refused
UNION ALL
SELECT trace_id, event_id, seq,
       lw_clip(coalesce(error, failure), 200),
       CASE WHEN exhausted THEN 'high' END,
       CASE WHEN exhausted THEN 'The agent retried a failing step and it never succeeded: the run went on without it.'
            ELSE 'A step failed and the agent had to retry it.' END,
       CASE WHEN exhausted THEN 'When ' || coalesce('`' || tool || '`', 'a step') || ' keeps failing ("'
                                || lw_clip(coalesce(error, failure), 160) || '"), stop retrying it: fall back, escalate '
                                || 'or tell the user it could not be done.'
            ELSE 'Prevent this failure instead of retrying it: ' || lw_clip(coalesce(error, failure), 200) END,
       coalesce(tool, 'step') || ': ' || lw_mask(coalesce(error, failure)), tool,
       NULL, NULL, NULL, lw_failure_title(tool, coalesce(error, failure)), NULL, NULL
FROM explicit
