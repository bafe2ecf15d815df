"""The `/link` chat command: join a person's identities across platforms.

`/link` (in a private chat) answers with a one-time code that expires after `CODE_TTL`;
sending `/link CODE` from another identity (another platform, usually) merges that identity's
person into the code's person (`strata.memory.store.linking.merge_persons`), so identities,
channels and all memory follow one person. Whoever holds a code can attach their account to its
owner's memory, so codes are only given and taken in private chats. Imports `bot` and `memory`.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.core.ports import Clock
from strata.core.types import OwnerKind
from strata.memory.store.linking import LinkCodes, format_code
from strata.memory.store.persons import PersonRepo

log = logging.getLogger(__name__)

CODE_TTL = timedelta(minutes=10)


class LinkCommand:
    def __init__(self, codes: LinkCodes, persons: PersonRepo, clock: Clock) -> None:
        self.codes = codes
        self.persons = persons
        self.clock = clock

    def register(self, router: CommandRouter) -> None:
        router.add(
            "link",
            "link this account with your account on another platform (one memory)",
            self.handle,
        )

    async def handle(self, ctx: CommandContext) -> CommandReply:
        if not ctx.args:
            return await self._issue(ctx)
        return await self._redeem(ctx)

    async def _issue(self, ctx: CommandContext) -> CommandReply:
        code = await self.codes.issue(
            ctx.person.id, ctx.msg.identity, self.clock.now(), CODE_TTL
        )
        minutes = int(CODE_TTL.total_seconds() // 60)
        return CommandReply(
            f"Your link code is {format_code(code)}. Within {minutes} minutes, send "
            f"`/link {format_code(code)}` to me from your other account (another platform "
            "or user); both accounts will then share one memory. Keep the code to yourself: "
            "whoever sends it joins your memory."
        )

    async def _redeem(self, ctx: CommandContext) -> CommandReply:
        found = await self.codes.redeem(ctx.args, self.clock.now())
        target = await self.persons.get(found.person_id) if found else None
        if found is None or target is None or target.kind is not OwnerKind.PERSON:
            return CommandReply(
                "That link code is unknown or has expired. Send /link on your other account "
                "to get a new one."
            )
        if target.id == ctx.person.id:
            return CommandReply("These accounts are already linked: they share one memory.")
        await self.codes.merge(keep=target.id, gone=ctx.person.id)
        identities = await self.persons.identities(target.id)
        log.info("linked person %d into person %d", ctx.person.id, target.id)
        return CommandReply(
            "Linked. These accounts now share one memory: " + ", ".join(identities) + "."
        )
