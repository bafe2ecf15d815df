"""`/remember <words>`: the person keeps a fact in their own words, stored as typed.

A model's `remember` call is checked against what the person said
(`strata.bot.memory_tools`); this command needs no check, because its words are the person's
own. It is the honest way round a refusal: the tool's error names it. Private chats only (a
fact kept here is about the person, not a room). Imports `bot` modules and `memory`.
"""

from __future__ import annotations

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.core.errors import MutedSourceError
from strata.core.ports import Clock
from strata.core.text import clean_text
from strata.memory.facts.fact_store import FactStore
from strata.memory.rules.fact_types import NewFact

USAGE = "Say what to keep after the command, in your words: /remember I'm allergic to penicillin"
MAX_CHARS = 1000


class RememberCommand:
    def __init__(self, facts: FactStore, clock: Clock) -> None:
        self.facts = facts
        self.clock = clock

    def register(self, commands: CommandRouter) -> None:
        commands.add("remember", "/remember <words>: keep a fact about you, as you type it",
                     self.remember)

    async def remember(self, ctx: CommandContext) -> CommandReply:
        text = clean_text(ctx.args).strip()
        if not text:
            return CommandReply(USAGE)
        if len(text) > MAX_CHARS:
            return CommandReply(f"That is {len(text)} characters; I keep at most {MAX_CHARS}.")
        if ctx.person.paused:
            return CommandReply("Memory is paused (/pause): I kept nothing. /resume first.")
        new = NewFact(owner_id=ctx.channel.owner_id, kind="note", text=text,
                      source=ctx.channel.source, subject="self", confidence=1.0,
                      channel_id=ctx.channel.id)
        try:
            result = await self.facts.add(new, self.clock.now())
        except MutedSourceError as exc:
            return CommandReply(f"I kept nothing: {exc}")
        if result.fact_id is None:
            return CommandReply(f"I already keep that (fact #{result.duplicate_of}).")
        replaced = (f"; it replaces #{', #'.join(map(str, result.superseded))}"
                    if result.superseded else "")
        return CommandReply(f"Kept as fact #{result.fact_id}{replaced}: {text}")
