-- Helpers shared by adapters, detectors and ad-hoc queries. Created in every staging database and in
-- the lessonweaver database itself, so a detector runs the same in both places.

-- Loose truth: producers write booleans as true, "true", "yes", 1 or "1".
CREATE OR REPLACE MACRO lw_truthy(v) AS
    lower(trim(CAST(v AS VARCHAR), ' "')) IN ('true', 'yes', 'y', '1', 'on');

CREATE OR REPLACE MACRO lw_falsy(v) AS
    lower(trim(CAST(v AS VARCHAR), ' "')) IN ('false', 'no', 'n', '0', 'off');

-- Did this step fail? By its status word or its success flag.
CREATE OR REPLACE MACRO lw_failed(status, success) AS
    coalesce(lower(trim(status)) IN ('failed', 'failure', 'fail', 'error', 'errored', 'timeout', 'timed_out', 'rejected'), false)
    OR coalesce(success = false, false);

-- Did this step succeed? An explicit success word or flag, never merely the absence of failure.
CREATE OR REPLACE MACRO lw_succeeded(status, success) AS
    NOT lw_failed(status, success)
    AND (coalesce(success, false)
         OR coalesce(lower(trim(status)) IN ('success', 'succeeded', 'ok', 'passed', 'pass', 'completed', 'done'), false));

-- An outcome that claims the run went well.
CREATE OR REPLACE MACRO lw_outcome_ok(outcome) AS
    coalesce(lower(trim(outcome)) IN ('success', 'succeeded', 'ok', 'passed', 'completed', 'done', 'resolved'), false);

-- A tool name written as the content of a tool event: `get_pr_diff` or `policy_search(query=...)`.
CREATE OR REPLACE MACRO lw_tool_from_content(content) AS
    nullif(regexp_extract(content, '^\s*([A-Za-z_][A-Za-z0-9_.:/-]{0,127})\s*(\(.*)?$', 1), '');

-- Map an event type as written onto the canonical types of the lessonweaver spec; 'unknown' otherwise.
CREATE OR REPLACE MACRO lw_canonical_type(raw) AS
    CASE replace(replace(lower(trim(raw)), '-', '_'), ' ', '_')
        WHEN 'user_message' THEN 'user_message' WHEN 'user' THEN 'user_message' WHEN 'human_message' THEN 'user_message'
        WHEN 'assistant_message' THEN 'assistant_message' WHEN 'assistant' THEN 'assistant_message'
        WHEN 'ai_message' THEN 'assistant_message' WHEN 'agent_message' THEN 'assistant_message'
        WHEN 'model_call' THEN 'model_call' WHEN 'llm_call' THEN 'model_call' WHEN 'llm_response' THEN 'model_call'
        WHEN 'tool_call' THEN 'tool_call' WHEN 'tool_use' THEN 'tool_call'
        WHEN 'tool_result' THEN 'tool_result' WHEN 'tool_output' THEN 'tool_result' WHEN 'tool_response' THEN 'tool_result'
        WHEN 'error' THEN 'error' WHEN 'exception' THEN 'error'
        WHEN 'retry' THEN 'retry'
        WHEN 'human_correction' THEN 'human_correction' WHEN 'correction' THEN 'human_correction'
        WHEN 'human_feedback' THEN 'human_correction'
        WHEN 'evaluation_result' THEN 'evaluation_result' WHEN 'evaluation' THEN 'evaluation_result'
        WHEN 'eval_result' THEN 'evaluation_result'
        WHEN 'final_answer' THEN 'final_answer' WHEN 'final' THEN 'final_answer'
        WHEN 'workflow_step' THEN 'workflow_step' WHEN 'step' THEN 'workflow_step'
        ELSE 'unknown'
    END;

-- Fold what varies between occurrences of the same problem (case, punctuation, numbers, ids) so they group.
CREATE OR REPLACE MACRO lw_normalise(txt) AS
    trim(regexp_replace(
        regexp_replace(
            regexp_replace(lower(coalesce(txt, '')), '[^\s]*[0-9][^\s]*', ' # ', 'g'),
            '[^a-z#]+', ' ', 'g'),
        '\s+', ' ', 'g'));

-- Text cut to n characters on one line, with an ellipsis when cut: for quoting long content in evidence.
CREATE OR REPLACE MACRO lw_clip(txt, n) AS
    CASE WHEN length(regexp_replace(trim(txt), '\s+', ' ', 'g')) > n
         THEN rtrim(left(regexp_replace(trim(txt), '\s+', ' ', 'g'), n - 1)) || '…'
         ELSE regexp_replace(trim(txt), '\s+', ' ', 'g') END;

-- Why a required field of a record cannot serve as an id or name, or NULL when it can: missing (or null),
-- not a string (numbers pass when numbers_ok), or empty. Adapters use it for their reject reasons.
CREATE OR REPLACE MACRO lw_field_problem(doc, field, numbers_ok) AS
    CASE
      WHEN coalesce(json_type(doc, '$.' || field), 'NULL') = 'NULL' THEN 'missing required field ''' || field || ''''
      WHEN json_type(doc, '$.' || field) <> 'VARCHAR'
           AND NOT (numbers_ok AND json_type(doc, '$.' || field) IN ('BIGINT', 'UBIGINT'))
           THEN 'field ''' || field || ''' must be a string'
      WHEN trim(doc->>field) = '' THEN 'field ''' || field || ''' is empty'
    END;
