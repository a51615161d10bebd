-- id: committed_unwanted_files
-- title: The agent committed files that do not belong in the repository
-- severity: high
-- floor: none
-- description: A commit the agent made (a `git commit`, often after `git add -A` or `git add .`) that
--   took in files that do not belong in version control: an agent's own session state (.codex/, .claude/,
--   .cursor/, .aider*), credentials and keys (.env, *.pem, *.key, id_rsa, auth.json, credentials.json,
--   .npmrc, .pypirc, .netrc) or caches and environments (__pycache__/, .venv/, node_modules/,
--   .pytest_cache/). Read from the commit's own output (`create mode 100644 path`). Severity high (medium
--   for caches alone); even once it is a lesson (`floor: none`): what a commit publishes stays in history.
--   Staging files and unstaging them before the commit is no finding.
WITH commits AS (
    SELECT f.trace_id, coalesce(f.result_event_id, f.event_id) AS event_id, coalesce(f.result_seq, f.seq) AS seq,
           f.command, f.tool_key, e.content AS output
    FROM facts f JOIN events e ON e.trace_id = f.trace_id AND e.seq = coalesce(f.result_seq, f.seq)
    WHERE f.type = 'tool_call' AND f.actor = 'agent' AND regexp_matches(coalesce(f.command, ''), '\bgit\s+commit\b')
      AND contains(coalesce(e.content, ''), 'create mode')
),
files AS (
    SELECT c.*, unnest(regexp_extract_all(c.output, 'create mode \d+ (\S+)', 1)) AS path FROM commits c
),
unwanted AS (
    SELECT f.*,
           CASE WHEN regexp_matches(f.path, '(^|/)\.env(\.[\w-]+)?$|\.(pem|key|p12|pfx)$|(^|/)(id_rsa|id_ed25519|id_ecdsa)$|(^|/)(auth|credentials|secrets?)\.json$|(^|/)\.(npmrc|pypirc|netrc)$')
                     THEN 'credentials'
                WHEN regexp_matches(f.path, '(^|/)(\.codex|\.claude|\.cursor|\.aider[^/]*|\.continue|\.windsurf)/') THEN 'agent state'
                WHEN regexp_matches(f.path, '(^|/)(__pycache__|\.venv|venv|node_modules|\.pytest_cache|\.mypy_cache|\.ruff_cache)/|\.pyc$')
                     THEN 'caches'
           END AS kind,
           regexp_extract(f.path, '(^|/)(\.codex|\.claude|\.cursor|\.aider[^/]*|\.continue|\.windsurf|__pycache__|\.venv|venv|node_modules|\.pytest_cache|\.mypy_cache|\.ruff_cache)/', 2) AS folder
    FROM files f
)
SELECT trace_id, event_id, seq,
       lw_first_line(command, 100) || ' committed ' || string_agg(DISTINCT path, ', ' ORDER BY path)[:200] AS evidence,
       CASE WHEN bool_and(kind = 'caches') THEN 'medium' END AS severity,
       'A commit took in files that do not belong in the repository (' || string_agg(DISTINCT kind, ' and ' ORDER BY kind) || ').' AS problem,
       -- the rule names what to keep out, and the blanket staging when that is how they got in
       'Stage the files you changed by name'
           || CASE WHEN regexp_matches(command, 'git\s+add\s+(-A|--all|\.)(\s|$|&|;)') THEN ', not with `git add -A` or `git add .`,' ELSE '' END
           || ' and keep ' || string_agg(DISTINCT coalesce(folder || '/', kind), ', ' ORDER BY coalesce(folder || '/', kind))
           || ' out of commits with .gitignore.' AS lesson,
       'committed ' || string_agg(DISTINCT coalesce(folder || '/', kind), ', ' ORDER BY coalesce(folder || '/', kind)) AS signature,
       'git commit' AS tool,
       'A commit took in ' || string_agg(DISTINCT coalesce(folder || '/', kind), ', ' ORDER BY coalesce(folder || '/', kind)) AS title
FROM unwanted
WHERE kind IS NOT NULL
GROUP BY trace_id, event_id, seq, command
