"""A reply never introduces the bot as the person it talks to.

The persona ("You are Strata, a warm, attentive companion…") and the person's own line ("hi,
I'm Dana…") meet in one prompt, and the embedded 0.5B answers "who are you?" with "I'm Dana,
a warm attentive companion who helps people in care" (`strata chat`, the quick start by
hand). Read back, the bot claims the person's name. Where a reply sentence has the bot name
itself ("I'm", "I am", "my name is", "call me") with the person's name, the bot's own name is
put in its place. Whose name it is ("I am Dana's companion") is left alone.

Pure: the standard library.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Names that are no one's own: a person without a display name is called these.
_NO_NAME = frozenset(("", "user", "person", "someone", "unknown"))


@dataclass(frozen=True, slots=True)
class Identity:
    """The person's name, as the bot must not call itself, and the bot's own."""

    pattern: re.Pattern[str]
    bot: str

    @classmethod
    def of(cls, person: str, bot: str) -> Identity | None:
        """An `Identity` for a person called `person` talking to a bot called `bot`; None
        when there is no name to confuse (none, or the bot's own)."""
        person, bot = " ".join(person.split()), " ".join(bot.split())
        if person.lower() in _NO_NAME or person.lower() == bot.lower() or not bot:
            return None
        # The full name first, then its first word ("Dana Reyes", "Dana").
        names = "|".join(re.escape(n) for n in dict.fromkeys((person, person.split()[0])))
        return cls(re.compile(rf"\b((?:i['’]m|i am|my name is|call me)\s+)(?:{names})"
                              rf"(?!['’]s\b)(?![\w'’])", re.I), bot)

    def fix(self, sentence: str) -> str:
        """`sentence` with the bot naming itself as the person told as the bot."""
        return self.pattern.sub(lambda m: m.group(1) + self.bot, sentence)
