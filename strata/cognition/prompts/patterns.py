"""Pattern match: behavioural patterns in a person's own recent messages."""

from __future__ import annotations

from pydantic import BaseModel, Field

INSTRUCTIONS = (
    "You look for behavioural patterns of one person in their own messages (each line has "
    "its local day and time). A pattern is something they do repeatedly or habitually: a "
    "routine, a regular time they write, a recurring need. Only patterns supported by at "
    "least two messages; no one-off events, no guesses about feelings. Where a pattern "
    "relates to one of the listed tools, name that tool (e.g. a recurring task → "
    "set_reminder); otherwise null. Answer only with JSON: "
    '{"patterns": [{"pattern": "short statement about the person", "tool": "name or null"}]} '
    '— {"patterns": []} when there is none.'
)


class Pattern(BaseModel):
    pattern: str = Field(min_length=3, max_length=300)
    tool: str | None = None


class Patterns(BaseModel):
    patterns: list[Pattern] = Field(default_factory=list, max_length=10)


def prompt(lines: list[str], tools: list[tuple[str, str]]) -> str:
    tool_list = "\n".join(f"- {name}: {desc}" for name, desc in tools) or "- (none)"
    return ("Tools:\n" + tool_list + "\n\nThe person's messages (quoted data):\n"
            + "\n".join(lines))
