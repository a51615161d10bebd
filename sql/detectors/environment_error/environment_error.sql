-- id: environment_error
-- title: The environment failed the agent
-- severity: medium
-- category: environment
-- description: A failure the agent cannot fix: a rejected or expired key (401, invalid API key), a quota
--   or rate limit (429, overloaded), a retired or unknown model or endpoint, or the model provider out of
--   reach (connection refused, timeouts, 5xx on a model call), a usage limit or credit balance reached, or
--   any failure its producer records as the model provider's (an API error record). A lesson for operators, not for the
--   agent, ranked below agent mistakes; one problem with one provider is one lesson however many tasks it
--   hit. Severity medium when nothing after it recovered the run, low when it did (the model answering
--   again with a tool call or words that are not an error report, or the same tool succeeding) and the
--   run's outcome is not a failure.
WITH failures AS (
    SELECT e.trace_id, e.event_id, e.seq, e.type, e.tool_name, e.raw_type,
           coalesce(nullif(trim(e.content), ''), e.status, e.raw_type) AS message,
           lw_provider_failure(e.type, e.raw_type, e.tool_name, e.content, e.actor) AS provider_failure,
           e.actor = 'provider' AS recorded
    FROM events e
    WHERE e.type = 'error' OR lw_failed(e.status, e.success)
),
-- The model provider a trace's model calls name, if they do.
providers AS (
    SELECT trace_id, any_value(coalesce(metadata->>'provider', extra->>'provider', metadata->>'gen_ai.system',
                                        metadata->>'gen_ai.provider.name', metadata->>'ai.model.provider')) AS name
    FROM events WHERE type = 'model_call' GROUP BY trace_id
),
classified AS (
    SELECT f.*, coalesce(lw_environment_class(f.message, f.provider_failure),
                         CASE WHEN f.recorded THEN 'provider' END) AS kind,
           -- who failed (retry reads a refused tool's the same way: one cause, one lesson)
           lw_environment_party(f.message, f.tool_name, f.provider_failure, p.name) AS provider
    FROM failures f LEFT JOIN providers p USING (trace_id)
)
SELECT c.trace_id, c.event_id, c.seq,
       c.kind || ' (' || c.provider || '): ' || lw_clip(c.message, 240) AS evidence,
       CASE WHEN NOT EXISTS (SELECT 1 FROM traces t WHERE t.trace_id = c.trace_id AND lw_failed(t.outcome, NULL))
             AND EXISTS (
                SELECT 1 FROM events later
                WHERE later.trace_id = c.trace_id AND later.seq > c.seq
                  AND ((c.tool_name IS NOT NULL AND later.tool_name = c.tool_name AND lw_succeeded(later.status, later.success))
                       -- the model answered again: a tool call it asked for, or words that are not an error report
                       OR (c.tool_name IS NULL AND NOT lw_failed(later.status, later.success)
                           AND (later.type = 'tool_call'
                                OR (later.type IN ('assistant_message', 'final_answer')
                                    AND NOT regexp_matches(coalesce(later.content, ''), '(?i)\berror\b|exception|failed'))))))
            THEN 'low' END AS severity,
       lw_environment_problem(c.kind, c.provider) AS problem,
       lw_environment_rule(c.kind, c.provider, c.message) AS lesson,
       c.kind || ' | ' || c.provider AS signature, c.provider AS tool,
       'The environment failed the agent: ' || replace(c.kind, '_', ' ') || ' at ' || c.provider AS title
FROM classified c
WHERE c.kind IS NOT NULL
