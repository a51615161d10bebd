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
           -- who failed: the host the message names, else the tool, else the model provider if it was the
           -- model's call, else a service the message does not name (a storage quota is not the model's)
           coalesce(nullif(regexp_extract(f.message, 'https?://([A-Za-z0-9.-]+)', 1), ''), f.tool_name,
                    CASE WHEN f.provider_failure THEN coalesce(p.name, 'the model provider') END,
                    'a service') AS provider
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
       CASE c.kind
         WHEN 'auth' THEN 'The credentials for ' || c.provider || ' were rejected.'
         WHEN 'quota' THEN upper(c.provider[1]) || c.provider[2:] || ' refused the request for a quota or rate limit.'
         WHEN 'model_unavailable' THEN 'The model or endpoint at ' || c.provider || ' is not available.'
         WHEN 'provider' THEN upper(c.provider[1]) || c.provider[2:] || ' failed the request.'
         ELSE upper(c.provider[1]) || c.provider[2:] || ' could not be reached.'
       END AS problem,
       'Operators: ' || CASE c.kind
         WHEN 'auth' THEN 'renew or rotate the key for ' || c.provider || ' (it was rejected: "' || lw_clip(c.message, 120)
                          || '") and alert on authentication failures before the nightly run.'
         WHEN 'quota' THEN 'raise the quota for ' || c.provider || ' or add backoff and a fallback ("' || lw_clip(c.message, 120) || '").'
         WHEN 'model_unavailable' THEN 'update the configured model or endpoint for ' || c.provider
                                       || ': it is retired or unknown ("' || lw_clip(c.message, 120) || '").'
         WHEN 'provider' THEN 'watch ' || c.provider || '''s status and retry with backoff ("' || lw_clip(c.message, 120) || '").'
         ELSE 'check the connection to ' || c.provider || ' and its status, and retry with backoff ("'
              || lw_clip(c.message, 120) || '").'
       END AS lesson,
       c.kind || ' | ' || c.provider AS signature, c.provider AS tool,
       'The environment failed the agent: ' || replace(c.kind, '_', ' ') || ' at ' || c.provider AS title
FROM classified c
WHERE c.kind IS NOT NULL
