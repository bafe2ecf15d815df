"""Pattern match: behavioural patterns in a person's own recent messages. Each pattern cites
the numbers of the messages it rests on; code checks it against those messages
(`strata.memory.checks.grounding.check_claim`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

INSTRUCTIONS = (
    "You look for behavioural patterns of one person in their own messages. Each message "
    "starts with its number in brackets and its local day and time. A pattern is something "
    "they do repeatedly or habitually: a routine, a regular time they write, a recurring "
    "need. Only patterns that at least two of the messages state, in the person's own words; "
    "no one-off events, no guesses about feelings, nothing from the tool list. For each "
    "pattern give the numbers of the messages it rests on. Where a pattern relates to one of "
    "the listed tools, name that tool; otherwise null. Answer only with JSON. If message 12 "
    "says 'walking the dog before work again' and message 31 'dog walk before work, as "
    'always\', the answer is {"patterns": [{"pattern": "walks the dog before work", '
    '"rows": [12, 31], "tool": null}]}; when nothing repeats, {"patterns": []}.'
)


class Pattern(BaseModel):
    pattern: str = Field(min_length=3, max_length=300)
    rows: list[int] = Field(default_factory=list, max_length=20)
    tool: str | None = None


class Patterns(BaseModel):
    patterns: list[Pattern] = Field(default_factory=list, max_length=10)


def prompt(lines: list[str], tools: list[tuple[str, str]]) -> str:
    tool_list = "\n".join(f"- {name}: {desc}" for name, desc in tools) or "- (none)"
    return ("Tools:\n" + tool_list + "\n\nThe person's messages (quoted data):\n"
            + "\n".join(lines))
