"""Rules: is each exported rule (an accepted lesson) still true and still needed?

A rule file rots: a rule keeps being broken (agents do not load it, or it does not help), a rule that had
worked starts failing again, two rules say the same thing, or a rule goes quiet for so long that nobody
knows whether it still matters. `lessonweaver rules` (and `export --check`) says which, per rule, from the
nights each lesson was seen (sightings) and the night it was accepted; sql/rules/health.sql has the rules.
"""

from dataclasses import dataclass
from typing import Any

import duckdb

from lessonweaver import store
from lessonweaver.queries import execute
from lessonweaver.words import plural

GRACE_NIGHTS = 2  # nights after its acceptance a rule may still be broken before it needs a person


@dataclass(frozen=True)
class Rule:
    lesson_id: str
    title: str
    accepted_night: Any
    health: str  # 'quiet', 'still seen' or 'regressed'
    nights: int  # quiet: nights since it was last seen; otherwise nights seen since its acceptance
    duplicates: list[str]
    needs_person: bool

    def describe(self) -> str:
        """What is true of the rule, in words."""
        if self.health == "quiet" and self.nights == 0:
            said = f"not seen since it was accepted on {self.accepted_night}"
        elif self.health == "quiet":
            said = f"quiet for {plural(self.nights, 'night')} (working, or stale)"
        elif self.health == "still seen":
            said = f"still seen: {plural(self.nights, 'night')} since it was accepted on {self.accepted_night}"
        else:
            said = f"regressed: seen again after it was exported, on {plural(self.nights, 'night')}"
        if self.duplicates:
            said += "; duplicated by " + ", ".join(self.duplicates)
        return said


def health(con: duckdb.DuckDBPyConnection, grace: int = GRACE_NIGHTS) -> list[Rule]:
    """Every accepted lesson's health as of the database's latest night, those that need a person first."""
    night = con.execute("SELECT coalesce(max(night), current_date) FROM sightings").fetchone()[0]
    found = execute(con, "rules/health.sql", night=night, resolve_after=store.resolve_after(con), grace=grace).fetchall()
    return [Rule(*row) for row in found]


def report(rules: list[Rule]) -> list[str]:
    """The lines `lessonweaver rules` prints: one per rule, then the counts."""
    lines = [f"{r.lesson_id}  {'NEEDS A PERSON' if r.needs_person else 'ok':<14}  {r.describe()}  · {r.title}"
             for r in rules]
    counts = {h: sum(r.health == h for r in rules) for h in ("quiet", "still seen", "regressed")}
    duplicated = sum(bool(r.duplicates) for r in rules)
    needing = sum(r.needs_person for r in rules)
    lines.append(f"{plural(len(rules), 'exported rule')}: {counts['quiet']} quiet, {counts['still seen']} still seen, "
                 f"{counts['regressed']} regressed, {duplicated} duplicated; "
                 + (f"{needing} {'needs' if needing == 1 else 'need'} a person" if needing else "none needs a person"))
    return lines
