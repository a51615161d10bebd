-- id: unverified_claim
-- title: The agent claimed an action no tool performed
-- severity: high
-- confidence: likely
-- description: The agent's answer, or a worker's report, says it did something that changes state
--   (updated, created, sent, booked, cancelled, refunded, escalated, deleted, merged, paid...) and no
--   successful tool call in the trace did anything of the kind: none whose name says so (update_ticket,
--   cancel_reservation; for a shell tool, the command it ran), and none whose arguments do (a status set to
--   "escalated", a payment id). Adding to and updating something are one kind of action, and a call that
--   sends or posts something backs a claim of having issued or added it, and a write of a kind no class
--   names (refuel_data) a claim of adding or changing what its name names (data). A claim is "I have updated ticket
--   55", "we cancelled it", "your reservation has been updated", "I've fixed the test and committed it";
--   not a plan ("I will update"), a negation ("I could not update") or a condition ("once I have updated"). Lookups (get,
--   search, list...) make no claim true or false. The object a claim names (ticket 55) is not matched
--   against the calls' arguments: a claim about a customer is often done on their ticket, or on a date.
-- lesson: Only report an action as done after the tool that performs it has succeeded: {evidence}
WITH said AS (
    SELECT trace_id, event_id, seq, trim(sentence) AS sentence, lw_lowered(trim(sentence)) AS lowered FROM (
        SELECT trace_id, event_id, seq, unnest(string_split_regex(content, '[.!?;]+\s+|\n+')) AS sentence
        FROM (SELECT trace_id, event_id, seq, content, lw_lowered(content) AS lowered FROM events
              WHERE type IN ('final_answer', 'assistant_message') AND content IS NOT NULL)
        -- only messages with a claim somewhere are cut into sentences
        WHERE regexp_matches(lowered, lw_claim_done())
           OR (lw_may_claim_been(lowered) AND regexp_matches(lowered, lw_claim_been()))
           OR (lw_may_claim_second(lowered) AND regexp_matches(lowered, lw_claim_second())))
),
-- Each claim in a sentence, in three shapes (lw_claim_done, lw_claim_been, lw_claim_second in macros.sql);
-- a claim ends with the verb it claims. The sentences with a verb are kept once (MATERIALIZED), not found
-- again for each shape; the last two shapes run only on sentences holding the words they need.
verb_said AS MATERIALIZED (
    SELECT * FROM said WHERE regexp_matches(lowered, '\b(' || lw_action_verbs() || ')\b')
),
claimed AS (
    SELECT *, unnest(regexp_extract_all(lowered, lw_claim_done())) AS claim FROM verb_said
    UNION ALL
    SELECT *, unnest(CASE WHEN lw_may_claim_been(lowered) THEN regexp_extract_all(lowered, lw_claim_been()) END) FROM verb_said
    UNION ALL
    -- the second of two claims: "I've fixed the test and committed it"
    SELECT *, unnest(CASE WHEN lw_may_claim_second(lowered) THEN regexp_extract_all(lowered, lw_claim_second()) END) FROM verb_said
),
verbs AS (
    SELECT unnest(string_split(c.verbs, '|')) AS verb, c.class, c.verbs
    FROM (SELECT unnest(lw_action_classes()).class AS class, unnest(lw_action_classes()).verbs AS verbs) c
),
made AS (
    -- a claim, not a plan, a negation or a condition before it
    SELECT DISTINCT f.trace_id, f.event_id, f.seq, f.sentence, f.lowered, v.class, v.verbs
    FROM claimed f JOIN verbs v ON v.verb = regexp_extract(f.claim, '(\w+)$', 1)
    WHERE NOT regexp_matches(left(f.lowered, strpos(f.lowered, f.claim) - 1),
                             '\b(not|never|unable|cannot|can''t|couldn''t|didn''t|haven''t|hasn''t|won''t|if|once|when|until|whether|would|will|should|let me|going to|about to|before|after)\b')
),
calls AS (
    SELECT trace_id, seq, tool_name, status, success, lw_words(lw_call_args(metadata, extra, content)) AS arg_words,
           lw_tool_action(tool_name, lw_call_args(metadata, extra, content)) AS class,
           -- a write of a kind no class names (refuel_data, toggle_roaming): the words of its name
           CASE WHEN NOT lw_lookup_tool(tool_name) THEN list_filter(lw_words(tool_name), lambda w: len(w) >= 4) END AS name_words,
           lead(seq) OVER (PARTITION BY trace_id, tool_name ORDER BY seq) AS next_call
    FROM events WHERE type = 'tool_call' AND trace_id IN (SELECT trace_id FROM made)  -- only traces with a claim
),
-- a call succeeded unless it, or the result that answered it (before the tool was called again), failed
succeeded AS (
    SELECT c.* FROM calls c
    WHERE NOT lw_failed(c.status, c.success)
      AND NOT EXISTS (SELECT 1 FROM events r
                      WHERE r.trace_id = c.trace_id AND r.tool_name = c.tool_name AND r.type IN ('tool_result', 'error')
                        AND r.seq > c.seq AND r.seq < coalesce(c.next_call, 2147483647) AND lw_failed(r.status, r.success))
)
SELECT m.trace_id, m.event_id, m.seq,
       'claimed "' || lw_clip(m.sentence, 200) || '", but no tool call in the trace '
           || regexp_extract(m.lowered, '\b(' || m.verbs || ')\b', 1) || ' anything' AS evidence,
       'The agent reported an action as done that no tool call performed.' AS problem
FROM made m
WHERE NOT EXISTS (
    SELECT 1 FROM succeeded c, (SELECT unnest(lw_action_classes()).class AS class, unnest(lw_action_classes()).stems AS stems) k
    WHERE c.trace_id = m.trace_id AND k.class = m.class
      AND (c.class = m.class OR (c.class IN ('update', 'create') AND m.class IN ('update', 'create'))
           -- a call that sends or posts something creates it where it lands (issued a voucher, added a note)
           OR (c.class = 'send' AND m.class = 'create')
           -- a write no class names backs a claim of adding or changing what its name names ("added 2 GB of
           -- data" after refuel_data)
           OR (c.class IS NULL AND m.class IN ('update', 'create') AND list_has_any(c.name_words, lw_words(m.sentence)))
           OR (c.class IS NOT NULL
               AND list_bool_or(list_transform(c.arg_words, lambda w: list_bool_or(list_transform(k.stems, lambda st: lw_stem_matches(w, st))))))))
QUALIFY row_number() OVER (PARTITION BY m.trace_id, m.event_id, m.class ORDER BY m.sentence) = 1
