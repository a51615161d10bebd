-- Helpers shared by adapters, detectors and ad-hoc queries. Created in every staging database and in
-- the lessonweaver database itself, so a detector runs the same in both places.

-- Loose truth: producers write booleans as true, "true", "yes", 1 or "1". lw_bool says true, false
-- or NULL (no value, or a word that is neither) with one lookup: it runs on every event.
CREATE OR REPLACE MACRO lw_bool(v) AS
    MAP {'true': true, 'yes': true, 'y': true, '1': true, 'on': true,
         'false': false, 'no': false, 'n': false, '0': false, 'off': false}[lower(trim(CAST(v AS VARCHAR), ' "'))];

-- Is v one of the true words (one of the false words)? NULL when v is NULL, false for any other word.
CREATE OR REPLACE MACRO lw_truthy(v) AS
    coalesce(lw_bool(v), CASE WHEN v IS NOT NULL THEN false END);

CREATE OR REPLACE MACRO lw_falsy(v) AS
    NOT coalesce(lw_bool(v), CASE WHEN v IS NOT NULL THEN true END);

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
-- A type already written canonically (most are) skips the folding of case, spaces and dashes.
CREATE OR REPLACE MACRO lw_canonical_type(raw) AS
    CASE WHEN raw IN ('user_message', 'assistant_message', 'model_call', 'tool_call', 'tool_result', 'error',
                      'retry', 'human_correction', 'evaluation_result', 'final_answer', 'workflow_step') THEN raw
    ELSE CASE replace(replace(lower(trim(raw)), '-', '_'), ' ', '_')
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
    END END;

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

-- An ISO-8601 time as a UTC timestamp: an offset (`Z`, `+02:00`) is honoured; a time without one is
-- taken as UTC. NULL when the text is no time.
CREATE OR REPLACE MACRO lw_utc(txt) AS
    CASE WHEN regexp_matches(txt, '(Z|[+-]\d\d:?\d\d)$') THEN timezone('UTC', try_cast(txt AS TIMESTAMPTZ))
         ELSE try_cast(txt AS TIMESTAMP) END;

-- The text of a chat message's content: a string as it is; a list of parts (OpenAI `text` /
-- `input_text` / `output_text`, Anthropic `text` blocks, bare strings) joined by blank lines, other
-- parts (images, tool calls and results) left out. NULL when there is no text.
CREATE OR REPLACE MACRO lw_content_text(content) AS
    CASE json_type(content)
        WHEN 'VARCHAR' THEN nullif(content->>'$', '')
        WHEN 'ARRAY' THEN nullif(array_to_string(list_filter(list_transform(json_extract(content, '$[*]'),
            lambda p: CASE WHEN json_type(p) = 'VARCHAR' THEN p->>'$'
                           WHEN coalesce(p->>'type', 'text') IN ('text', 'input_text', 'output_text') THEN p->>'text' END),
            lambda t: t IS NOT NULL AND t <> ''), chr(10) || chr(10)), '')
    END;
