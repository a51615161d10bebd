"""Named points where a test may kill the run, to show that a crash anywhere leaves a consistent state.

Set LESSONWEAVER_CRASH_AT to a point's name and the process ends there at once, as a kill would end
it: no cleanup, no rollback, no flushing. Unset (always, outside tests), a point does nothing.
"""

import os

POINTS = ("staged", "load", "loaded", "weave", "render")


def reached(name: str) -> None:
    if os.environ.get("LESSONWEAVER_CRASH_AT") == name:
        os._exit(86)
