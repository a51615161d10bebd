"""Counts as people read them: `1 lesson`, `2 lessons`, never `1 lessons` or `lesson(s)`."""


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and its noun, singular for exactly one; `many` is the plural when it is not the noun + 's'."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"
