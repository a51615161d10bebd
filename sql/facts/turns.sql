-- Turns: what each turn of a person or a counterpart means, worked out once per batch (and per redetect)
-- after the facts. One row per event the adapter says a person (`human`) or a counterpart wrote in the
-- user's place; who wrote it is the producer's word (events.actor), never guessed here.
--   speaker     human (the person operating the agent) or counterpart (a customer, a simulated user)
--   nth         the speaker's turns so far in the trace (1: the task)
--   words       words in the turn
--   intent      correction   objects to or redirects what the agent did or said, disputes a fact it stated,
--                            or says its work does not work or is not what was asked
--               instruction  a new request or next step (the task among them)
--               answer       answers the agent's question
--               acknowledgement  thanks, agreement, a goodbye, with no request of its own
--               paste        output, a log or an error pasted with no words of its own about it
--               interruption no words: the person stopped the agent (what it means is the next turn's)
--               unknown      a language the tests do not read
--   reason      what makes it a correction: recorded (a correction event: a rejected tool use, a reviewer's
--               note), refused (the words a person adds to a tool use they refused without words: past an
--               interruption, before the agent says or does anything, they say what they wanted instead),
--               objection, disputed (a fact the agent stated or read), missing (what the agent made or said it
--               made is not there), failed (the agent's work or fix did not work), repeated (a request made
--               again after the agent answered), conceded (the agent granted it was wrong); NULL otherwise
--   interrupted the person stopped the agent just before this turn (an interruption, no agent words between)
--   agent_asked the agent's last words before the turn asked something
-- What the agent did in between is read from the facts (its calls since the person last spoke), what it
-- said from its messages: the turn's meaning is its words read against them.
CREATE OR REPLACE TEMP TABLE turns AS
WITH everyone AS (
    SELECT trace_id, seq, event_id, type, lw_actor(type, actor) AS speaker, content,
           len(string_split_regex(trim(coalesce(content, '')), '\s+')) * (trim(coalesce(content, '')) <> '')::INT AS words,
           coalesce(lw_bool(metadata->>'interruption') OR raw_type = 'user:interrupt', false) AS interrupt
    FROM events
    WHERE type IN ('user_message', 'human_correction') AND lw_person(lw_actor(type, actor))
),
-- the traces where a turn is read against the agent: a person spoke twice or more, or a correction was
-- recorded. Where a person spoke once, that turn is the task (or an interruption with nothing after it):
-- most traces of a busy night, and nothing in them needs the agent's words or the text tests below
talked AS (
    SELECT trace_id FROM everyone GROUP BY trace_id HAVING count(*) > 1 OR bool_or(type = 'human_correction')
),
spoken AS (SELECT * FROM everyone SEMI JOIN talked USING (trace_id)),
-- the agent's words and state-changing calls around each turn, on narrow rows of the traces that have turns
marked AS (
    SELECT f.trace_id, f.seq,
           CASE WHEN s.seq IS NOT NULL AND s.interrupt
                THEN 'interrupt'
                WHEN s.seq IS NOT NULL THEN 'person'
                WHEN f.type IN ('assistant_message', 'final_answer') THEN 'agent_said'
                WHEN f.actor <> 'agent' THEN 'person_changed'
                ELSE 'agent_changed' END AS kind,
           CASE WHEN f.type IN ('assistant_message', 'final_answer') THEN lw_lowered(e.content) END AS said,
           CASE WHEN s.seq IS NOT NULL THEN lw_reports_failure(lw_lowered(s.content)) END AS fails,
           -- a correction recorded with no words: a tool use the person refused
           s.type = 'human_correction' AND s.words = 0 AS refusal
    FROM facts f
    LEFT JOIN spoken s USING (trace_id, seq)
    LEFT JOIN events e ON e.trace_id = f.trace_id AND e.seq = f.seq AND f.type IN ('assistant_message', 'final_answer')
    WHERE f.trace_id IN (SELECT trace_id FROM talked)
      AND (s.seq IS NOT NULL OR (f.actor = 'agent' AND f.type IN ('assistant_message', 'final_answer'))
           OR (f.actor = 'agent' AND f.type = 'tool_call' AND NOT coalesce(f.reads, false) AND NOT coalesce(f.failed, false))
           -- a person's own step that changes something (a setting toggled on their device), not a look or a test
           OR (lw_person(f.actor) AND f.type = 'tool_call' AND NOT coalesce(f.reads, false)
               AND NOT list_has_any(lw_words(f.tool_name)[1:1], ['check', 'run', 'test', 'get', 'list', 'show', 'view', 'read', 'search', 'find', 'lookup', 'query', 'describe', 'fetch'])))
),
claims AS (
    SELECT *,
           -- the agent says it has done it, that it works now, or that what it did will fix it
           kind = 'agent_said' AND regexp_matches(said, '\b(should (now )?(work|pass|build|run|be (working|fixed|resolved|restored|back|fine|able|green|passing))|(this|that|it) (will|should) (fix|resolve|restore)|(is|are|has been|have been|was|were) (now )?(fixed|resolved|restored|working|added|created|written|implemented|done|ready|complete|completed|in place|in the)|now (works|working|work|runs|passes)|i''ve (fixed|resolved|restored|added|created|written|implemented)|all (tests|checks) pass)\b') AS claims
    FROM marked
),
around AS (
    SELECT trace_id, seq, kind,
           lag(CASE WHEN kind = 'agent_said' THEN said END IGNORE NULLS) OVER w AS agent_before,
           lag(CASE WHEN kind = 'agent_said' THEN seq END IGNORE NULLS) OVER w AS agent_before_seq,
           lag(CASE WHEN kind = 'agent_said' AND claims THEN seq END IGNORE NULLS) OVER w AS claim_before_seq,
           lag(CASE WHEN kind = 'person' THEN seq END IGNORE NULLS) OVER w AS person_before_seq,
           lag(CASE WHEN kind = 'person' AND refusal THEN seq END IGNORE NULLS) OVER w AS refusal_before_seq,
           lag(CASE WHEN kind = 'person' AND fails THEN seq END IGNORE NULLS) OVER w AS failure_before_seq,
           lag(CASE WHEN kind = 'agent_changed' THEN seq END IGNORE NULLS) OVER w AS changed_before_seq,
           lag(CASE WHEN kind = 'interrupt' THEN seq END IGNORE NULLS) OVER w AS interrupt_before_seq,
           lag(CASE WHEN kind = 'person_changed' THEN seq END IGNORE NULLS) OVER w AS own_step_before_seq,
           lead(CASE WHEN kind = 'agent_said' THEN said END IGNORE NULLS) OVER w AS agent_after,
           lead(CASE WHEN kind = 'agent_said' THEN seq END IGNORE NULLS) OVER w AS agent_after_seq,
           lead(CASE WHEN kind IN ('person', 'interrupt') THEN seq END IGNORE NULLS) OVER w AS person_after_seq,
           count(*) FILTER (WHERE kind IN ('person', 'interrupt')) OVER (PARTITION BY trace_id ORDER BY seq) AS nth
    FROM claims
    WINDOW w AS (PARTITION BY trace_id ORDER BY seq)
),
read AS (
    SELECT s.trace_id, s.seq, s.event_id, s.type, s.speaker, a.nth, s.words,
           a.kind = 'interrupt' AS interruption,
           lw_lowered(trim(coalesce(s.content, ''))) AS said,
           -- what the agent said last before the turn, when it spoke since the person did
           CASE WHEN a.agent_before_seq > coalesce(a.person_before_seq, -1) THEN a.agent_before END AS agent_before,
           a.changed_before_seq > coalesce(a.person_before_seq, -1) AS agent_changed,
           coalesce(a.own_step_before_seq > a.changed_before_seq, false) AS own_step,
           coalesce(a.own_step_before_seq > a.claim_before_seq, false) AS own_step_since_claim,
           coalesce(a.claim_before_seq > coalesce(a.person_before_seq, -1), false) AS agent_claimed,
           -- the agent's last words before the turn said it was done
           coalesce(a.claim_before_seq = a.agent_before_seq AND a.agent_before_seq > coalesce(a.person_before_seq, -1), false) AS claimed_last,
           -- the agent changed something and said it would fix it, and the person has not said since that it did not
           -- (and the person changed nothing on their side since: then what they report is their own step's outcome)
           coalesce(a.changed_before_seq > coalesce(a.failure_before_seq, -1)
                    AND a.claim_before_seq > a.changed_before_seq
                    AND coalesce(a.own_step_before_seq, -1) < a.claim_before_seq, false) AS fix_claimed,
           -- the person's last turn before was a refusal without words, and the agent neither spoke nor acted since
           coalesce(a.refusal_before_seq = a.person_before_seq
                    AND a.refusal_before_seq > greatest(coalesce(a.agent_before_seq, -1), coalesce(a.changed_before_seq, -1)), false) AS after_refusal,
           -- stopped just before: the interruption came after the agent's last words
           a.interrupt_before_seq > coalesce(a.agent_before_seq, -1) AS interrupted,
           -- the agent's first words after the turn, before the person spoke again
           CASE WHEN a.agent_after_seq < coalesce(a.person_after_seq, 2147483647) THEN a.agent_after END AS agent_after
    FROM spoken s JOIN around a USING (trace_id, seq)
),
-- nearly the same words as an earlier turn of the person (5 distinct words or more): a request made again
repeated AS (
    SELECT s.trace_id, s.seq
    FROM (SELECT trace_id, seq, list_distinct(lw_words(content)) AS w FROM spoken WHERE type = 'user_message') s
    JOIN (SELECT trace_id, seq, list_distinct(lw_words(content)) AS w FROM spoken WHERE type = 'user_message') e
      ON e.trace_id = s.trace_id AND e.seq < s.seq
    WHERE len(s.w) >= 5 AND len(list_intersect(s.w, e.w)) >= 0.8 * len(list_distinct(list_concat(s.w, e.w)))
    GROUP BY ALL
),
judged AS (
    SELECT r.*, p.seq IS NOT NULL AS repeated,
           -- the agent's last words asked the person something (a question, or an offer to go on)
           coalesce(regexp_matches(right(agent_before, 400), '\?\s*\S{0,3}\s*$|\?\s*\n|\b(would you like|do you want|shall i|should i|(let me know|tell me) (if|whether|which|what|how|when)|please (confirm|provide|share|send|check|try|run|let me know))\b'), false) AS agent_asked,
           -- the agent's next words grant that it was wrong
           coalesce(regexp_matches(left(agent_after, 300), '\b(you''re (absolutely |completely )?(right|correct)|you are (absolutely |completely )?(right|correct)|good catch|my (mistake|bad|apologies|oversight)|(i )?apologi[sz]e for (the|my|that) (confusion|mistake|error|oversight|misunderstanding)|sorry (for|about) (the|my|that) (confusion|mistake|error|oversight|misunderstanding)|i misunderstood|i made (a|an) (mistake|error)|thanks for (catching|pointing|the correction|correcting)|i should have)\b'), false) AS agent_conceded
    FROM read r LEFT JOIN repeated p USING (trace_id, seq)
),
cues AS (
    SELECT *,
           lw_objection(said) OR lw_asks_for_check(said) AS objection,
           -- a fact the agent stated or read, disputed: "it's actually X", "X, not Y", "I did buy it"; not the
           -- person's own slip ("I gave you the wrong number")
           regexp_matches(said, '\b(is|it''s|its|was) actually\b|^\W*actually,? (it|that|this|the|my|i (did|have|had|booked|bought|purchased|added|paid|made|ordered|selected))\b|\b(wrong|incorrect) (number|line|account|id|name|date|time|flight|order|reservation|file|branch|version|one|tab|place|card|address)\b|\b(my|the) [a-z ]{1,30} is \S+, not \S+|\b(i|we) (actually|definitely|really) (did|have|had|booked|bought|purchased|added|paid|selected|made|ordered)\b|\bthat can''?t be (right|correct|true)\b|\bi''?m (really |quite |pretty |absolutely )?(sure|certain|positive) (i|we|that i|that we)\b')
               AND NOT regexp_matches(said, '\b(i|i''ve|i have|i had) (\w+ ){0,2}(provided|gave|given|used|entered|mentioned|said|typed|sent|put) (you )?(the |a |an )?(wrong|incorrect)\b') AS disputes,
           -- what the agent made or said it made is not there
           (agent_changed OR agent_claimed OR fix_claimed)
               -- (said of a thing, "they are still missing", "we seem to be missing"; not "add the missing notes",
               -- nor a question whether there is a way: "isn't there any exception?")
               AND regexp_matches(said, '\b(still|be|are|is|was|were|''re|''s)\s+(still\s+|also\s+|all\s+)?missing\b|\bmissing (from|in)\b|\b(i )?(don''?t|didn''?t|do not|did not|can''?t|cannot) see (the|any|it|them|my)\b|\b(isn''?t|is not|aren''?t|are not) (there|showing|visible|included)\b|\bdoesn''?t (link|include|show|have|contain)\b')
               AND NOT regexp_matches(said, '\b(isn''?t|is not|aren''?t|are not) there (any|a|an|some|anything|another)\b') AS missing,
           -- a redirect of what the agent did, not an offer declined: "no, use X", "don't do Y", "stop ..."
           NOT agent_asked
               AND (regexp_matches(said, '^\W*(no|nope|wrong|incorrect|not quite|not that)\b[,.!]?\s+(\w+\s+){0,3}(use|do|it|that|this|the|you|should|need|put|make|try|go|keep|leave|not|don''?t|please)\b')
                    OR regexp_matches(said, '^\W*(don''?t|do not|stop|never)\s+\w+'))
               AND NOT regexp_matches(said, '^\W*no\W+(thanks|thank you|that''?s (all|it|ok|okay|fine)|worries|problem|need)\b') AS redirects,
           lw_reports_failure(said) OR regexp_matches(said, '\b(says|shows|still|is|are|keeps?) failing\b')
               -- the problem is still there: "still no connection", "didn't help", "no change"
               OR regexp_matches(said, '\bstill (\w+ ){0,3}(no|not|poor|slow|low|bad|broken|down|the same|having|getting|seeing|showing|stuck)\b|\b(didn''?t|did not|doesn''?t|does not|hasn''?t|has not|haven''?t|have not) (help|change|fix|solve|resolve|improve)|\bno (change|difference|improvement)\b') AS reports_failure,
           -- it names what the agent made or told: "your suggested commands", "after you changed..."
           -- ("as you suggested" is a step the person took when asked, not the agent's work named)
           NOT regexp_matches(said, '\bas you (suggested|asked|said|instructed|recommended|advised)\b') AND regexp_matches(said, '\byour (suggested|suggestion|instructions?|commands?|code|fix|changes?|script|patch|solution|steps|version)\b|\b(you|you''ve) (suggested|wrote|changed|added|made|broke)\b|\bafter (you|your)\b') AS names_agent_work,
           -- output pasted with no words of the person's own: no line that speaks to the agent at its start or end
           NOT regexp_matches(lw_first_line(said, 200) || chr(10) || regexp_extract(said, '([^\n]*\S[^\n]*)\s*$', 1),
                              '\b(i|i''m|im|i''ve|my|me|you|your|we|we''re|our|us|let''s|please|can|could|would|why|how|what|still)\b|^\W*(it|this|that)\b|\?|:\s*$')
               AND (contains(said, chr(10)) OR lw_software_failure(said)) AS bare_paste
    FROM judged
),
-- which rule makes the turn a correction, first that fits; NULL: none
reasons AS (
    SELECT *,
           coalesce(bool_or(disputes) OVER (PARTITION BY trace_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS disputed_before,
           CASE WHEN interruption THEN NULL
                WHEN type = 'human_correction' THEN 'recorded'  -- a rejected tool use, a reviewer's note
                WHEN nth = 1 THEN NULL  -- the task
                -- what the person wanted instead of the call they refused: the refusal's words
                WHEN after_refusal AND words > 0 THEN 'refused'
                WHEN bare_paste THEN NULL
                -- asked again after the agent answered (a request: a status said twice asks nothing)
                WHEN repeated AND agent_before IS NOT NULL
                     AND regexp_matches(said, '\?|\b(please|can you|could you|would you|will you|i need|i want|i''d like|i asked)\b') THEN 'repeated'
                WHEN (objection OR disputes OR missing OR redirects) AND agent_asked AND words <= 6 AND NOT agent_conceded THEN NULL
                WHEN objection OR redirects THEN 'objection'
                -- yes to what the agent offered, with a fact disputed before restated as the reason
                WHEN disputes AND disputed_before AND agent_asked AND regexp_matches(said, '^\W*(yes|yeah|yep|sure)\b') THEN NULL
                WHEN disputes THEN 'disputed'
                WHEN missing THEN 'missing'
                WHEN reports_failure AND ((agent_changed AND NOT own_step) OR (agent_claimed AND NOT own_step_since_claim)
                                          OR fix_claimed OR names_agent_work OR agent_conceded) THEN 'failed'
                WHEN agent_conceded AND (agent_changed OR agent_claimed) THEN 'conceded' END AS reason
    FROM cues
)
SELECT trace_id, seq, event_id, speaker, nth::INTEGER AS nth, words::INTEGER AS words,
       CASE WHEN interruption THEN 'interruption'
            WHEN nth = 1 AND type <> 'human_correction' THEN 'instruction'
            WHEN reason IS NOT NULL THEN 'correction'
            WHEN bare_paste THEN 'paste'
            WHEN words >= 4 AND NOT regexp_matches(said, '\b(the|a|an|i|you|it|is|are|to|of|and|in|on|for|this|that|my|me|we|not|no|yes|please|can|do|what|how|why|ok|okay|thanks|thank)\b')
                 THEN 'unknown'
            WHEN words <= 8 AND regexp_matches(said, '^\W*(thanks|thank you|thx|ok|okay|great|perfect|awesome|nice|cool|good|got it|sounds good|bye|goodbye|no,? (thanks|thank you|that''?s (all|it))|that''?s (all|it|everything)|all good)\b')
                 AND NOT regexp_matches(said, '\b(please|can you|could you|now|next|also|but)\b') THEN 'acknowledgement'
            WHEN agent_asked THEN 'answer'
            ELSE 'instruction' END AS intent,
       reason, coalesce(interrupted, false) AS interrupted, agent_asked, agent_claimed, claimed_last, agent_changed,
       agent_conceded, fix_claimed, repeated, reports_failure, names_agent_work, bare_paste
FROM reasons
UNION ALL
-- a person who spoke once: the task, or an interruption with nothing after it; nothing read against the agent
SELECT trace_id, seq, event_id, speaker, 1 AS nth, words::INTEGER AS words,
       CASE WHEN interrupt THEN 'interruption' ELSE 'instruction' END AS intent, NULL AS reason,
       false AS interrupted, false AS agent_asked, false AS agent_claimed, false AS claimed_last, NULL AS agent_changed,
       false AS agent_conceded, false AS fix_claimed, false AS repeated, NULL AS reports_failure,
       NULL AS names_agent_work, NULL AS bare_paste
FROM everyone ANTI JOIN talked USING (trace_id);

-- What worked after a failure no call fixed: the person's correction, when their next turn is one (the
-- facts leave it open until the turns are read). Its cost is the agent's calls in between.
UPDATE facts SET recovery_kind = 'correction', recovery_seq = c.turn_seq, recovery = c.content, wasted_steps = c.calls
FROM (
    SELECT f.trace_id, f.seq, n.seq AS turn_seq, e.content,
           (SELECT count(*) FROM facts b WHERE b.trace_id = f.trace_id AND b.type = 'tool_call' AND b.actor = 'agent'
                                            AND b.seq > f.seq AND b.seq < n.seq) AS calls
    FROM facts f
    ASOF JOIN (SELECT trace_id, seq, intent FROM turns) n ON n.trace_id = f.trace_id AND n.seq > f.seq
    JOIN events e ON e.trace_id = n.trace_id AND e.seq = n.seq
    WHERE f.type = 'tool_call' AND f.failed AND NOT coalesce(f.environment, false) AND f.recovery_kind IS NULL
      AND n.intent = 'correction'
) c
WHERE facts.trace_id = c.trace_id AND facts.seq = c.seq;
