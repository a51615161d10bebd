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

-- A text with each redaction marker's salted hash left out (`[SECRET:github_token#3f9a0c1d]` is
-- `[SECRET:github_token]`, sql/stage/redact.sql): what the same text says in any database.
CREATE OR REPLACE MACRO lw_unmarked(txt) AS
    CASE WHEN contains(txt, '[SECRET:') THEN regexp_replace(txt, '(\[SECRET:[a-z0-9_]+)#[0-9a-f]{8}\]', '\1]', 'g') ELSE txt END;

-- Text cut to n characters on one line, with an ellipsis when cut: for quoting long content in evidence.
CREATE OR REPLACE MACRO lw_clip(txt, n) AS
    -- the text on one line, worked out once (bound to `t` by a one-element list): `txt` is often itself a
    -- long expression, and written out three times it made every query that clips a text slow to plan
    list_transform([regexp_replace(trim(txt), '\s+', ' ', 'g')],
                   lambda t: CASE WHEN length(t) > n THEN rtrim(left(t, n - 1)) || '…' ELSE t END)[1];

-- What kind of JSON value a field held, from its text as a typed parse kept it (a struct field of type
-- JSON keeps the value's own text; a JSON null, like a missing field, is NULL): its first character says,
-- so no second pass over the record asks json_type. Every number is 'DOUBLE'.
CREATE OR REPLACE MACRO lw_json_kind(v) AS
    CASE WHEN v IS NOT NULL THEN CASE left(v, 1) WHEN '"' THEN 'VARCHAR' WHEN '{' THEN 'OBJECT' WHEN '[' THEN 'ARRAY'
                                                 WHEN 't' THEN 'BOOLEAN' WHEN 'f' THEN 'BOOLEAN' ELSE 'DOUBLE' END END;

-- Why a required field of a record cannot serve as an id or name, or NULL when it can: missing (or null),
-- not a string (numbers pass when numbers_ok), or empty. Adapters use it for their reject reasons. It
-- takes the field's value as a typed parse kept it (its JSON text; NULL when missing or null), so the
-- record is not parsed again for each field.
CREATE OR REPLACE MACRO lw_value_problem(v, field, numbers_ok) AS
    CASE
      WHEN v IS NULL THEN 'missing required field ''' || field || ''''
      WHEN json_type(v) <> 'VARCHAR' AND NOT (numbers_ok AND json_type(v) IN ('BIGINT', 'UBIGINT'))
           THEN 'field ''' || field || ''' must be a string'
      WHEN trim(v->>'$') = '' THEN 'field ''' || field || ''' is empty'
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

-- What kind of environment problem a failure's text names, or NULL: `auth` (a rejected or expired key),
-- `quota` (rate limits, quotas, an overloaded provider) and `model_unavailable` (a retired or unknown model
-- or endpoint) wherever they come from; `network` (connections refused or reset, timeouts, 5xx) only
-- when the model provider failed (`provider`: a model call, an API error of the agent's own runtime, or
-- a message naming a provider's API), since a tool's 500 is the agent's to retry or route around.
CREATE OR REPLACE MACRO lw_environment_class(txt, provider) AS
    CASE
      WHEN regexp_matches(coalesce(txt, ''), '(?i)\b401\b|\b403\s+forbidden|\bunauthori[sz]ed\b|unauthenticated|authentication[ _-]?(error|failed|failure)|invalid[ _-]?(x-)?api[ _-]?key|incorrect api key|api[ _-]?key\b[^.]{0,40}\b(invalid|expired|revoked|not valid|missing)|\b(expired|invalid|revoked)\s+(token|credentials?|api key|access key|key)\b|\b(access token|api key|credentials?|token)\s+(has\s+)?(expired|been revoked)')
           THEN 'auth'
      WHEN regexp_matches(coalesce(txt, ''), '(?i)\b429\b|rate[ _-]?limit|too many requests|\bquota\b|insufficient[ _]quota|resource[ _]?exhausted|\boverloaded\b|\b529\b|usage[ _-]?limit|hit your [a-z ]*limit|out of (extra )?usage|credit balance is too low|(model|api|server) is (currently )?at capacity|experiencing high demand')
           THEN 'quota'
      WHEN regexp_matches(coalesce(txt, ''), '(?i)\b(model|deployment|engine)\b[^\n]{0,80}?\b(not found|does not exist|deprecated|decommissioned|retired|no longer (available|supported))|no such model|unknown model|model_not_found|invalid model')
           THEN 'model_unavailable'
      WHEN coalesce(provider, false)
           AND regexp_matches(coalesce(txt, ''), '(?i)connection ?(refused|reset|error|aborted|closed)|connectionrefused|failedtoopensocket|econn(reset|refused)|etimedout|enotfound|getaddrinfo|name resolution|socket hang ?up|network (error|is unreachable)|service unavailable|bad gateway|gateway time-?out|\b50[0234]\b|timed? ?out\b|deadline exceeded')
           THEN 'network'
    END;

-- Is this failure the model provider's rather than a tool's? One its adapter says is the provider's
-- (actor `provider`: Claude Code's api_error records and API error messages, Codex's error events), a
-- model call, an API error the agent's own runtime reported, or a message naming a model provider's API.
CREATE OR REPLACE MACRO lw_provider_failure(type, raw_type, tool_name, txt, actor) AS
    coalesce(actor = 'provider', false) OR type = 'model_call' OR coalesce(raw_type, '') ILIKE '%api_error%' OR coalesce(raw_type, '') ILIKE '%llm%'
    OR regexp_matches(coalesce(txt, ''), '(?i)api\.(openai|anthropic|mistral|cohere|groq)\.|generativelanguage\.googleapis|aiplatform\.googleapis|bedrock|openrouter|/v1/(messages|chat/completions|responses)\b|\b(openai|anthropic|gemini|vertex ai|bedrock) api\b')
    OR (type = 'error' AND tool_name IS NULL AND regexp_matches(coalesce(txt, ''), '(?i)\b(api|model|llm|provider)\b'));

-- The words of a name or a text, for matching actions: `update_reservation_flights`, `updateTicket` and
-- `git commit -m` give [update, reservation, flights], [update, ticket] and [git, commit, m].
CREATE OR REPLACE MACRO lw_words(txt) AS
    list_filter(string_split_regex(lower(regexp_replace(coalesce(txt, ''), '([a-z0-9])([A-Z])', '\1_\2', 'g')), '[^a-z0-9]+'),
                lambda w: w <> '');

-- Action classes: the past-tense verbs an agent claims them with, and the word stems of tool names (or of
-- the command a shell tool ran) that perform them. A state-changing action has a class; a lookup has none.
-- A stem of four letters or more matches the words it starts (updat: update, updates); a shorter one only
-- itself and its -s, -ed, -ing forms (add: adds, added; not address).
CREATE OR REPLACE MACRO lw_action_classes() AS [
    {'class': 'update',   'verbs': 'updated|modified|changed|edited|adjusted|upgraded|downgraded|rebooked|amended|rescheduled|renamed|moved',
     'stems': ['updat', 'modif', 'chang', 'edit', 'adjust', 'upgrad', 'downgrad', 'rebook', 'amend', 'reschedul', 'renam', 'move', 'patch', 'writ', 'save', 'apply', 'put', 'set']},
    {'class': 'create',   'verbs': 'created|added|registered|filed|submitted|placed|booked|reserved|scheduled|issued|generated|raised|written|wrote',
     'stems': ['creat', 'add', 'regist', 'submit', 'place', 'book', 'reserve', 'schedul', 'issue', 'generat', 'raise', 'new', 'insert', 'writ', 'make', 'touch']},
    {'class': 'send',     'verbs': 'sent|emailed|notified|messaged|forwarded|replied|posted|published',
     'stems': ['send', 'sent', 'email', 'mail', 'notif', 'messag', 'forward', 'reply', 'post', 'publish', 'sms', 'slack', 'comment']},
    {'class': 'cancel',   'verbs': 'cancelled|canceled|voided|revoked|terminated',
     'stems': ['cancel', 'void', 'revok', 'terminat', 'stop', 'kill']},
    {'class': 'refund',   'verbs': 'refunded|credited|reimbursed|compensated',
     'stems': ['refund', 'credit', 'reimburs', 'compensat']},
    {'class': 'escalate', 'verbs': 'escalated|transferred|assigned|routed',
     'stems': ['escalat', 'transfer', 'assign', 'route', 'handoff']},
    {'class': 'delete',   'verbs': 'deleted|removed|archived|closed|purged|cleared|disabled',
     'stems': ['delet', 'remov', 'archiv', 'close', 'purg', 'clear', 'drop', 'disabl', 'rm']},
    {'class': 'merge',    'verbs': 'merged|deployed|pushed|committed|released|reverted',
     'stems': ['merg', 'deploy', 'push', 'commit', 'releas', 'rollback', 'revert']},
    {'class': 'pay',      'verbs': 'paid|charged|billed',
     'stems': ['pay', 'payment', 'charg', 'bill']}
];

-- Every verb of lw_action_classes() as one alternation. A constant: a regular expression built from it
-- is compiled once per query, where one built from a column is compiled again for every row.
CREATE OR REPLACE MACRO lw_action_verbs() AS
    array_to_string(list_transform(lw_action_classes(), lambda c: c.verbs), '|');

-- The three shapes of a claim of an action done (unverified_claim), each ending with the verb it claims,
-- on lower-cased text: "i have now updated", "has been updated", "i've fixed x and committed". Constants,
-- like lw_action_verbs(). A match within a sentence is a match within the whole message, so a message
-- none of them matches holds no claim and need not be cut into sentences.
CREATE OR REPLACE MACRO lw_claim_done() AS
    '\b(?:i|we)(?:''ve|''d| have| has)?\s+(?:(?:now|just|already|successfully|also|then|finally|both|gone ahead and)\s+)*(?:'
    || lw_action_verbs() || ')\b';
CREATE OR REPLACE MACRO lw_claim_been() AS
    '\b(?:has|have)\s+(?:now\s+|just\s+|already\s+|also\s+)?been\s+(?:(?:successfully|now|fully)\s+)?(?:'
    || lw_action_verbs() || ')\b';
CREATE OR REPLACE MACRO lw_claim_second() AS
    '\b(?:i|we)(?:''ve| have)\s+(?:\w+\s+)?\w+ed\b[^,;]{0,100}?\s(?:and|then)\s+(?:also\s+|then\s+)?(?:'
    || lw_action_verbs() || ')\b';
-- the words the last two shapes need, found by a substring test several times faster than the pattern
CREATE OR REPLACE MACRO lw_may_claim_been(lowered) AS contains(lowered, 'been');
CREATE OR REPLACE MACRO lw_may_claim_second(lowered) AS
    contains(lowered, 'i''ve') OR contains(lowered, 'we''ve') OR contains(lowered, 'i have') OR contains(lowered, 'we have');

CREATE OR REPLACE MACRO lw_stem_matches(w, s) AS
    w = s OR (length(s) >= 4 AND starts_with(w, s)) OR w IN (s || 's', s || 'ed', s || 'd', s || 'ing', s || 'es');

-- The action class of a tool call, or NULL for a tool that reads (its name starts with get, list, search,
-- find, read and the like). By the tool's name; for a shell tool (bash, shell, exec, a terminal), by the
-- command it ran.
CREATE OR REPLACE MACRO lw_lookup_tool(tool_name) AS
    lw_words(tool_name)[1] IN ('get', 'list', 'search', 'find', 'fetch', 'read', 'lookup', 'query', 'view',
                               'show', 'check', 'describe', 'retrieve', 'count', 'calculate', 'think',
                               'validate', 'verify', 'compute', 'estimate', 'preview', 'grep', 'glob', 'web',
                               'browse', 'inspect', 'load', 'download', 'lookup', 'status', 'ask', 'todo');

-- The stems of one action class as a regular expression over words set between spaces (lw_stem_matches
-- for each stem). Called with a constant class, it is a constant: compiled once per query.
CREATE OR REPLACE MACRO lw_stem_pattern(cls) AS
    ' (' || array_to_string(list_transform(list_filter(lw_action_classes(), lambda c: c.class = cls)[1].stems,
                                          lambda s: CASE WHEN length(s) >= 4 THEN s || '[a-z0-9]*'
                                                         ELSE s || '(s|ed|d|ing|es)?' END), '|') || ') ';

-- The first class of lw_action_classes() (in its order) a stem of which the tool's name, or a shell's
-- command, has among its words. One regular expression per class over the words, not a stem test per
-- word: a long command has hundreds of words.
CREATE OR REPLACE MACRO lw_tool_action(tool_name, command) AS
    CASE WHEN lw_lookup_tool(tool_name) THEN NULL ELSE
    list_transform([' ' || array_to_string(CASE WHEN list_has_any(lw_words(tool_name), ['bash', 'shell', 'exec', 'terminal', 'command', 'sh', 'run'])
                                                THEN lw_words(command) ELSE lw_words(tool_name) END, ' ') || ' '],
        lambda t: CASE WHEN regexp_matches(t, lw_stem_pattern('update')) THEN 'update'
                       WHEN regexp_matches(t, lw_stem_pattern('create')) THEN 'create'
                       WHEN regexp_matches(t, lw_stem_pattern('send')) THEN 'send'
                       WHEN regexp_matches(t, lw_stem_pattern('cancel')) THEN 'cancel'
                       WHEN regexp_matches(t, lw_stem_pattern('refund')) THEN 'refund'
                       WHEN regexp_matches(t, lw_stem_pattern('escalate')) THEN 'escalate'
                       WHEN regexp_matches(t, lw_stem_pattern('delete')) THEN 'delete'
                       WHEN regexp_matches(t, lw_stem_pattern('merge')) THEN 'merge'
                       WHEN regexp_matches(t, lw_stem_pattern('pay')) THEN 'pay' END)[1] END;

-- The command or arguments a tool call ran with, as text: for matching what it did and comparing calls.
CREATE OR REPLACE MACRO lw_call_args(metadata, extra, content) AS
    coalesce(CAST(coalesce(metadata->'arguments', metadata->'input', metadata->'args', metadata->'tool_params',
                           extra->'arguments', extra->'args', extra->'input', extra->'tool_params') AS VARCHAR), content);


-- Text an agent framework writes in the user's place: a tool observation wrapped as a user turn, a
-- format-error or timeout template, a step-limit or continue notice, injected context. Not a person
-- speaking, so never a human correction. The prefixes are the templates of the producers we read
-- (mini-swe-agent, SWE-agent, OpenHands, Claude Code, Codex; docs/formats.md), all anchored at the start.
-- Only a fallback, for a transcript whose producer is not known: an adapter that knows its producer says
-- who wrote each text from the producer's structure (its `roles` header) and sets events.actor.
CREATE OR REPLACE MACRO lw_harness_text(txt) AS
    regexp_matches(coalesce(txt, ''), '^\s*(<returncode>|<output>|<observation>|OBSERVATION:|Observation: |EXECUTION RESULT of \[|\[Command finished with exit code|\[The command (has no new output|timed out|completed with exit code)|<tool_result|<function_results>|<local-command-(stdout|stderr)>|<bash-(stdout|stderr)>|Caveat: The messages below were generated by the user while running local commands|<task-notification>|<system-reminder>|<user-prompt-submit-hook>|<tick>|<teammate-message|Another Claude session sent a message|This session is being continued from a previous conversation|Your response was cut off because it exceeded the output token limit|Operation stopped by hook|<environment_context>|<user_instructions>|<INSTRUCTIONS>|# AGENTS\.md instructions|<skill>|<subagent_notification>|<user_action>|Please always provide EXACTLY ONE action|Format error:|Tool call error:|Your output was not formatted correctly|Your last output (did not use any tool calls|included multiple tool calls)|Your action could not be parsed|We did not detect the right number of bash code blocks|No bash code blocks were detected|Your output could not be parsed as JSON|It seems like something went wrong with your output|The command you provided was not recognized|Your bash command contained syntax errors|Operation ''[^'']*'' is not supported by this environment|Your previous response reached the output token limit|The last command <command>|The command ''[^'']*'' was cancelled because it took more than|Your command ran successfully and did not produce any output|<warning>\s*(Your last command|The output of your last command|The command '')|Please continue working on the task|Exit due to |You have \d+ (steps?|turns?|iterations?) (left|remaining))')
    OR regexp_matches(coalesce(txt, ''), '\[Error occurred in processing last action\]\s*$');

-- Who acted in an event: the word its adapter gives from the producer's structure (events.actor: human,
-- counterpart, harness, parent, agent, tool, provider; docs/tables.md), else what the type says: a person
-- for user turns and corrections, the tool for results, the harness for workflow steps and evaluations,
-- the agent for the rest.
CREATE OR REPLACE MACRO lw_actor(type, actor) AS
    coalesce(actor, CASE type WHEN 'user_message' THEN 'human' WHEN 'human_correction' THEN 'human'
                              WHEN 'tool_result' THEN 'tool' WHEN 'workflow_step' THEN 'harness'
                              WHEN 'evaluation_result' THEN 'harness' ELSE 'agent' END);

-- Did a person speak or act: the person operating the agent (`human`) or one it serves (`counterpart`: a
-- customer, a simulated user)? Not the harness, a parent agent, the agent or a tool. Takes an actor as
-- lw_actor gives it.
CREATE OR REPLACE MACRO lw_person(actor) AS
    coalesce(actor IN ('human', 'counterpart'), false);

-- Text as the text tests read it: lower-cased, with the typographic apostrophes (’ ‘ ʼ, which phones,
-- word processors and chat models write) as the plain one, so "doesn’t work" reads as "doesn't work".
-- (Three substring tests cost what lower() does; a pattern over every text, four times that.)
CREATE OR REPLACE MACRO lw_lowered(txt) AS
    CASE WHEN contains(txt, '’') OR contains(txt, '‘') OR contains(txt, 'ʼ')
         THEN regexp_replace(lower(txt), '[’‘ʼ]', '''', 'g') ELSE lower(coalesce(txt, '')) END;

-- A person objecting to what the agent just did or said ("that's not what I asked", "you didn't...", "why
-- did you...", "undo that"): human_correction's inferred corrections, and the sign that an action needed
-- the user's say. Lower-cased text.
CREATE OR REPLACE MACRO lw_objection(said) AS
    regexp_matches(said, '\b(that''?s not what i (asked|wanted|meant|said)|not what i (asked|wanted|meant)|i (said|told you|already (said|told|gave|asked|mentioned))|you (didn''?t|did not|forgot|missed|misunderstood|ignored|were supposed to)|that''?s (wrong|incorrect|not right|not correct)|(this|that|it) is (wrong|incorrect|not right)|why did you|i didn''?t (ask|want|say)|i never (asked|said|wanted)|please undo|undo (that|it|this)|revert (that|it|this)|you should (know|have known|have)|why (won''?t|wouldn''?t|didn''?t|don''?t|can''?t|aren''?t) you)\b')
    -- "you booked the wrong one", not "I don't want to give you the wrong idea" (the person's own mistake)
    OR (regexp_matches(said, '\byou\b[^.?!]{0,40}\b(wrong|incorrect|mistake)\b')
        AND NOT regexp_matches(said, '\b(give|giving|gave|tell|telling|told|send|sending|sent|show|showing)\s+you\s+(the |a |any )?(wrong|incorrect)\b'));

-- The policy a trace ran under, when it carries one: a system prompt (traces.extra.system) or policy text
-- (traces.extra.policy, metadata.policy).
CREATE OR REPLACE MACRO lw_policy(extra, metadata) AS
    coalesce(extra->>'policy', metadata->>'policy', extra->>'system', metadata->>'system_prompt');

-- Does a policy ask the agent to get the user's confirmation before it acts?
CREATE OR REPLACE MACRO lw_asks_confirmation(policy) AS
    regexp_matches(coalesce(policy, ''), '(?i)\b(explicit|express|written|verbal)\s+(user\s+)?(confirmation|consent|approval)|\b(obtain|get|ask for|request|require|wait for|receive|seek|have)\b[^.]{0,60}\b(confirmation|confirm|consent|approval)\b|\bconfirm\b[^.]{0,40}\b(with|from)\s+the\s+(user|customer|caller)|\b(user|customer|caller)\s+(must|has to|needs to|should)\s+(confirm|approve|agree)');

-- Is an event a handover to a human: a transfer tool (transfer_to_human_agents, escalate_to_human,
-- handoff_to_operator), or the agent saying it is transferring the user ("I'm transferring you to a human
-- agent"; an offer to transfer is not one)? Each test looks for its words cheaply first: most names and
-- messages have none of them.
CREATE OR REPLACE MACRO lw_handover(type, tool_name, content) AS
    (type = 'tool_call'
     AND regexp_matches(tool_name, '(?i)transfer|escalate|hand|route|forward')
     AND list_has_any(lw_words(tool_name), ['human', 'humans', 'operator', 'person', 'agent', 'agents', 'staff', 'support'])
     AND list_has_any(lw_words(tool_name), ['transfer', 'escalate', 'handoff', 'hand', 'route', 'forward']))
    OR (type IN ('assistant_message', 'final_answer')
        AND regexp_matches(content, '(?i)transfer|escalat|connect|hand')
        AND regexp_matches(lw_lowered(content),
                           '\b(i''m|i am|i''ll|i will|i''ve|i have|let me|we''re|we are|we''ll|we will)\s+(now\s+)?(transferr?ing|transferr?ed|transfer|escalating|escalated|escalate|connecting|connect|handing|hand)\s+(you|this|your \w+)\s+(over\s+)?(to|with)\s+(a |an |our )?(human|live|real)\b'));

-- A failure of the environment rather than of the agent's step: one its producer records as the model
-- provider's, a failed model call, or one whose text names a key, quota or model problem (anywhere) or an
-- outage (of the provider). Retries of these are the runtime's business, not a lesson for the agent.
CREATE OR REPLACE MACRO lw_environment_failure(type, raw_type, tool_name, txt, actor) AS
    coalesce(actor = 'provider', false) OR type = 'model_call'
    OR lw_environment_class(txt, lw_provider_failure(type, raw_type, tool_name, txt, actor)) IS NOT NULL;

-- An environment failure as a cause for operators, read the same by every detector that finds one
-- (environment_error, and retry where the agent called the refused tool again), so that both weave into one
-- lesson: who failed (the host the text names, else the tool, else the model provider if it was the model's
-- call, else a service the text does not name: a storage quota is not the model's), what went wrong, what
-- operators should do.
CREATE OR REPLACE MACRO lw_environment_party(txt, tool_name, provider_failure, provider_name) AS
    coalesce(nullif(regexp_extract(txt, 'https?://([A-Za-z0-9.-]+)', 1), ''), tool_name,
             CASE WHEN provider_failure THEN coalesce(provider_name, 'the model provider') END, 'a service');

CREATE OR REPLACE MACRO lw_environment_problem(kind, party) AS
    CASE kind
      WHEN 'auth' THEN 'The credentials for ' || party || ' were rejected.'
      WHEN 'quota' THEN upper(party[1]) || party[2:] || ' refused the request for a quota or rate limit.'
      WHEN 'model_unavailable' THEN 'The model or endpoint at ' || party || ' is not available.'
      WHEN 'provider' THEN upper(party[1]) || party[2:] || ' failed the request.'
      ELSE upper(party[1]) || party[2:] || ' could not be reached.'
    END;

CREATE OR REPLACE MACRO lw_environment_rule(kind, party, txt) AS
    'Operators: ' || CASE kind
      WHEN 'auth' THEN 'renew or rotate the key for ' || party || ' (it was rejected: "' || lw_clip(txt, 120)
                       || '") and alert on authentication failures before the nightly run.'
      WHEN 'quota' THEN 'raise the quota for ' || party || ' or add backoff and a fallback ("' || lw_clip(txt, 120) || '").'
      WHEN 'model_unavailable' THEN 'update the configured model or endpoint for ' || party
                                    || ': it is retired or unknown ("' || lw_clip(txt, 120) || '").'
      WHEN 'provider' THEN 'watch ' || party || '''s status and retry with backoff ("' || lw_clip(txt, 120) || '").'
      ELSE 'check the connection to ' || party || ' and its status, and retry with backoff ("' || lw_clip(txt, 120) || '").'
    END;

-- Is this tool a shell, so that what it ran (its command) says more than its name?
CREATE OR REPLACE MACRO lw_shell_tool(tool_name) AS
    list_has_any(lw_words(tool_name), ['bash', 'shell', 'sh', 'zsh', 'exec', 'terminal', 'command', 'cmd', 'powershell']);

-- The command a shell tool ran, as text, from its arguments: {"command": "..."}, {"command": ["bash",
-- "-lc", "..."]}, {"cmd": ...}; other arguments (or plain text) as they are.
CREATE OR REPLACE MACRO lw_command(args) AS
    CASE WHEN json_valid(args) AND json_type(args) = 'OBJECT' THEN
        coalesce(
            CASE json_type(args, '$.command')
              WHEN 'VARCHAR' THEN args->>'command'
              WHEN 'ARRAY' THEN CASE WHEN len(json_extract_string(args, '$.command[*]')) >= 3
                                          AND json_extract_string(args, '$.command[1]') IN ('-lc', '-c', '-l', '/c', '-Command')
                                     THEN json_extract_string(args, '$.command[*]')[-1]
                                     ELSE array_to_string(json_extract_string(args, '$.command[*]'), ' ') END END,
            args->>'cmd', args->>'script', args)
         ELSE args END;

-- What a command runs, for grouping: the program of its last working segment (a chain's goal, after
-- `cd`, `export`, `git add`: environment assignments and `sudo` dropped), with the subcommand of a
-- multi-command tool (`git push`, `npm test`) and the module of `python -m` (`pytest`). A heredoc's body
-- is no segment.
CREATE OR REPLACE MACRO lw_program(cmd) AS (
    WITH seg AS (
        SELECT string_split_regex(trim(regexp_replace(coalesce(
                   list_filter(string_split_regex(regexp_replace(regexp_replace(coalesce(cmd, ''),
                                                      '<<-?\s*[''"]?(\w+)[''"]?.*$', '', 's'),  -- a heredoc's body
                                                      '"[^"]*"|''[^'']*''', '""', 'g'),  -- quoted text: no separators
                                                  '\s*(&&|\|\||;|\n)\s*'),
                               lambda s: trim(s) <> '' AND NOT regexp_matches(s, '^\s*(cd|export|source|set|pushd|popd|echo|printf|true|false|exit|:|\.|#)(\s|$)'))[-1],
                   ''), '^\s*((\w+=\S*|sudo|time|env|nohup|exec|command)\s+)*', '')), '\s+') AS w
    )
    SELECT CASE
             WHEN w[1] IS NULL OR w[1] = '' THEN NULL
             WHEN regexp_extract(w[1], '([^/]+)$', 1) IN ('python', 'python3', 'py') AND w[2] = '-m' AND len(w) >= 3 THEN w[3]
             WHEN regexp_extract(w[1], '([^/]+)$', 1) IN ('git', 'npm', 'yarn', 'pnpm', 'pip', 'pip3', 'uv', 'poetry', 'cargo', 'go',
                                                          'make', 'docker', 'kubectl', 'gh', 'npx', 'bundle', 'dotnet', 'mvn',
                                                          'gradle', 'brew', 'apt', 'apt-get', 'conda', 'terraform', 'helm', 'claude',
                                                          'codex', 'node', 'python', 'python3', 'ruby', 'bash', 'sh')
                  AND len(w) >= 2 AND NOT starts_with(w[2], '-') AND NOT starts_with(w[2], '<')
                  THEN regexp_extract(w[1], '([^/]+)$', 1) || ' ' || regexp_extract(w[2], '([^/]+)$', 1)
             ELSE regexp_extract(w[1], '([^/]+)$', 1)
           END
    FROM seg);

-- What a tool call is about, for grouping its failures: the program a shell ran, else the tool's name.
CREATE OR REPLACE MACRO lw_tool_key(tool_name, command) AS
    CASE WHEN lw_shell_tool(tool_name) THEN coalesce(nullif(lw_program(command), ''), tool_name) ELSE tool_name END;

-- Text with what varies between occurrences of one cause masked: URLs, quoted values, paths, ids and
-- hashes, numbers; lower case, one line, at most 200 characters. `jest: command not found` stays itself.
CREATE OR REPLACE MACRO lw_mask(txt) AS
    left(trim(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        regexp_replace(lower(coalesce(txt, '')), '^\s*(e\s+|error:\s*|fatal:\s*|err:\s*)', ''),
        'https?://\S+', '<url>', 'g'),
        '''[^'']*''|"[^"]*"|`[^`]*`', '<q>', 'g'),
        '(\S*[/\\]\S+)', '<path>', 'g'),
        '\b[0-9a-f]{7,}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b', '<id>', 'g'),
        '\d+', '#', 'g'),
        '\s+', ' ', 'g')), 200);

-- The line of a failure's output that says what went wrong: a test's `E   SomeError: ...` line, a
-- Python exception line, `command not found`, `No such file or directory`, an `error:`/`fatal:` line;
-- else a line that speaks of failing; else the first line. Wrappers are dropped first (Codex's `failed in
-- sandbox ... stdout: ..., stderr: `, a shell's `bash: line 3:`), warnings (`DeprecationWarning: ...`,
-- wherever the line names it) and traceback frames ranked last. Of a long output, its first 8,000 and last
-- 4,000 characters (a test run's verdict is at its end). One line, at most 300 characters.
CREATE OR REPLACE MACRO lw_error_line(txt) AS
    -- the best-scored line, the first of those: a struct's maximum compares its fields in order (an
    -- expression, not a subquery: a query that quotes several texts pays no join for each use)
    left(list_max(list_transform(
        list_filter(list_transform(string_split(
                        -- a bare label line (`ERROR:` above the message, as OpenHands' editor writes) joins the next
                        regexp_replace(replace(regexp_replace(
                                                   -- the text bound once (to `t`): `txt` is often itself a long expression
                                                   list_transform([coalesce(txt, '')], lambda t: CASE WHEN length(t) > 12000
                                                                  THEN left(t, 8000) || chr(10) || right(t, 4000) ELSE t END)[1],
                                                              '^\s*failed in sandbox .*? with execution error: .*?exit code: -?\d+, stdout: ', ''),
                                               ', stderr: ', chr(10)),
                                       '(?im)^([ \t]*(?:error|failure|failed|exception)[ \t]*:)[ \t]*\n+[ \t]*', '\1 ', 'g'), chr(10)),
                        lambda x: trim(regexp_replace(x, '^\s*(bash|sh|zsh|/bin/\w+): (-c: )?(line \d+: )?', ''))),
                    lambda x: x <> ''),
        lambda x, i: {'score': CASE
            WHEN regexp_matches(x, '^(warning|hint|note)\b|^(=|-|_|\*){3}|^Traceback \(|^File "|^at |^\^+$', 'i')
                 OR regexp_matches(x, '\b[A-Z]\w*Warning:') THEN 0
            WHEN regexp_matches(x, '^(exit code|process exited with code|command exited with)\s*:?\s*-?\d+\s*$', 'i') THEN 2
            WHEN regexp_matches(x, '^E\s+[\w.]*(Error|Exception|Exit)\b') THEN 5
            -- an exception named by its module's path, as Python and Java print one (`django.core.exceptions.AppRegistryNotReady: ...`)
            WHEN regexp_matches(x, '^[\w.]*(Error|Exception|Exit|Interrupt)\b:?') OR regexp_matches(x, '^(?:[a-z_]\w*\.)+[A-Z]\w*: ')
                 OR regexp_matches(x, 'command not found|No such file or directory|Permission denied|Could not resolve|Failed to find expected lines|invalid hunk|unknown (option|argument|command)|not recognized|cannot find|fatal:|npm ERR!|^error[:\[ ]', 'i')
                 THEN 4
            WHEN regexp_matches(x, '\b(failed|failure|error|denied|refused|invalid|unable to|cannot|timed out|not found)\b', 'i') THEN 3
            ELSE 1 END, 'first': -i, 'line': x})).line, 300);

-- What a shell call printed, as a person reads it: without what the terminal and the harness add around
-- it (OpenHands: the echo of the command as the first line, `[Python Interpreter: ...]` glued to the last
-- line, the prompt `root@host:/path # ` and `[Command finished with exit code N]`). A search that found
-- nothing printed nothing, however its result was dressed.
CREATE OR REPLACE MACRO lw_without_echo(txt, command) AS
    CASE WHEN command IS NOT NULL AND trim(split_part(txt, chr(10), 1)) = trim(command)
         THEN trim(substr(txt, length(split_part(txt, chr(10), 1)) + 2), chr(10) || ' ') ELSE txt END;
CREATE OR REPLACE MACRO lw_shell_output(txt, command) AS
    lw_without_echo(trim(regexp_replace(regexp_replace(replace(coalesce(txt, ''), chr(13), ''),
                                                       '\[Python Interpreter: [^\]\n]*\]', '', 'g'),
                                        '(?m)^(?:[\w.-]+@[\w.-]+:[^\n]*[#$] *|\[Command finished with exit code -?\d+\])$', '', 'g'),
                         chr(10) || ' '),
                    command);

-- The first line of a text, cut to n characters: a command or a quote as a rule shows it.
CREATE OR REPLACE MACRO lw_first_line(txt, n) AS
    lw_clip(split_part(trim(coalesce(txt, '')), chr(10), 1), n);

-- What worked after a failure, short, from the facts of the call that failed (facts.recovery_kind,
-- recovery, command, between, changed_files): `PYTHONPATH=. pytest -q`; `rg, sed` first, then
-- `apply_patch` again with other input (it changed README.md); the same command, once schema.json was
-- fixed; the user stepped in: "...". NULL when nothing did (or only the final answer followed).
CREATE OR REPLACE MACRO lw_what_worked(kind, recovery, command, between, changed_files) AS
    CASE
      WHEN kind = 'changed' AND lw_first_line(recovery, 140) = lw_first_line(command, 140)
           THEN coalesce('`' || between || '` first, then ', '') || '`' || lw_clip(lw_call_brief(command), 140) || '` again with other input'
                || coalesce(' (it changed ' || changed_files || ')', '')
      WHEN kind IN ('changed', 'other') THEN '`' || lw_call_brief(recovery) || '`'
      WHEN kind = 'again' THEN 'the same command, once ' || coalesce(changed_files || ' was fixed', 'the cause was fixed')
                               || coalesce(' (with `' || between || '`)', '')
      WHEN kind = 'correction' THEN 'the user stepped in: "' || lw_quote(recovery, 200) || '"'
    END;

-- A failure's rule in plain words, from its parts: the tool (or program) that failed, the line that says
-- how, and what worked after it (lw_what_worked), or that nothing was seen to.
CREATE OR REPLACE MACRO lw_failure_rule(tool, error, worked) AS
    'When `' || coalesce(tool, 'a step') || '` fails with "' || lw_clip(coalesce(error, 'an error'), 160) || '": '
    || CASE WHEN worked IS NOT NULL THEN 'what worked was ' || worked || '.'
            ELSE 'no fix was seen yet; find the cause before trying again.' END;

-- Words that say nothing of what a correction is about.
CREATE OR REPLACE MACRO lw_stopwords() AS
    ['the', 'and', 'for', 'are', 'but', 'not', 'you', 'your', 'yours', 'all', 'any', 'can', 'had', 'has', 'have',
     'was', 'were', 'will', 'would', 'should', 'could', 'this', 'that', 'these', 'those', 'with', 'from', 'into',
     'onto', 'about', 'then', 'than', 'there', 'their', 'they', 'them', 'what', 'when', 'where', 'which', 'who',
     'why', 'how', 'its', 'just', 'also', 'too', 'very', 'please', 'thanks', 'thank', 'yes', 'yeah', 'okay',
     'now', 'here', 'some', 'more', 'most', 'other', 'such', 'only', 'own', 'same', 'out', 'off', 'over', 'under',
     'again', 'once', 'did', 'does', 'doing', 'done', 'don', 'didn', 'doesn', 'isn', 'wasn', 'aren', 'won',
     'let', 'lets', 'get', 'got', 'make', 'made', 'use', 'used', 'need', 'needs', 'want', 'wanted', 'think',
     'know', 'see', 'saw', 'look', 'like', 'one', 'two', 'our', 'ours', 'him', 'her', 'his', 'she', 'being',
     'been', 'because', 'while', 'until', 'each', 'both', 'few', 'still', 'well', 'way', 'thing', 'things',
     'going', 'sure', 'really', 'actually', 'already', 'seems', 'seem', 'maybe', 'perhaps', 'ok'];

-- The words a text names (its first n content words: no stop words, and no numbers, hashes or ids, the
-- words with a digit), sorted: what a person's correction is about, as a signature that another wording
-- of it shares most of.
CREATE OR REPLACE MACRO lw_key_words(txt, n) AS
    array_to_string(list_sort(list_distinct(list_filter(
        list_filter(lw_words(txt), lambda w: length(w) >= 3 AND NOT list_contains(lw_stopwords(), w)
                                             AND NOT regexp_matches(w, '[0-9]')),
        lambda w, i: i <= n))), ' ');

-- Does a person's turn report a failure only software gives (a traceback or an `...Error:` line, a command
-- not found, a program that exits at once, a build, compile or test run that fails)? Work the agent handed
-- back failed, whatever the run recorded of how it was made. Lower-cased text.
CREATE OR REPLACE MACRO lw_software_failure(said) AS
    regexp_matches(said, 'traceback \(most recent call last\)|\b[a-z]+(error|exception): |command not found|\bexit(s|ed)? (immediately|right away)|\b(doesn''?t|does not|didn''?t|did not|won''?t|isn''?t|is not) (compile|build|pass)|\b(build|tests?|ci|compil\w*|lint\w*) (still )?(fail|fails|failed|failing|broke|breaks)\b|\bi (got|get|am getting|''m getting) (this|an? |the following )?(error|traceback|exception)');

-- A person's turn without what it only supposes: "if it doesn't work", "in case the build fails" say what
-- to do should it fail, not that it did. Lower-cased text.
CREATE OR REPLACE MACRO lw_unsupposed(said) AS
    CASE WHEN regexp_matches(said, '\b(if|in case|unless|whether)\s')
         THEN regexp_replace(said, '\b(if|in case|unless|whether)\s+(\w+\s+){0,2}?(still\s+)?(doesn''?t|does not|didn''?t|did not|won''?t|isn''?t|is not|fails?|failed|breaks?)\b', ' ', 'g')
         ELSE said END;

-- Does a person's turn report that what the agent did does not work: such a failure, or words like "it
-- still fails", "doesn't open", "you broke something" ("it's still not working" may also be a customer's
-- own line), said as having happened (lw_unsupposed)? Lower-cased text. lw_failure_words holds the words.
CREATE OR REPLACE MACRO lw_failure_words(said) AS
    lw_software_failure(said)
    OR regexp_matches(said, '\b(doesn''?t|does not|didn''?t|did not|won''?t|isn''?t|is not) (work|run|start|open|load|show|appear)|\bnot working\b|\bstill (fail|failing|fails|broken|not|missing|doesn''?t|does not|don''?t|can''?t|cannot|crash)|\byou broke\b|\bbroke (something|it|the)\b|\bnever (saw|see|shows?|appeared)\b|\bnothing (happens|happened|shows)\b');
CREATE OR REPLACE MACRO lw_reports_failure(said) AS
    lw_failure_words(lw_unsupposed(said));

-- Does a person's turn say the agent had not run or tested its own work ("why won't you run it?", "did you
-- even test it?", "you never ran the tests", "you are not adding tests")? Lower-cased text. With
-- lw_reports_failure, the two ways a person shows that the agent handed back work it had not checked.
CREATE OR REPLACE MACRO lw_asks_for_check(said) AS
    regexp_matches(said, '\bwhy (won''?t|wouldn''?t|don''?t|didn''?t|can''?t|aren''?t) you (just |even )?(run|test|try|check|verify)|\b(did|have) you (even |actually )?(run|test|tried|try|check|verif)|\byou (didn''?t|did not|never|haven''?t|have not|aren''?t|are not|weren''?t) (even |actually )?(run|test|tried|try|check|verif|adding tests|writing tests)|\bnot (adding|writing|running) (any )?tests\b|\b(without|before) (running|testing|trying) (it|this|that|them|the (code|tests?|build))\b');

-- The project a trace belongs to: the folder a coding session ran in (its cwd), else a project or
-- repository its producer names, else its source.
CREATE OR REPLACE MACRO lw_project(metadata, source) AS
    coalesce(nullif(regexp_extract(metadata->>'cwd', '([^/\\]+)[/\\]*$', 1), ''),
             metadata->>'project',
             nullif(regexp_extract(coalesce(metadata->>'repository', metadata->>'repo', ''), '([^/:]+?)(\.git)?/*$', 1), ''),
             source);

-- Where a trace ran, in a few words ("Linux, bash, sandbox workspace-write, network restricted"), from what
-- its producer recorded: the operating system (OpenTelemetry's os.type, else the convention of the working
-- directory's home: /Users/ is macOS, /home/ Linux, a drive letter Windows), the shell, the sandbox and its
-- network (Codex's environment context), the container or host. NULL when nothing is known.
CREATE OR REPLACE MACRO lw_environment(metadata) AS
    nullif(concat_ws(', ',
        coalesce(metadata->>'os', metadata->>'os.type',
                 CASE WHEN regexp_matches(coalesce(metadata->>'cwd', ''), '^/Users/') THEN 'macOS'
                      WHEN regexp_matches(coalesce(metadata->>'cwd', ''), '^/home/') THEN 'Linux'
                      WHEN regexp_matches(coalesce(metadata->>'cwd', ''), '^[A-Za-z]:[\\/]') THEN 'Windows' END),
        metadata->>'shell',
        'sandbox ' || (metadata->>'sandbox'),
        'network ' || (metadata->>'network'),
        'container ' || (metadata->>'container.name')), '');

-- A rule said of where it holds: "In OpenPrintKit (Linux, bash): When `pytest` fails ...", "On macOS: ...".
CREATE OR REPLACE MACRO lw_situated(rule, workspace, environment) AS
    CASE WHEN rule IS NULL OR (workspace IS NULL AND environment IS NULL) THEN rule
         WHEN workspace IS NULL THEN 'On ' || environment || ': ' || rule
         ELSE 'In ' || workspace || coalesce(' (' || environment || ')', '') || ': ' || rule END;

-- How often, in words: "18 times in 3 sessions across 2 projects" (projects when more than one).
CREATE OR REPLACE MACRO lw_frequency(occurrences, traces, projects) AS
    CASE WHEN occurrences = 1 THEN 'once' ELSE occurrences || ' times' END
    || ' in ' || traces || CASE WHEN traces = 1 THEN ' session' ELSE ' sessions' END
    || CASE WHEN coalesce(projects, 0) > 1 THEN ' across ' || projects || ' projects' ELSE '' END;

-- A person's words, short enough to quote: as they are when short; a long paste (a log, a traceback) as its
-- first sentence and the line of it that says what went wrong (lw_error_line).
CREATE OR REPLACE MACRO lw_quote(txt, n) AS
    CASE WHEN length(coalesce(txt, '')) > n AND contains(txt, chr(10)) THEN
        -- the error line worked out once (bound to `e` by a one-element list), for the test and the quote
        list_transform([lw_error_line(txt)], lambda e: CASE
            WHEN e IS NOT NULL AND NOT starts_with(lw_clip(txt, n), lw_clip(e, n))
            THEN concat_ws(' … ', nullif(trim(regexp_extract(trim(txt), '^([^\n.!?:]{3,120}[.!?:]?)', 1)), ''),
                           lw_clip(e, n // 2))
            ELSE lw_clip(txt, n) END)[1]
         ELSE lw_clip(txt, n) END;

-- A tool failure's title: the tool and the line that says what went wrong, short.
CREATE OR REPLACE MACRO lw_failure_title(tool, error) AS
    '`' || coalesce(tool, 'a step') || '` fails'
    || coalesce(': ' || lw_clip(regexp_replace(error, '^\s*(E\s+|error:\s*)', ''), 60), '');

-- The files a call changed, as it names them: apply_patch's `*** Update File: path` headers, an editor's
-- `file_path`/`path` argument (when it writes), `sed -i ... file`, an editor run as a shell command.
CREATE OR REPLACE MACRO lw_edited_files(command) AS
    list_distinct(list_concat(
        regexp_extract_all(coalesce(command, ''), '\*\*\* (?:Update|Add) File: ([^\n]+?)\s*(?:\n|$)', 1),
        CASE WHEN regexp_matches(coalesce(command, ''), '^(Edit|Write|MultiEdit|NotebookEdit|str_replace_editor|str_replace_based_edit_tool|edit_file|write_file|create_file)\b')
                  AND NOT regexp_matches(coalesce(command, ''), '"command"\s*:\s*"view"')
             THEN regexp_extract_all(command, '"(?:file_path|path|notebook_path)"\s*:\s*"([^"]+)"', 1) ELSE [] END,
        regexp_extract_all(coalesce(command, ''), '\bsed -i\S*\s+(?:''[^'']*''|"[^"]*"|\S+)\s+(\S+)', 1),
        -- an editor run as a shell command (SWE-agent's tools): `str_replace_editor str_replace PATH ...`
        regexp_extract_all(coalesce(command, ''), '(?:^|[;&|]\s*)(?:str_replace_editor|edit)\s+(?:create|str_replace|insert|undo_edit)\s+(\S+)', 1)));

-- The exit code a shell's output reports at its end, as agent frameworks write it: OpenHands' `[Command
-- finished with exit code N]`, mini-swe-agent's `<returncode>N</returncode>`, `Exit code: N` (Codex and
-- others); NULL when it reports none.
CREATE OR REPLACE MACRO lw_exit_code(txt) AS
    TRY_CAST(coalesce(
        nullif(regexp_extract(coalesce(txt, ''), '\[Command finished with exit code (-?\d+)\]\s*$', 1), ''),
        nullif(regexp_extract(left(coalesce(txt, ''), 1000), '(?s)^\s*(?:<exception>.*?</exception>\s*)?<returncode>(-?\d+)</returncode>', 1), ''),
        nullif(regexp_extract(coalesce(txt, ''), '^\s*\{\s*"returncode"\s*:\s*(-?\d+)', 1), ''),
        nullif(regexp_extract(coalesce(txt, ''), '^\s*Exit code:?\s*(-?\d+)\b', 1), '')) AS INTEGER);

-- What a call works on, as it names it: paths, file names with an extension, URLs (`./` and a trailing `/`
-- dropped); not the folder a chain changes into first (`cd /repo && ...`: where it runs, not what on).
-- Another tool that worked after a failure is what worked only when it works on one of these.
CREATE OR REPLACE MACRO lw_call_targets(command) AS
    list_distinct(list_transform(
        regexp_extract_all(regexp_replace(coalesce(command, ''), '(^|&&|;|\n)\s*cd\s+("[^"]*"|''[^'']*''|\S+)\s*(&&|;)', '\1', 'g'),
                           'https?://[^\s"''`<>]+|[\w.~@+-]*/[\w./~@+-]*\w|\b[\w-]+\.[A-Za-z]\w{0,5}\b'),
        lambda t: regexp_replace(regexp_replace(t, '^\./', ''), '/+$', '')));

-- A program whose exit status 1 answers a question rather than reports a failure: a search that found
-- nothing, a test that came out false, files that differ, a name, process or default that is not there.
-- Such a call did not fail. Its exit status as the harness reports it (`exit_code`), else an empty output
-- (what a harness wraps around it removed: lw_shell_output) stands for it. It may lead a chain or end a
-- pipe (`rg X && sed -n ...`: the rest never ran).
CREATE OR REPLACE MACRO lw_answer_exit(command, exit_code, output) AS
    coalesce(exit_code = 1, lw_shell_output(output, command) = '')
    AND regexp_matches(coalesce(command, ''), '(^|&&|\|\||;|\||\n)\s*(sudo\s+)?(rg|grep|egrep|fgrep|ag|ack|git\s+grep|test|\[\[?|which|command\s+-v|pgrep|pidof|diff|cmp|defaults\s+read|systemctl\s+is-\w+|git\s+diff\s+[^|;&\n]*--(quiet|exit-code)|getent)\s');

-- The command an agent wrote as its action in its text: the one fenced shell block of a message
-- (```bash, ```sh, mini-swe-agent's ```mswea_bash_command); NULL when there is none or more than one (the
-- harness rejects those as a format error).
CREATE OR REPLACE MACRO lw_text_action(txt) AS
    CASE WHEN len(regexp_extract_all(coalesce(txt, ''), '```[a-z_]*\n')) = 1
         THEN nullif(trim(regexp_extract(txt, '(?s)```(?:bash|sh|shell|console|mswea_bash_command)?\n(.*?)\n?```', 1), e' \n\r\t'), '') END;

-- What a command printed, out of the harness's wrapper (`<returncode>N</returncode><output>...</output>`,
-- with an `<exception>` before it on a time-out, or, for an output too long to show, its first and last
-- characters in `<output_head>` and `<output_tail>` around `<elided_chars>`); other text as it is.
CREATE OR REPLACE MACRO lw_unwrap_observation(txt) AS
    CASE WHEN regexp_matches(coalesce(txt, ''), '(?s)^\s*(<exception>.*?</exception>\s*)?<returncode>-?\d+</returncode>')
         THEN trim(concat_ws(chr(10),
                   nullif(regexp_extract(txt, '(?s)^\s*<exception>(.*?)</exception>', 1), ''),
                   CASE WHEN contains(txt, '<output_head>')
                        THEN concat_ws(chr(10), regexp_extract(txt, '(?s)<output_head>\n?(.*?)\n?</output_head>', 1),
                                       nullif(trim(regexp_extract(txt, '(?s)<elided_chars>(.*?)</elided_chars>', 1)), ''),
                                       regexp_extract(txt, '(?s)<output_tail>\n?(.*?)\n?</output_tail>', 1))
                        ELSE regexp_extract(txt, '(?s)<output>\n?(.*?)\n?</output>\s*$', 1) END))
         -- mini-swe-agent's tool-call observation: {"returncode": N, "output": "...", "exception_info": "..."}
         WHEN regexp_matches(coalesce(txt, ''), '^\s*\{\s*"returncode"') AND json_valid(txt)
         THEN trim(concat_ws(chr(10), nullif(txt::JSON->>'exception_info', ''), txt::JSON->>'output'))
         ELSE txt END;

-- Is this the harness's answer to an action: a return code and output (mini-swe-agent, SWE-agent), or a
-- time-out template?
CREATE OR REPLACE MACRO lw_observation(txt) AS
    regexp_matches(coalesce(txt, ''), '^\s*(<returncode>|<exception>|<output>|<observation>|The last command <command>|OBSERVATION:)');

-- Does a shell command change files beyond what lw_edited_files names: a redirect into a file, a file
-- created, moved, copied or removed, a patch or checkout applied?
CREATE OR REPLACE MACRO lw_changes_files(command) AS
    regexp_matches(coalesce(command, ''),
                   '(^|[;&|(]\s*)(rm|mv|cp|touch|mkdir|rmdir|patch|truncate|tee)\s|[^<>&0-9]>>?\s*[^\s&>]|\bgit\s+(apply|checkout|restore|reset|stash|am|revert|cherry-pick|mv|rm)\b|\bsed\s+-i');

-- Is a call the agent's own bookkeeping: its plan or to-do list, or `think` (which, as its producers
-- describe it, neither obtains information nor changes anything: it appends a thought to the log)? It is
-- no step toward a fix, nor what the agent was doing when a person spoke.
CREATE OR REPLACE MACRO lw_bookkeeping(tool_key) AS
    lower(coalesce(tool_key, '')) IN ('todowrite', 'todoread', 'update_plan', 'think');

-- Does a call only look (read a file, search, list, show a diff), so that it cannot be what fixed
-- something? By its tool_key (lw_tool_key) and the command it ran.
CREATE OR REPLACE MACRO lw_reads(tool_key, command) AS
    (lower(split_part(coalesce(tool_key, ''), ' ', 1)) IN ('sed', 'cat', 'rg', 'grep', 'egrep', 'ls', 'nl', 'head', 'tail', 'find', 'pwd',
                                                         'echo', 'wc', 'tree', 'less', 'more', 'file', 'stat', 'which', 'type', 'awk')
     AND NOT regexp_matches(coalesce(command, ''), '\bsed\s+-i|>\s*\S'))
    OR lower(coalesce(tool_key, '')) IN ('git status', 'git diff', 'git log', 'git show', 'git branch', 'read', 'grep', 'glob',
                                         'ls', 'websearch', 'webfetch', 'taskoutput')
    OR lw_bookkeeping(tool_key)
    OR lw_words(tool_key)[1] IN ('get', 'list', 'search', 'find', 'fetch', 'read', 'lookup', 'query', 'view', 'show', 'describe');

-- A call as a rule names it, short: a shell command's first line; another tool with the file it worked on
-- (`Edit plan.md`) or its first argument, not its whole JSON; an editor's sub-command beside its file
-- (`str_replace_editor create /src/app.py`: the `command` of a call that also names a path).
CREATE OR REPLACE MACRO lw_call_brief(command) AS
    CASE WHEN regexp_matches(coalesce(command, ''), '^[\w.:-]+ [\{\[]')
         THEN split_part(command, ' ', 1)
              || CASE WHEN regexp_matches(command, '"(?:file_path|path|notebook_path)"\s*:')
                      THEN coalesce(' ' || nullif(regexp_extract(command, '"command"\s*:\s*"([a-z_]{2,24})"', 1), ''), '') ELSE '' END
              || coalesce(' ' || nullif(coalesce(
                  lw_edited_files(command)[1],
                  nullif(regexp_extract(command, '"(?:file_path|path|notebook_path)"\s*:\s*"([^"]{1,80})', 1), ''),
                  regexp_extract(command, '"(?:url|pattern|query|command|description)"\s*:\s*"([^"]{1,80})', 1)), ''), '')
         ELSE lw_first_line(command, 140) END;
