"""Text shown to people (reports, `lessonweaver show`, review listings) with what trace content may carry
and a reader need not see masked: tracebacks cut, URLs, file paths, host names and token-like strings
replaced by `<URL>`, `<PATH>`, `<HOST>`, `<TOKEN>`, a redacted secret's marker without its hash. Apart from render so that modules render uses
(timeline) scrub the same way without importing it."""

import re
from typing import Any

# What an exception text or traceback may carry that a report must not repeat verbatim.
_TRACEBACK = re.compile(r"(?s)Traceback \(most recent call last\):.*")
_HOST_HINT = re.compile(r"(?i)\.(?:com|net|org|io|dev|cloud|internal|local|lan|corp|svc|cluster)\b")
# (a cheap test that the pattern may match at all, the pattern, its mask): most text has no URL, path or
# host, and the tests cost a tenth of the patterns (46 MB of lesson text: 0.3 s against 9 s).
_SCRUB = (
    (lambda t: "://" in t, re.compile(r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s'\"<>]+"), "<URL>"),
    (lambda t: "/" in t or "\\" in t,
     re.compile(r"(?<![\w.])(?:[A-Za-z]:\\|~?/)(?:[\w.\-]+[/\\])+[\w.\-]*"), "<PATH>"),
    (_HOST_HINT.search, re.compile(
        r"(?i)\b(?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|cloud|internal|local|lan|corp|svc|cluster)\b"),
     "<HOST>"),
    (lambda t: True, re.compile(r"\b[0-9a-fA-F]{32,}\b|\b[A-Za-z0-9+/_\-]{40,}={0,2}"), "<TOKEN>"),
    # a redacted secret's marker keeps its kind and loses its hash: the hash tells two values apart within
    # the database, and text that leaves it (reports, exports) need not, nor let anyone test a guess
    (lambda t: "[SECRET:" in t, re.compile(r"\[SECRET:([a-z0-9_]+)#[0-9a-f]{8}\]"), r"[SECRET:\1]"),
)


def scrub(value: Any) -> str:
    """Report text with tracebacks cut and URLs, paths, host names and token-like strings masked."""
    text = str(value if value is not None else "")
    if "Traceback (most recent call last):" in text:
        text = _TRACEBACK.sub("(traceback withheld)", text)
    for may_match, pattern, mask in _SCRUB:
        if may_match(text):
            text = pattern.sub(mask, text)
    return text


def flatten(value: Any) -> str:
    """Text on one line, with no control characters: an escape sequence in a trace must not drive a
    terminal or reach an agent's instructions."""
    flat = " ".join(str(value if value is not None else "").split())
    return flat if flat.isprintable() else "".join(c if c.isprintable() else "?" for c in flat)


def one_line(value: Any, width: int | None = None) -> str:
    """Scrubbed text on one line (flatten), cut to `width` with an ellipsis. Scrubbed whole first: a token
    cut in two would no longer be seen as one."""
    flat = flatten(scrub(value)) if value else ""
    return flat if width is None or len(flat) <= width else flat[:width - 1].rstrip() + "…"
