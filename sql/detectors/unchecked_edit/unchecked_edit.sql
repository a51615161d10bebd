-- id: unchecked_edit
-- title: The agent changed code and ran nothing after its last edit
-- severity: medium
-- family: unchecked_work
-- description: The agent edited files (an editor call that writes, a patch, `sed -i`) and, after its last
--   edit, ran nothing to check it: no shell command other than a read (cat, grep, ls, git diff...) or
--   another change, up to the end of the run. Work handed back unchecked is the most common way a coding
--   run fails without anyone seeing it fail. An edit of prose (Markdown, reStructuredText, text) needs no
--   run. A run that ran its tests, a script or the program after the
--   last edit is no finding; so is one with no shell at all (nothing could be run).
-- lesson: Run what you changed (its tests, a script that exercises it, the program) after the last edit and read the result before you finish: {evidence}
WITH calls AS (
    SELECT trace_id, seq, event_id, tool_name, tool_key, command, result_event_id, result_seq, edited,
           -- an edit of code: prose and notes (Markdown, reStructuredText, plain text) need no run
           len(list_filter(edited, lambda f: NOT regexp_matches(lower(f), '\.(md|markdown|rst|txt|adoc)$'))) > 0 AS edits,
           lw_shell_tool(tool_name) AND NOT reads AND NOT changes AS runs
    FROM facts WHERE type = 'tool_call' AND actor = 'agent' AND coding_run  -- only a coding run edits
),
per_trace AS (
    SELECT trace_id, max(seq) FILTER (WHERE edits) AS last_edit, max(seq) FILTER (WHERE runs) AS last_run,
           bool_or(lw_shell_tool(tool_name)) AS has_shell,
           arg_max({'event_id': coalesce(result_event_id, event_id), 'seq': coalesce(result_seq, seq),
                    'files': edited, 'tool': tool_key}, seq) FILTER (WHERE edits) AS edit
    FROM calls GROUP BY trace_id
)
SELECT trace_id, edit.event_id AS event_id, edit.seq AS seq,
       'last edit: ' || edit.tool || ' of ' || lw_clip(array_to_string(edit.files[1:3], ', '), 160)
           || '; nothing was run after it' AS evidence,
       'The agent changed code and ran nothing to check it after its last edit.' AS problem,
       'unchecked: nothing run after the last edit' AS signature, edit.tool AS tool,
       'The agent finished without running what it last changed' AS title
FROM per_trace
WHERE last_edit IS NOT NULL AND has_shell AND coalesce(last_run, -1) < last_edit
