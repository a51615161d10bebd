-- id: human_correction
-- title: A human corrected the agent
-- severity: high
-- description: A turn of a person or a counterpart whose intent (sql/facts/turns.sql) is a correction:
--   recorded as one (a human_correction event: a reviewer's note, a tool use the person rejected, quoting
--   the words the person adds right after a refusal that has none: what they wanted instead), or, with
--   confidence likely and severity medium (low for a counterpart, a customer or simulated user: serving them
--   takes such turns, and on graded support sets they came in passing runs as often as in failing ones),
--   read from what they said against what the agent had just done or said: an objection ("that's not what
--   I asked", "you didn't...", "don't..."), a fact the agent stated disputed, something the agent made or
--   said it made that is not there, a failure of the agent's own work reported (a pasted error with words
--   of the person's, "it still fails", "you broke something"), a request made again after the agent said
--   it was done. Also a trace whose outcome is corrected_by_human although no correction was recorded (a
--   trace-level finding).
--   Who speaks is the producer's word (events.actor): harness text, a parent agent's prompt and every turn
--   of an autonomous run are no person's. An instruction, an answer to the agent's question (a "no"
--   included), an acknowledgement, a paste with no words of its own, and an interruption (it means what
--   the words after it mean) are no corrections; nor is a customer's report of the outcome of their own
--   step, or a customer insisting after a refusal.
--   The cause is what the correction names (its words: lw_key_words), whatever the task. A correction that
--   asks why the agent did not run or test its work (facts.asks_for_check, when it has work: files it
--   changed before, or its last words saying it is done), or reports a failure of work it
--   made (facts.reports_failure in a run where it changed files, or a failure only software gives:
--   lw_software_failure), or says that what the agent made or said it made is not there (in a run where it
--   changed files), is one cause wherever it happens, whatever it quotes: the agent handed back work it had
--   not checked. What to do instead is the correction itself; the rule quotes what the agent had just said
--   when it spoke after its last call (what the person answered), else names the call it was running.
-- family: human_correction
-- lesson: Apply this reviewer correction up front: {evidence}
-- asking why the agent did not run or test something is about its work only when it has work to show:
-- files it changed before the turn, or its last words saying it is done ("why won't you run it?" of a
-- command the person gave it and it declined is an objection to the refusal)
WITH turned_to_work AS (
    SELECT u.trace_id, u.seq
    FROM turns u
    WHERE u.intent = 'correction'
      AND (u.claimed_last OR EXISTS (SELECT 1 FROM facts c WHERE c.trace_id = u.trace_id AND c.seq < u.seq
                                                              AND c.actor = 'agent' AND c.changes))
),
found AS (
    SELECT u.trace_id, u.event_id, u.seq,
           coalesce(nullif(trim(e.content), ''), 'correction recorded without text') AS evidence,
           CASE WHEN e.type = 'human_correction' THEN 'A human had to correct the agent.'
                WHEN u.reason = 'refused' THEN 'The user refused what the agent was about to run and said what they wanted instead.'
                WHEN u.repeated THEN 'The user had to repeat a request.'
                WHEN x.reports_failure AND NOT x.objection THEN 'The user reported that what the agent did does not work.'
                WHEN x.asks_for_check AND w.seq IS NOT NULL THEN 'The user had to ask the agent to run or test its own work.'
                ELSE 'The user corrected what the agent had just done or said.' END AS problem,
           CASE WHEN e.type = 'human_correction' THEN NULL WHEN u.speaker = 'counterpart' THEN 'low' ELSE 'medium' END AS severity,
           CASE WHEN e.type <> 'human_correction' THEN 'likely' END AS confidence,
           -- a refusal with no words says nothing but that the agent had to be stopped
           trim(coalesce(e.content, '')) = '' AS wordless, e.type = 'human_correction' AS recorded, false AS outcome, u.reason,
           (x.asks_for_check AND w.seq IS NOT NULL) OR ((x.reports_failure OR u.reason IN ('failed', 'missing'))
                                AND (x.coding_run OR lw_software_failure(lw_lowered(e.content)))) AS unchecked
    FROM turns u JOIN events e USING (trace_id, seq) JOIN facts x USING (trace_id, seq)
    LEFT JOIN turned_to_work w USING (trace_id, seq)
    WHERE u.intent = 'correction'

    UNION ALL

    SELECT t.trace_id, NULL, NULL,
           'outcome corrected_by_human; last agent output: '
               || coalesce((SELECT arg_max(e.content, e.seq) FROM events e
                            WHERE e.trace_id = t.trace_id AND e.content IS NOT NULL
                              AND e.type IN ('final_answer', 'assistant_message')), '(none)'),
           'The run ended corrected by a human, but the correction itself was not recorded.', NULL, NULL, false, true, true, 'recorded', false
    FROM traces t
    WHERE lower(trim(t.outcome)) IN ('corrected_by_human', 'human_corrected', 'corrected')
      AND NOT EXISTS (SELECT 1 FROM events e WHERE e.trace_id = t.trace_id AND e.type = 'human_correction')
),
-- corrections of one thing come in a row: a finding at the person's next turn with words (an interruption
-- between means what the words after it mean) continues its episode, one finding an episode, at its first
-- turn, in the words of its first turn that has some (a refusal's are the words the person added to it)
said_turns AS (
    SELECT trace_id, seq, count(*) FILTER (WHERE intent <> 'interruption') OVER (PARTITION BY trace_id ORDER BY seq) AS said
    FROM turns SEMI JOIN found USING (trace_id)
),
turned AS (
    SELECT f.*, x.turn,
           CASE WHEN t.said - lag(t.said) OVER (PARTITION BY f.trace_id ORDER BY f.seq) <= 1 THEN 0 ELSE 1 END AS starts
    FROM found f LEFT JOIN facts x ON x.trace_id = f.trace_id AND x.seq = f.seq
    LEFT JOIN said_turns t ON t.trace_id = f.trace_id AND t.seq = f.seq
    WHERE f.seq IS NOT NULL
),
episodes AS (
    SELECT trace_id, episode,
           arg_min({'event_id': event_id, 'seq': seq}, seq) AS at,
           arg_min({'evidence': evidence, 'problem': problem, 'severity': severity,
                    'confidence': confidence, 'wordless': wordless, 'outcome': outcome, 'reason': reason,
                    'unchecked': unchecked}, {'wordless': wordless, 'seq': seq}) AS first,
           -- recorded as a correction (a refusal, a reviewer's note): certain, of the detector's severity
           bool_or(recorded) AS recorded,
           max(seq) AS last_seq, max(turn) AS last_turn, count(*) AS times
    FROM (SELECT *, sum(starts) OVER (PARTITION BY trace_id ORDER BY seq) AS episode FROM turned)
    GROUP BY trace_id, episode
    UNION ALL
    SELECT trace_id, NULL, {'event_id': event_id, 'seq': seq},
           {'evidence': evidence, 'problem': problem, 'severity': severity, 'confidence': confidence,
            'wordless': wordless, 'outcome': outcome, 'reason': reason, 'unchecked': unchecked},
           recorded, NULL, NULL, 1
    FROM found WHERE seq IS NULL
),
-- what worked after an episode: the person saying so within six turns ("OK, this worked: ..."), else the
-- correction itself (the agent's next call is no proof of anything: it may be about something else)
said_worked AS (
    SELECT e.trace_id, e.last_seq, arg_min(m.content, u.seq) AS text, lw_quote(arg_min(m.content, u.seq), 200) AS quote
    FROM episodes e JOIN facts u ON u.trace_id = e.trace_id AND u.seq > e.last_seq AND u.turn <= e.last_turn + 6
                                AND u.type = 'user_message' AND lw_person(u.actor)
    JOIN events m ON m.trace_id = u.trace_id AND m.seq = u.seq
    WHERE regexp_matches(lw_lowered(m.content), '\b(this|that|it|which) (worked|works|did it|did the trick|fixed it)\b|\bworks now\b')
    GROUP BY e.trace_id, e.last_seq
),
-- the correction as quoted, worked out once (lw_quote is a long expression: written out in each place it
-- is used, it cost most of this query)
quoted AS (
    SELECT *, lw_quote(first.evidence, 300) AS q300, lw_quote(first.evidence, 240) AS q240,
           lw_key_words(first.evidence, 12) AS key_words
    FROM episodes
),
-- what the agent was doing when it was corrected: its last call before, and its last call that changed
-- something (a fix that did not work is about that one); and its last words, when it spoke after that call
-- (what the person answered is what it said, not what it ran)
context AS (
    SELECT e.trace_id, e.at.seq AS seq, c.tool_key, m.tool_key AS changed_with,
           CASE WHEN w.seq > coalesce(c.seq, -1) THEN w.seq END AS said_seq
    FROM episodes e
    ASOF LEFT JOIN (SELECT trace_id, seq, tool_key FROM facts WHERE type = 'tool_call' AND actor = 'agent' AND NOT lw_bookkeeping(tool_key)) c
         ON c.trace_id = e.trace_id AND e.at.seq > c.seq
    ASOF LEFT JOIN (SELECT trace_id, seq FROM facts WHERE type IN ('assistant_message', 'final_answer') AND actor = 'agent') w
         ON w.trace_id = e.trace_id AND e.at.seq > w.seq
    ASOF LEFT JOIN (SELECT trace_id, seq, tool_key FROM facts
                    WHERE type = 'tool_call' AND actor = 'agent' AND NOT reads AND NOT failed) m
         ON m.trace_id = e.trace_id AND e.at.seq > m.seq
    WHERE e.at.seq IS NOT NULL
)
SELECT e.trace_id, e.at.event_id AS event_id, e.at.seq AS seq, e.q300 AS evidence,
       e.first.problem || CASE WHEN e.times > 1 THEN ' The user had to step in ' || e.times || ' times in a row.' ELSE '' END AS problem,
       CASE WHEN NOT e.recorded THEN e.first.severity END AS severity,
       CASE WHEN NOT e.recorded THEN e.first.confidence END AS confidence,
       -- the cause: for what the person objected to or asked again, their words; for a fact disputed or a fix
       -- that did not work, what the agent had done (the same mistake in other words is one cause)
       CASE WHEN e.first.wordless THEN 'refused: ' || coalesce(c.tool_key, 'a step')
            WHEN e.first.outcome THEN 'corrected by a human, correction not recorded'
            WHEN e.first.unchecked THEN 'work handed back unchecked: the user found the failure or asked for the check'
            -- a fact disputed is one cause whatever the agent was running when it used it
            WHEN e.first.reason = 'disputed' THEN 'disputed the facts the agent stated'
            WHEN e.first.reason = 'failed' AND c.changed_with IS NOT NULL THEN 'the fix did not work: ' || c.changed_with
            ELSE coalesce(nullif(e.key_words, ''), lw_mask(e.first.evidence)) END AS signature,
       CASE WHEN e.first.reason = 'failed' THEN coalesce(c.changed_with, c.tool_key) ELSE c.tool_key END AS tool,
       -- a refusal without words says nothing of what to do instead: no recovery, and no person's words
       CASE WHEN NOT e.first.wordless THEN
           coalesce('the user said: "' || s.quote || '"',
                    CASE WHEN NOT e.first.outcome THEN 'the user''s own words: "' || e.q240 || '"' END)
       END AS recovery,
       CASE WHEN e.first.wordless OR e.first.outcome THEN NULL ELSE 'correction' END AS recovery_kind,
       CASE WHEN e.first.wordless THEN 'The user refused `' || coalesce(c.tool_key, 'a step') || '`'
            WHEN e.first.outcome THEN 'A human corrected the run; the correction was not recorded'
            WHEN e.first.reason = 'refused' THEN 'The user refused `' || coalesce(c.tool_key, 'a step') || '`: "' || lw_clip(e.q300, 48) || '"'
            WHEN e.first.unchecked THEN 'The user found what the agent had not checked: "' || lw_clip(e.q300, 36) || '"'
            WHEN e.first.reason = 'disputed'
            THEN 'The user had to correct the facts the agent stated'
            WHEN e.first.reason = 'failed' AND c.changed_with IS NOT NULL
            THEN 'The problem was still there after `' || c.changed_with || '`'
            ELSE 'The user had to say: "' || lw_clip(e.q300, 56) || '"' END AS title,
       CASE WHEN e.first.wordless
            THEN 'The user refused `' || coalesce(c.tool_key, 'a step') || '` when the agent ran it: say what you are about to run and why, and wait for a yes'
            WHEN e.first.outcome
            THEN 'A human corrected this run but the correction was not recorded: record what they changed, so the next run can learn it ('
                 || lw_clip(e.first.evidence, 200) || ').'
            WHEN e.first.reason = 'refused'
            THEN 'The user refused `' || coalesce(c.tool_key, 'a step') || '` and said what they wanted instead; apply it up front: "' || e.q240 || '"'
            WHEN e.first.unchecked
            THEN 'Run what you changed (the program, its tests, what CI runs) and read the result before you say it works: '
                 || 'the user had to find the failure or ask for the check ("' || e.q240 || '").'
            WHEN e.first.reason = 'disputed'
            THEN 'Check the facts you state (a name, a number, an id) against what the user told you and what your tools returned before you act on them'
                 || coalesce(' (here `' || c.tool_key || '`)', '') || ' or answer: the user had to correct them ("' || e.q240 || '").'
            WHEN e.first.reason = 'failed' AND c.changed_with IS NOT NULL
            THEN 'After `' || c.changed_with || '` do not say the problem is fixed: have the user check it, and take the next step your runbook lists when it is not '
                 || '(the user found it was not: "' || e.q240 || '").'
            ELSE 'Apply up front what the user had to tell the agent'
                 || coalesce(' (it had just said: "' || lw_clip(a.content, 120) || '")', ' (it was running `' || c.tool_key || '`)', '')
                 || ': "' || e.q240 || '"' END
           || CASE WHEN e.first.wordless THEN '.'
                   WHEN s.text IS NOT NULL THEN ' What worked, as the user said: "' || s.quote || '"'
                   ELSE '' END AS lesson
FROM quoted e LEFT JOIN context c ON c.trace_id = e.trace_id AND c.seq = e.at.seq
-- the agent's words read only from the traces that need them (a join with all events cost a third of this query)
LEFT JOIN (SELECT e.trace_id, e.seq, e.content FROM events e
           WHERE e.type IN ('assistant_message', 'final_answer') AND e.trace_id IN (SELECT trace_id FROM context WHERE said_seq IS NOT NULL)) a
       ON a.trace_id = c.trace_id AND a.seq = c.said_seq
LEFT JOIN said_worked s ON s.trace_id = e.trace_id AND s.last_seq = e.last_seq
