"""How a count reads in English: one way for every message that says how many. A leaf module."""

from __future__ import annotations


def counted(n: int, one: str, many: str | None = None) -> str:
    """`n` with its noun in the right number: `counted(1, "row")` is "1 row",
    `counted(2, "memory", "memories")` is "2 memories" (without `many`, `one` + "s")."""
    return f"{n:,} {one if n == 1 else (many if many is not None else one + 's')}"
