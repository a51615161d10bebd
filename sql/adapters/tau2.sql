-- format: tau2
-- title: tau2-bench results: the monolithic results file, and the "dir" layout (results.json + simulations/<id>.json)
-- match: CASE WHEN list_has_all(json_keys(doc), ['id', 'task_id', 'termination_reason']) THEN true
--   WHEN list_has_any(json_keys(doc), ['simulations', 'simulation_index'])
--     THEN json_exists(doc, '$.info.environment_info') OR json_exists(doc, '$.info.agent_info')
--   ELSE false END
-- priority: 341
-- gathers: yes
-- whole: true
-- roles: user = counterpart (the user simulator, an LLM playing the customer, and the tools it calls on the
--   customer's own device: requestor user); assistant = agent (but its first greeting, which tau2 writes
--   itself); tool = tool (the result of its call, actor as the call's); system = context, no event. Read
--   in sierra-research/tau2-bench src/tau2/data_model/message.py (UserMessage, ToolCall.requestor) and
--   src/tau2/user/user_simulator.py. No person operates the agent in a run: no event is `human`.
--
-- tau2-bench (sierra-research/tau2-bench) writes a run as a Results document {timestamp, info, tasks,
-- simulations}, or, in its "dir" layout, as results.json {timestamp, info, tasks, simulation_index} beside
-- simulations/<simulation id>.json, one SimulationRun per file. One simulation is one trace (trace_id = its
-- `id`). `tasks` are the grader's answer key (expected actions, assertions): they are never read.
-- The run's `info` describes every simulation of the run: the domain (source `tau2/<domain>`), the policy the
-- agent ran under (traces.extra.policy, the trace's context, not an event; a simulation's own `policy` field
-- wins), the agent's and the user simulator's models (metadata). A simulation file takes the info of the
-- results record of its run folder (<run>/results.json for <run>/simulations/<id>.json; one whose
-- simulation_index lists it first) when both are read together; that results record holds no trace of its
-- own and is linked (record_links) to the simulations it described. Read alone, a simulation still loads
-- (source `tau2`, its own policy when it has one); a results record with no simulation in it and none read
-- with it is rejected with that reason (there is nothing to load from it alone).
-- Messages: assistant text is an assistant_message (the last one the final_answer; the greeting tau2 writes
-- itself stays an assistant_message), user text a user_message of the customer (actor counterpart: the user
-- simulator speaks as the customer). Every `tool_calls` entry is a tool_call (tool_name, metadata.arguments,
-- metadata.tool_call_id, metadata.requestor); `requestor: user` is the customer acting on their own device
-- (telecom), actor counterpart. A `tool` message is the tool_result of its call (by id, else by order after the
-- calling message; parent_id the call's event), status error when its `error` flag is true, actor as its
-- call's. termination_reason (user_stop, max_steps, too_many_errors, ...) is traces.outcome. reward_info,
-- when present, is one evaluation_result after the last message: passed at reward 1, failed below; its
-- content names the reward, its components and those that failed, or the evaluator's note (a premature
-- end); never the expected actions or assertions (the answer key copied into the checks).
-- A simulation in more than one record (a monolithic file and its dir copy) is one trace: the copy read with
-- its run's info, else the first read, is used, and the other records are linked to it.
-- A results record, or a simulation file, that cannot be read (a simulation with no id, `messages` not a
-- list, a message with no role) is rejected whole, with the position of the first problem.
-- Set at a time: each record is parsed once into typed columns (a simulation's messages and unknown fields
-- kept as JSON), each message once; the records are read where they are (records_in), never copied.
-- Full-duplex (voice) simulations, which store `ticks` and no `messages`, load with no events.

-- Each record: a Results document (monolithic, or the dir layout's results.json) or a SimulationRun.
CREATE OR REPLACE TEMP TABLE tau2_docs AS
SELECT file_id, file, line, record, keys,
       CASE WHEN list_has_all(keys, ['id', 'task_id', 'termination_reason']) THEN 'simulation' ELSE 'results' END AS shape
FROM (SELECT file_id, file, line, record, json_keys(doc) AS keys FROM records_in);

-- The results records, parsed once: their run info (typed) and their simulations (each kept as JSON).
CREATE OR REPLACE TEMP TABLE tau2_results AS
SELECT file_id, file, line, record, keys,
       regexp_extract(file, '^(.*)[/\\][^/\\]*$', 1) AS folder,
       r.timestamp AS run_timestamp, r.info, r.simulations,
       -- (looked at again only when it did not parse as a list)
       CASE WHEN r.simulations IS NULL AND list_contains(keys, 'simulations') THEN json_type(doc, '$.simulations') END AS t_simulations,
       list_transform(r.simulation_index, lambda x: x.id) AS index_ids,
       from_json(r.info, '{"git_commit": "VARCHAR", "num_trials": "BIGINT", "max_steps": "BIGINT",
                           "max_errors": "BIGINT", "seed": "BIGINT",
                           "agent_info": {"implementation": "VARCHAR", "llm": "VARCHAR"},
                           "user_info": {"implementation": "VARCHAR", "llm": "VARCHAR"},
                           "environment_info": {"domain_name": "VARCHAR", "policy": "VARCHAR"}}') AS i
FROM (SELECT d.*, x.doc, from_json(x.doc, '{"timestamp": "VARCHAR", "info": "JSON", "simulations": ["JSON"],
                                            "simulation_index": [{"id": "VARCHAR"}]}') AS r
      FROM tau2_docs d JOIN records_in x USING (file_id, record) WHERE d.shape = 'results');

-- Every simulation, with the record it came from (pos: its place in a results file's list) and, for a
-- simulation file, the folder of its run (the one holding simulations/); typed once, its messages kept as
-- JSON, and the fields no column takes (review, info, auth_classification, ...) as `rest`.
CREATE OR REPLACE TEMP TABLE tau2_sims AS
SELECT file_id, record, pos, in_results, run_folder, json_type(sim) AS t_sim,
       from_json(sim, '{"id": "VARCHAR", "task_id": "VARCHAR", "start_time": "VARCHAR",
                        "end_time": "VARCHAR", "duration": "DOUBLE", "termination_reason": "VARCHAR",
                        "agent_cost": "DOUBLE", "user_cost": "DOUBLE", "trial": "BIGINT", "seed": "BIGINT",
                        "mode": "VARCHAR", "policy": "VARCHAR", "messages": "JSON",
                        "reward_info": {"reward": "DOUBLE", "db_check": {"db_match": "BOOLEAN"},
                                        "env_assertions": [{"met": "BOOLEAN"}], "action_checks": [{"action_match": "BOOLEAN"}],
                                        "nl_assertions": [{"met": "BOOLEAN"}], "communicate_checks": [{"met": "BOOLEAN"}],
                                        "reward_basis": ["VARCHAR"], "reward_breakdown": "MAP(VARCHAR, DOUBLE)",
                                        "info": "JSON"}}') AS s,
       CASE WHEN json_type(sim) = 'OBJECT' THEN
           (SELECT json_group_object(key, value) FROM json_each(json_merge_patch(sim,
                '{"id":null,"task_id":null,"start_time":null,"end_time":null,"termination_reason":null,"messages":null,
                  "reward_info":null,"trial":null,"seed":null,"mode":null,"duration":null,"agent_cost":null,
                  "user_cost":null,"policy":null,"ticks":null}')) WHERE type <> 'NULL') END AS rest
FROM (
    SELECT file_id, record, generate_subscripts(simulations, 1) AS pos, unnest(simulations) AS sim,
           true AS in_results, NULL::VARCHAR AS run_folder
    FROM tau2_results WHERE simulations IS NOT NULL
    UNION ALL
    SELECT d.file_id, d.record, 1, x.doc, false, nullif(regexp_extract(d.file, '^(.*)[/\\]simulations[/\\][^/\\]+$', 1), '')
    FROM tau2_docs d JOIN records_in x USING (file_id, record) WHERE d.shape = 'simulation'
);
ALTER TABLE tau2_results DROP COLUMN simulations;

-- Every message of every simulation, in order (pos), parsed once. `rest`: what else a message says (turn
-- index, cost, usage, audio fields); raw_data, the provider's copy of the same text and calls, is left out.
CREATE OR REPLACE TEMP TABLE tau2_messages AS
SELECT file_id, record, sim_pos, pos, t_msg, m,
       CASE WHEN t_msg = 'OBJECT' THEN
           (SELECT json_group_object(key, value) FROM json_each(json_merge_patch(msg,
                '{"role":null,"content":null,"tool_calls":null,"id":null,"requestor":null,"error":null,"timestamp":null,"raw_data":null}'))
            WHERE type <> 'NULL') END AS rest
FROM (
    SELECT *, json_type(msg) AS t_msg,
           from_json(msg, '{"role": "VARCHAR", "content": "VARCHAR", "tool_calls": "JSON", "id": "VARCHAR",
                            "requestor": "VARCHAR", "error": "BOOLEAN", "timestamp": "VARCHAR"}') AS m
    FROM (SELECT file_id, record, sim_pos, generate_subscripts(items, 1) AS pos, unnest(items) AS msg
          FROM (SELECT file_id, record, pos AS sim_pos, from_json(s.messages::VARCHAR, '["JSON"]') AS items
                FROM tau2_sims WHERE t_sim = 'OBJECT' AND s.messages IS NOT NULL))
);

-- The first thing wrong with each record (a results file is rejected whole for one bad simulation, as a
-- conversation is for one bad message).
CREATE OR REPLACE TEMP TABLE tau2_problems AS
SELECT file_id, record, arg_min(problem, (sim_pos, pos)) AS problem FROM (
    SELECT file_id, record, pos AS sim_pos, 0 AS pos,
           CASE WHEN in_results THEN 'simulations[' || (pos - 1) || ']: ' ELSE '' END
           || CASE WHEN t_sim <> 'OBJECT' THEN 'not an object'
                   WHEN nullif(trim(s.id), '') IS NULL THEN 'missing required field ''id'''
                   WHEN s.messages IS NOT NULL AND json_type(s.messages) <> 'ARRAY' THEN 'field ''messages'' must be a list'
              END AS problem
    FROM tau2_sims
    UNION ALL
    SELECT m.file_id, m.record, m.sim_pos, m.pos,
           CASE WHEN s.in_results THEN 'simulations[' || (m.sim_pos - 1) || '].' ELSE '' END
           || 'messages[' || (m.pos - 1) || ']: ' || CASE WHEN m.t_msg <> 'OBJECT' THEN 'not an object'
                           WHEN nullif(trim(m.m.role), '') IS NULL THEN 'missing required field ''role'''
                           WHEN coalesce(json_type(m.m.tool_calls), 'ARRAY') <> 'ARRAY' THEN 'field ''tool_calls'' must be a list'
                      END
    FROM tau2_messages m JOIN tau2_sims s ON s.file_id = m.file_id AND s.record = m.record AND s.pos = m.sim_pos
) WHERE problem IS NOT NULL GROUP BY file_id, record
UNION ALL
SELECT file_id, record, 'field ''simulations'' must be a list' FROM tau2_results
WHERE coalesce(t_simulations, 'NULL') NOT IN ('NULL', 'ARRAY');
ALTER TABLE tau2_sims DROP COLUMN s.messages;

INSERT INTO rejects (file_id, line, record, reason)
SELECT d.file_id, d.line, d.record, p.problem FROM tau2_problems p JOIN tau2_docs d USING (file_id, record);

-- The run each simulation belongs to: its own results record, or, for a simulation file, the results
-- record of its run folder (one whose simulation_index lists it first), else one anywhere in the batch whose
-- simulation_index lists it.
CREATE OR REPLACE TEMP TABLE tau2_runs AS
SELECT s.file_id, s.record, s.pos, r.file_id AS run_file_id, r.record AS run_record
FROM tau2_sims s JOIN tau2_results r
  ON (s.in_results AND r.file_id = s.file_id AND r.record = s.record)
  OR (NOT s.in_results AND (r.folder = s.run_folder OR list_contains(r.index_ids, s.s.id)))
WHERE s.t_sim = 'OBJECT'
  AND NOT EXISTS (SELECT 1 FROM tau2_problems p WHERE p.file_id = r.file_id AND p.record = r.record)
QUALIFY row_number() OVER (PARTITION BY s.file_id, s.record, s.pos
                           ORDER BY coalesce(list_contains(r.index_ids, s.s.id), false) DESC,
                                    r.folder IS NOT DISTINCT FROM s.run_folder DESC, r.file_id, r.record) = 1;

-- The simulations to load: per id, the copy read with its run's info, else the first read.
CREATE OR REPLACE TEMP TABLE tau2_chosen AS
SELECT * EXCLUDE (nth) FROM (
    SELECT s.file_id, s.record, s.pos, trim(s.s.id) AS trace_id, d.file, d.line, u.run_file_id, u.run_record,
           row_number() OVER (PARTITION BY trim(s.s.id) ORDER BY u.run_record IS NOT NULL DESC, s.file_id, s.record, s.pos) AS nth
    FROM tau2_sims s JOIN tau2_docs d USING (file_id, record)
    LEFT JOIN tau2_runs u USING (file_id, record, pos)
    ANTI JOIN tau2_problems p USING (file_id, record)
) WHERE nth = 1;

-- The parts of each message that become events, in order: its text (k 0), then its tool calls (k 1..n);
-- a tool message is a tool result. System text is the trace's context (extra.system), not an event.
CREATE OR REPLACE TEMP TABLE tau2_parts AS
WITH msgs AS (
    SELECT c.trace_id, m.pos, m.rest, m.m, lower(trim(m.m.role)) AS role
    FROM tau2_messages m JOIN tau2_chosen c ON c.file_id = m.file_id AND c.record = m.record AND c.pos = m.sim_pos
),
calls AS (
    SELECT trace_id, pos, role, ts, generate_subscripts(cs, 1) AS k, unnest(cs) AS c
    FROM (SELECT trace_id, pos, role, lw_utc(m.timestamp) AS ts,
                 from_json(m.tool_calls, '[{"id": "VARCHAR", "name": "VARCHAR", "arguments": "JSON", "requestor": "VARCHAR"}]') AS cs
          FROM msgs WHERE json_type(m.tool_calls) = 'ARRAY')
)
SELECT trace_id, pos, 0 AS k,
       CASE WHEN role = 'tool' THEN 'tool_result' WHEN role = 'assistant' THEN 'assistant_message'
            WHEN role = 'user' THEN 'user_message' ELSE 'unknown' END AS kind,
       m.role AS raw_role, m.content AS text, nullif(trim(m.id), '') AS call_id, NULL::VARCHAR AS tool,
       NULL::JSON AS args, CASE WHEN role = 'tool' THEN lower(trim(m.requestor)) END AS requestor,
       CASE WHEN role = 'tool' THEN coalesce(m.error, false) END AS is_error, lw_utc(m.timestamp) AS ts,
       rest AS extra
FROM msgs
WHERE role <> 'system'
  AND (role = 'tool' OR nullif(trim(m.content), '') IS NOT NULL
       -- a message of a role not known is kept, even with no text
       OR (role NOT IN ('assistant', 'user') AND json_type(m.tool_calls) IS DISTINCT FROM 'ARRAY'))
UNION ALL
SELECT trace_id, pos, k, 'tool_call', role || ':tool_call', c.name, nullif(trim(c.id), ''), c.name, c.arguments,
       coalesce(lower(trim(c.requestor)), CASE WHEN role = 'user' THEN 'user' ELSE 'assistant' END), NULL, ts, NULL
FROM calls;

-- A tool result answers the call with its id (the latest before it), else, by order, the call in the
-- same place among those of the last message that made calls.
CREATE OR REPLACE TEMP TABLE tau2_pairs AS
WITH calls AS (
    SELECT trace_id, pos, k, call_id, tool, requestor, 'm' || (pos - 1) || '.' || k AS event_id
    FROM tau2_parts WHERE kind = 'tool_call'
),
callers AS (SELECT DISTINCT trace_id, pos FROM calls),
res AS (
    SELECT r.trace_id, r.pos, r.k, r.call_id, g.pos AS caller,
           row_number() OVER (PARTITION BY r.trace_id, g.pos ORDER BY r.pos, r.k) AS nth
    FROM tau2_parts r ASOF LEFT JOIN callers g ON g.trace_id = r.trace_id AND r.pos > g.pos
    WHERE r.kind = 'tool_result'
),
by_id AS (
    SELECT r.trace_id, r.pos, r.k, c.event_id, c.tool, c.requestor, c.call_id
    FROM res r JOIN calls c ON c.trace_id = r.trace_id AND c.call_id = r.call_id AND c.pos < r.pos
    QUALIFY row_number() OVER (PARTITION BY r.trace_id, r.pos, r.k ORDER BY c.pos DESC, c.k) = 1
)
SELECT r.trace_id, r.pos, r.k, coalesce(i.event_id, o.event_id) AS call_event, coalesce(i.tool, o.tool) AS tool,
       coalesce(i.requestor, o.requestor) AS requestor, coalesce(i.call_id, o.call_id) AS call_id
FROM res r
LEFT JOIN by_id i USING (trace_id, pos, k)
LEFT JOIN calls o ON i.event_id IS NULL AND o.trace_id = r.trace_id AND o.pos = r.caller AND o.k = r.nth;

CREATE OR REPLACE TEMP TABLE tau2_events AS
SELECT p.*, coalesce(x.tool, p.tool) AS tool_name, x.call_event,
       coalesce(p.call_id, x.call_id) AS tool_call_id,
       coalesce(x.requestor, p.requestor) AS who,
       row_number() OVER (PARTITION BY p.trace_id ORDER BY p.pos, p.k) AS seq,
       p.kind = 'assistant_message'
           AND (p.pos, p.k) = max((p.pos, p.k)) FILTER (WHERE p.kind = 'assistant_message') OVER (PARTITION BY p.trace_id)
           AS is_final
FROM tau2_parts p LEFT JOIN tau2_pairs x ON p.kind = 'tool_result' AND x.trace_id = p.trace_id AND x.pos = p.pos AND x.k = p.k;

-- Per simulation: its task (the customer's first words) and any system text in its messages.
CREATE OR REPLACE TEMP TABLE tau2_firsts AS
SELECT trace_id, lw_clip(arg_min(text, seq), 300) AS task FROM tau2_events WHERE kind = 'user_message' GROUP BY trace_id;
CREATE OR REPLACE TEMP TABLE tau2_system AS
SELECT c.trace_id, string_agg(m.m.content, chr(10) || chr(10) ORDER BY m.pos) AS system
FROM tau2_messages m JOIN tau2_chosen c ON c.file_id = m.file_id AND c.record = m.record AND c.pos = m.sim_pos
WHERE lower(trim(m.m.role)) = 'system' AND nullif(trim(m.m.content), '') IS NOT NULL
GROUP BY c.trace_id;

INSERT INTO traces (trace_id, format, source, task, outcome, tenant, file, line, started_at, ended_at,
                    metadata, extra, file_id, record)
SELECT c.trace_id, 'tau2',
       'tau2' || coalesce('/' || nullif(trim(r.i.environment_info.domain_name), ''), ''),
       f.task, nullif(trim(s.s.termination_reason), ''),
       NULL, c.file, c.line, lw_utc(s.s.start_time), lw_utc(s.s.end_time),
       nullif(json_merge_patch('{}', json_object(
           'task_id', s.s.task_id, 'trial', s.s.trial, 'seed', s.s.seed,
           'domain', r.i.environment_info.domain_name,
           'agent_model', r.i.agent_info.llm, 'user_model', r.i.user_info.llm,
           'agent', r.i.agent_info.implementation, 'user', r.i.user_info.implementation,
           'mode', s.s.mode, 'duration', s.s.duration, 'agent_cost', s.s.agent_cost, 'user_cost', s.s.user_cost,
           'max_steps', r.i.max_steps, 'max_errors', r.i.max_errors, 'git_commit', r.i.git_commit))::VARCHAR, '{}')::JSON,
       -- the policy is the trace's context; the run's other settings and the simulation's other fields are
       -- kept (the ticks of a voice run, often audio, are not)
       nullif(json_merge_patch(coalesce(s.rest, '{}'),
           json_object('policy', coalesce(s.s.policy, r.i.environment_info.policy),
                       'system', y.system,
                       'run', json_merge_patch(r.info, '{"environment_info": {"policy": null}}'),
                       'run_timestamp', r.run_timestamp))::VARCHAR, '{}')::JSON,
       c.file_id, c.record
FROM tau2_chosen c
JOIN tau2_sims s USING (file_id, record, pos)
LEFT JOIN tau2_firsts f USING (trace_id)
LEFT JOIN tau2_system y USING (trace_id)
LEFT JOIN tau2_results r ON r.file_id = c.run_file_id AND r.record = c.run_record;

INSERT INTO events (trace_id, seq, event_id, type, raw_type, content, status, success, tool_name, ts,
                    parent_id, metadata, extra, file_id, record, actor)
SELECT e.trace_id, e.seq,
       'm' || (e.pos - 1) || CASE WHEN e.k > 0 THEN '.' || e.k ELSE '' END,
       CASE WHEN e.is_final THEN 'final_answer' ELSE e.kind END,
       e.raw_role, e.text,
       CASE WHEN e.kind = 'tool_result' THEN CASE WHEN e.is_error THEN 'error' ELSE 'ok' END END,
       CASE WHEN e.kind = 'tool_result' THEN NOT e.is_error END,
       CASE WHEN e.kind IN ('tool_call', 'tool_result') THEN e.tool_name END,
       e.ts,
       CASE WHEN e.kind = 'tool_result' THEN e.call_event END,
       CASE WHEN e.kind = 'tool_call' THEN json_object('arguments', e.args, 'tool_call_id', e.call_id, 'requestor', e.who)
            WHEN e.kind = 'tool_result' THEN nullif(json_merge_patch('{}', json_object('tool_call_id', e.tool_call_id,
                                                                                        'requestor', e.who))::VARCHAR, '{}')::JSON END,
       nullif(e.extra::VARCHAR, '{}')::JSON, c.file_id, c.record,
       -- the customer: their words, and the tools they run on their own device (and what those return)
       CASE WHEN e.kind = 'user_message' THEN 'counterpart'
            WHEN e.kind IN ('tool_call', 'tool_result') AND e.who = 'user' THEN 'counterpart' END
FROM tau2_events e JOIN tau2_chosen c USING (trace_id)
UNION ALL
-- the grader's verdict, after the last message: the reward, its components, those that failed, the note
SELECT c.trace_id,
       coalesce((SELECT max(e.seq) FROM tau2_events e WHERE e.trace_id = c.trace_id), 0) + 1,
       'reward', 'evaluation_result', 'reward_info',
       'reward ' || ri.reward
       || coalesce(' (' || nullif(array_to_string(list_transform(map_entries(ri.reward_breakdown),
                                                                 lambda x: x.key || ' ' || x.value), ', '), '') || ')', '')
       || coalesce('; failed: ' || nullif(array_to_string(list_transform(list_filter(map_entries(ri.reward_breakdown),
                                                                                     lambda x: x.value < 1), lambda x: x.key), ', '), ''), '')
       || coalesce(': ' || nullif(trim(ri.info->>'note'), ''), ''),
       CASE WHEN ri.reward >= 1 THEN 'passed' ELSE 'failed' END, ri.reward >= 1, NULL, lw_utc(c.end_time), NULL,
       json_merge_patch('{}', json_object(
           'reward', ri.reward, 'reward_basis', ri.reward_basis, 'reward_breakdown', ri.reward_breakdown,
           'db_match', ri.db_check.db_match,
           'action_checks', CASE WHEN ri.action_checks IS NOT NULL THEN json_object(
               'met', len(list_filter(ri.action_checks, lambda x: x.action_match)), 'of', len(ri.action_checks)) END,
           'env_assertions', CASE WHEN ri.env_assertions IS NOT NULL THEN json_object(
               'met', len(list_filter(ri.env_assertions, lambda x: x.met)), 'of', len(ri.env_assertions)) END,
           'nl_assertions', CASE WHEN ri.nl_assertions IS NOT NULL THEN json_object(
               'met', len(list_filter(ri.nl_assertions, lambda x: x.met)), 'of', len(ri.nl_assertions)) END,
           'communicate_checks', CASE WHEN ri.communicate_checks IS NOT NULL THEN json_object(
               'met', len(list_filter(ri.communicate_checks, lambda x: x.met)), 'of', len(ri.communicate_checks)) END,
           'note', ri.info->>'note')),
       NULL, c.file_id, c.record, 'harness'
FROM (SELECT c.*, s.s.end_time, s.s.reward_info AS ri FROM tau2_chosen c JOIN tau2_sims s USING (file_id, record, pos)) c
WHERE c.ri.reward IS NOT NULL;

-- The other records of a loaded simulation: its other copies, and the run records whose info it took.
INSERT INTO record_links (file_id, record, trace_id)
SELECT s.file_id, s.record, trim(s.s.id) FROM tau2_sims s
SEMI JOIN tau2_chosen c ON c.trace_id = trim(s.s.id)
ANTI JOIN tau2_problems p USING (file_id, record)
UNION
SELECT u.run_file_id, u.run_record, trim(s.s.id)
FROM tau2_runs u JOIN tau2_sims s USING (file_id, record, pos)
SEMI JOIN tau2_chosen c ON c.trace_id = trim(s.s.id)
ANTI JOIN tau2_problems p USING (file_id, record)
EXCEPT
SELECT file_id, record, trace_id FROM tau2_chosen;

-- A results record that holds no simulation and had none read with it: nothing of it can load alone.
INSERT INTO rejects (file_id, line, record, reason)
SELECT r.file_id, r.line, r.record,
       'tau2 results without simulations: ''simulations'' is empty or missing, and no simulation of this run'
       || coalesce(' (its simulation_index lists ' || len(r.index_ids) || ')', '')
       || ' was read with it; they are the files in simulations/ beside it'
FROM tau2_results r
ANTI JOIN tau2_problems p USING (file_id, record)
WHERE NOT EXISTS (SELECT 1 FROM record_links l WHERE l.file_id = r.file_id AND l.record = r.record)
  AND NOT EXISTS (SELECT 1 FROM tau2_chosen c WHERE c.file_id = r.file_id AND c.record = r.record);

DROP TABLE tau2_docs;
DROP TABLE tau2_results;
DROP TABLE tau2_sims;
DROP TABLE tau2_messages;
DROP TABLE tau2_problems;
DROP TABLE tau2_runs;
DROP TABLE tau2_chosen;
DROP TABLE tau2_parts;
DROP TABLE tau2_pairs;
DROP TABLE tau2_events;
DROP TABLE tau2_firsts;
DROP TABLE tau2_system;
