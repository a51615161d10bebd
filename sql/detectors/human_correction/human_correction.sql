-- id: human_correction
-- title: A human corrected the agent
-- severity: high
-- description: A human_correction event (the correction is the evidence: a reviewer's note, an
--   interrupted run and what the user said next, a rejected tool use), or a trace whose outcome is
--   corrected_by_human although no correction event was recorded (a trace-level finding). Also, with
--   confidence likely and severity medium, a user turn in a conversation that rejects or corrects what the
--   agent just did or said: "that's not what I asked", "I said...", "you didn't...", "you booked the wrong
--   one"; a "no" that goes on to say what is wrong, answering a statement of the agent (not its question);
--   or the user repeating an earlier request nearly word for word. A user declining an offer ("No,
--   thanks"), changing their mind ("Actually, I'd rather...") or adding something is no correction.
--   Also (likely, medium) a user turn reporting that what the agent did does not work: a pasted error or
--   traceback, "it still fails", "it exits immediately", "you broke something".
--   What a person reports right after acting themselves (a customer who ran a test or toggled a setting on
--   their own device, with tool calls of their own since the agent spoke) is the outcome of their own step,
--   not a correction of the agent, unless it repeats an earlier request.
--   A correction needs a person: text an agent framework writes in the user's place (an observation, a
--   format error, a timeout or step-limit notice, a continue prompt: lw_harness_text) is none.
--   The cause is what the correction names (its words: lw_key_words), whatever the task; an interruption
--   without words is about the tool the agent was running. A correction that asks why the agent did not run
--   or test its work (facts.asks_for_check), or reports a failure of work it made (facts.reports_failure in a
--   run where it changed files, or a failure only software gives: lw_software_failure), is one cause
--   wherever it happens, whatever it quotes: the agent handed back work it had not checked. A customer
--   saying their line is still not working made no such report.
--   What to do instead is the correction itself.
-- family: human_correction
-- lesson: Apply this reviewer correction up front: {evidence}
WITH turns AS (
    SELECT trace_id, event_id, seq, type, content,
           -- whether the agent's last words before this turn asked something (NULL: it had not spoken)
           lag(CASE WHEN type IN ('assistant_message', 'final_answer') THEN contains(content, '?') END IGNORE NULLS)
               OVER (PARTITION BY trace_id ORDER BY seq) AS agent_asked,
           count(*) FILTER (WHERE type = 'user_message') OVER (PARTITION BY trace_id ORDER BY seq) AS nth_user
    FROM events
    WHERE type IN ('user_message', 'assistant_message', 'final_answer')
      AND metadata->>'agent_id' IS NULL  -- a subagent's prompt comes from its parent agent, not a person
      AND (type <> 'user_message' OR (lw_person(lw_actor(type, actor)) AND NOT lw_harness_text(content)))
),
-- with the text tests facts ran on what the person said
said AS (
    SELECT t.*, lw_lowered(trim(t.content)) AS said, f.objection, f.reports_failure, f.asks_for_check, f.coding_run
    FROM turns t JOIN facts f USING (trace_id, seq)
    WHERE t.type = 'user_message' AND t.nth_user > 1 AND t.agent_asked IS NOT NULL
),
-- turns in which the person first acted themselves (a tool call of theirs since the agent last spoke: a
-- customer toggling a setting on their own phone): what they then say is the outcome of their own step
own_step AS (
    SELECT trace_id, seq
    FROM (SELECT trace_id, seq, type,
                 max(CASE WHEN type = 'tool_call' AND lw_person(actor) THEN seq END) OVER before AS last_own,
                 max(CASE WHEN type IN ('assistant_message', 'final_answer') THEN seq END) OVER before AS last_agent
          FROM facts WHERE type IN ('tool_call', 'assistant_message', 'final_answer', 'user_message')
            -- only where the person made calls of their own at all: no window over every other trace
            AND trace_id IN (SELECT trace_id FROM facts WHERE type = 'tool_call' AND lw_person(actor))
          WINDOW before AS (PARTITION BY trace_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING))
    WHERE type = 'user_message' AND last_own > coalesce(last_agent, -1)
),
repeated AS (
    -- nearly the same words as an earlier request of the same user (5 words or more)
    SELECT s.trace_id, s.seq
    FROM said s JOIN turns e ON e.trace_id = s.trace_id AND e.type = 'user_message' AND e.seq < s.seq
    WHERE len(list_distinct(lw_words(s.content))) >= 5
      AND len(list_intersect(list_distinct(lw_words(s.content)), list_distinct(lw_words(e.content))))
          >= 0.8 * len(list_distinct(list_concat(lw_words(s.content), lw_words(e.content))))
    GROUP BY ALL
),
found AS (
    SELECT e.trace_id, e.event_id, e.seq,
           coalesce(nullif(trim(e.content), ''), 'correction recorded without text') AS evidence,
           'A human had to correct the agent.' AS problem,
           NULL AS severity, NULL AS confidence,
           -- a bare interruption says nothing but that the agent had to be stopped
           regexp_matches(ltrim(coalesce(e.content, '')), '^(\[Request interrupted|The user doesn''t want to proceed with this tool use|User chose to stay in plan mode)')
               OR trim(coalesce(e.content, '')) = '' AS wordless, false AS outcome,
           x.asks_for_check OR (x.reports_failure AND (x.coding_run OR lw_software_failure(lw_lowered(e.content)))) AS unchecked
    FROM events e JOIN facts x USING (trace_id, seq)
    WHERE e.type = 'human_correction'

    UNION ALL

    SELECT t.trace_id, NULL, NULL,
           'outcome corrected_by_human; last agent output: '
               || coalesce((SELECT arg_max(e.content, e.seq) FROM events e
                            WHERE e.trace_id = t.trace_id AND e.content IS NOT NULL
                              AND e.type IN ('final_answer', 'assistant_message')), '(none)'),
           'The run ended corrected by a human, but the correction itself was not recorded.', NULL, NULL, false, true, false
    FROM traces t
    WHERE lower(trim(t.outcome)) IN ('corrected_by_human', 'human_corrected', 'corrected')
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.trace_id = t.trace_id AND e.type = 'human_correction')

    UNION ALL

    SELECT s.trace_id, s.event_id, s.seq, s.content,
           CASE WHEN r.seq IS NOT NULL THEN 'The user had to repeat a request.'
                WHEN s.reports_failure AND NOT s.objection
                     THEN 'The user reported that what the agent did does not work.'
                WHEN s.asks_for_check THEN 'The user had to ask the agent to run or test its own work.'
                ELSE 'The user corrected what the agent had just done or said.' END,
           'medium', 'likely', false, false,
           s.asks_for_check OR (s.reports_failure AND (s.coding_run OR lw_software_failure(s.said)))
    FROM said s LEFT JOIN repeated r USING (trace_id, seq)
    LEFT JOIN own_step o ON o.trace_id = s.trace_id AND o.seq = s.seq
    WHERE (r.seq IS NOT NULL OR o.seq IS NULL)
      AND NOT EXISTS (SELECT 1 FROM events c WHERE c.trace_id = s.trace_id AND c.type = 'human_correction'
                                               AND c.seq BETWEEN s.seq - 2 AND s.seq + 2)
      AND (r.seq IS NOT NULL
           OR s.objection
           OR s.reports_failure
           -- a "no" that says what is wrong, answering a statement of the agent
           OR (regexp_matches(s.said, '^\W*(no|nope|wrong|incorrect|stop|not quite)\b[,.!]?\s+\w+')
               AND NOT regexp_matches(s.said, '^\W*no,?\s*(thanks|thank you|that''?s (all|it|fine)|need|worries|problem)\b')
               AND NOT s.agent_asked))
),
-- corrections of one thing come in a row: the human turns (facts.turn) of a trace's findings; a finding at
-- the turn after the one before continues its episode, one finding an episode, at its first turn
turned AS (
    SELECT f.*, x.turn,
           CASE WHEN x.turn - lag(x.turn) OVER (PARTITION BY f.trace_id ORDER BY f.seq) <= 1 THEN 0 ELSE 1 END AS starts
    FROM found f LEFT JOIN facts x ON x.trace_id = f.trace_id AND x.seq = f.seq
    WHERE f.seq IS NOT NULL
),
episodes AS (
    SELECT trace_id, episode,
           arg_min({'event_id': event_id, 'seq': seq, 'evidence': evidence, 'problem': problem, 'severity': severity,
                    'confidence': confidence, 'wordless': wordless, 'outcome': outcome, 'unchecked': unchecked}, seq) AS first,
           max(seq) AS last_seq, max(turn) AS last_turn, count(*) AS times
    FROM (SELECT *, sum(starts) OVER (PARTITION BY trace_id ORDER BY seq) AS episode FROM turned)
    GROUP BY trace_id, episode
    UNION ALL
    SELECT trace_id, NULL, {'event_id': event_id, 'seq': seq, 'evidence': evidence, 'problem': problem,
                            'severity': severity, 'confidence': confidence, 'wordless': wordless, 'outcome': outcome,
                            'unchecked': unchecked},
           NULL, NULL, 1
    FROM found WHERE seq IS NULL
),
-- what worked after an episode: the person saying so within six turns ("OK, this worked: ..."), else the
-- agent's first call after it that did not fail and did more than look (facts.reads), else such a call
-- after its first correction
said_worked AS (
    SELECT e.trace_id, e.last_seq, arg_min(m.content, u.seq) AS text, lw_quote(arg_min(m.content, u.seq), 200) AS quote
    FROM episodes e JOIN facts u ON u.trace_id = e.trace_id AND u.seq > e.last_seq AND u.turn <= e.last_turn + 6
                                AND u.type = 'user_message' AND lw_person(u.actor)
    JOIN events m ON m.trace_id = u.trace_id AND m.seq = u.seq
    WHERE regexp_matches(lw_lowered(m.content), '\b(this|that|it|which) (worked|works|did it|did the trick|fixed it)\b|\bworks now\b')
    GROUP BY e.trace_id, e.last_seq
),
agent_worked AS (
    SELECT e.trace_id, e.last_seq,
           nullif(lw_call_brief(coalesce(arg_min(c.command, c.seq) FILTER (WHERE c.seq > e.last_seq),
                                         arg_min(c.command, c.seq))), '') AS brief
    FROM episodes e JOIN facts c ON c.trace_id = e.trace_id AND c.seq > e.first.seq AND c.type = 'tool_call'
                                AND c.actor = 'agent' AND NOT c.failed AND NOT c.reads
    GROUP BY e.trace_id, e.last_seq
),
-- the correction as quoted, worked out once (lw_quote is a long expression: written out in each place it
-- is used, it cost most of this query)
quoted AS (
    SELECT *, lw_quote(first.evidence, 300) AS q300, lw_quote(first.evidence, 240) AS q240,
           lw_key_words(first.evidence, 12) AS key_words
    FROM episodes
),
-- what the agent was doing when it was corrected: its last call before
context AS (
    SELECT e.trace_id, e.first.seq AS seq, c.tool_key
    FROM episodes e ASOF LEFT JOIN (SELECT trace_id, seq, tool_key FROM facts WHERE type = 'tool_call' AND actor = 'agent') c
         ON c.trace_id = e.trace_id AND e.first.seq > c.seq
    WHERE e.first.seq IS NOT NULL
)
SELECT e.trace_id, e.first.event_id AS event_id, e.first.seq AS seq, e.q300 AS evidence,
       e.first.problem || CASE WHEN e.times > 1 THEN ' The user had to step in ' || e.times || ' times in a row.' ELSE '' END AS problem,
       e.first.severity AS severity, e.first.confidence AS confidence,
       CASE WHEN e.first.wordless THEN 'interrupted while running ' || coalesce(c.tool_key, 'a step')
            WHEN e.first.outcome THEN 'corrected by a human, correction not recorded'
            WHEN e.first.unchecked THEN 'work handed back unchecked: the user found the failure or asked for the check'
            ELSE coalesce(nullif(e.key_words, ''), lw_mask(e.first.evidence)) END AS signature,
       c.tool_key AS tool,
       -- a bare interruption says nothing of what to do instead: no recovery, and no person's words
       CASE WHEN NOT e.first.wordless THEN
           coalesce('the user said: "' || s.quote || '"', '`' || a.brief || '`',
                    CASE WHEN NOT e.first.outcome THEN 'the user''s own words: "' || e.q240 || '"' END)
       END AS recovery,
       CASE WHEN e.first.wordless THEN NULL
            WHEN s.text IS NOT NULL THEN 'correction' WHEN a.brief IS NOT NULL THEN 'other'
            WHEN NOT e.first.outcome THEN 'correction' END AS recovery_kind,
       CASE WHEN e.first.wordless THEN 'The user stopped the agent while it ran `' || coalesce(c.tool_key, 'a step') || '`'
            WHEN e.first.outcome THEN 'A human corrected the run; the correction was not recorded'
            WHEN e.first.unchecked THEN 'The user found what the agent had not checked: "' || lw_clip(e.q300, 36) || '"'
            ELSE 'The user had to say: "' || lw_clip(e.q300, 56) || '"' END AS title,
       CASE WHEN e.first.wordless
            THEN 'The user had to stop the agent while it ran `' || coalesce(c.tool_key, 'a step') || '`: check with the user before running it'
            WHEN e.first.outcome
            THEN 'A human corrected this run but the correction was not recorded: record what they changed, so the next run can learn it ('
                 || lw_clip(e.first.evidence, 200) || ').'
            WHEN e.first.unchecked
            THEN 'Run what you changed (the program, its tests, what CI runs) and read the result before you say it works: '
                 || 'the user had to find the failure or ask for the check ("' || e.q240 || '").'
            ELSE 'Apply up front what the user had to tell the agent' || coalesce(' (it was running `' || c.tool_key || '`)', '')
                 || ': "' || e.q240 || '"' END
           || CASE WHEN e.first.wordless THEN '.'
                   WHEN s.text IS NOT NULL THEN ' What worked, as the user said: "' || s.quote || '"'
                   WHEN a.brief IS NOT NULL THEN ' What worked after: `' || a.brief || '`.'
                   ELSE '' END AS lesson
FROM quoted e LEFT JOIN context c ON c.trace_id = e.trace_id AND c.seq = e.first.seq
LEFT JOIN said_worked s ON s.trace_id = e.trace_id AND s.last_seq = e.last_seq
LEFT JOIN agent_worked a ON a.trace_id = e.trace_id AND a.last_seq = e.last_seq
