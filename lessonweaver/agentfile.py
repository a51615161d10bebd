"""An agent instruction file (AGENTS.md, CLAUDE.md, .github/copilot-instructions.md, .cursor/rules/*.mdc)
holding a block that lessonweaver manages: `export --into` rewrites the lines between its two markers
and leaves every other byte as it was, so the rest of the file stays the team's own.

The markers are HTML comments, which rendered Markdown does not show, each alone on its line. A file
whose markers do not make exactly one block is refused, never guessed at.
"""

import difflib
import os
import re
from pathlib import Path

from lessonweaver.render import write_atomic

START = "<!-- lessonweaver:start (written by lessonweaver export; change lessons with lessonweaver review) -->"
END = "<!-- lessonweaver:end -->"
# A marker is a line of its own (a lesson is a bullet, so lesson text never starts a line with one).
_MARKER = re.compile(r"(?m)^[ \t]*<!-- lessonweaver:(start|end)\b[^\r\n]*")
# A new Cursor rule file: Cursor reads when to apply a rule from this front matter; these apply always.
MDC_FRONT_MATTER = ("---\ndescription: Lessons learned from this team's agent traces, accepted by a reviewer"
                    " (lessonweaver)\nalwaysApply: true\n---\n")


class BlockError(ValueError):
    """The file's lessonweaver markers do not make exactly one block (a start, then an end)."""


def read(path: str) -> str | None:
    """The file's text as it is (line endings kept), or None when there is no file."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text (byte {exc.start}); lessonweaver writes only into UTF-8 files") from None


def _block_span(text: str, name: str) -> tuple[int, int] | None:
    """Where the block is (from its start marker to the end of its end marker's line, line ending
    excluded), None when there is none; BlockError when the markers do not make one block."""
    found = [(m[1], m.start(), m.end()) for m in _MARKER.finditer(text)]
    kinds = [kind for kind, _, _ in found]
    if not found:
        return None
    if kinds == ["start", "end"]:
        return found[0][1], found[1][2]
    lines = {k: [str(text.count("\n", 0, s) + 1) for kind, s, _ in found if kind == k] for k in ("start", "end")}
    for kind in ("start", "end"):
        if len(lines[kind]) > 1:
            raise BlockError(f"{name}: {len(lines[kind])} lessonweaver:{kind} markers (lines "
                             f"{', '.join(lines[kind])}); keep one block and run again")
    if kinds[0] == "end":
        raise BlockError(f"{name}: the lessonweaver:end marker on line {lines['end'][0]} has no "
                         "lessonweaver:start before it; mend the file and run again")
    raise BlockError(f"{name}: the lessonweaver:start marker on line {lines['start'][0]} has no "
                     "lessonweaver:end after it; mend the file and run again")


def _newline(text: str) -> str:
    """The file's line ending, as its first line ends ("\\n" for a file of one line or none)."""
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def splice(current: str | None, body: str, name: str) -> str:
    """The file's new text: `body` between the markers, in place of the block there is, or appended
    after a blank line; a new (or empty) .mdc file starts with front matter. The block takes the file's
    line endings; every byte outside it is kept."""
    if _MARKER.search(body):
        raise ValueError("the export template's output holds a lessonweaver marker line; it cannot go into a block")
    text = current or (MDC_FRONT_MATTER if name.lower().endswith(".mdc") else "")
    nl = _newline(text)
    block = nl.join([START, *body.splitlines(), END])
    span = _block_span(text, name)
    if span:
        return text[:span[0]] + block + text[span[1]:]
    if not text:
        return block + nl
    gap = "" if text.endswith(nl * 2) else nl if text.endswith(nl) else nl * 2
    return text + gap + block + nl


def diff(before: str | None, after: str, name: str) -> str:
    """A unified diff from the file as it is to the file as export would write it, as `diff -u` shows
    a last line without a newline."""
    def lines(text: str) -> list[str]:
        return [line for line in re.split(r"(?<=\n)", text) if line]

    out = difflib.unified_diff(lines(before or ""), lines(after), "/dev/null" if before is None else name, name)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)


def write(path: str, text: str) -> None:
    """Write the file atomically, through a symlink to its target (AGENTS.md is often a link to CLAUDE.md
    or back), creating its folders; line endings are written as they are in `text`."""
    target = Path(os.path.realpath(path))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text, newline="")
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror}") from None
