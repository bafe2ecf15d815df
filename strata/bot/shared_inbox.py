"""The inbox for several processes sharing one platform account and one database.

Telegram lets one consumer at a time poll a bot's updates (a second getUpdates is answered
409 Conflict). So with several `strata run` processes on one bot token:

- one process polls, holding the database lease `poll:<platform>:<account>` (`hold`), renewed
  before every getUpdates; when it dies, another takes over once the lease has expired;
- the poller takes each message in (`take_in`: the user row stored, the turn queued in the
  database's turn queue) before its offset confirms it to the platform; a message delivered
  again after a takeover is recognised by its platform message id and not queued twice;
- every process answers queued turns: it claims a channel (`claim`: the channel's turn lease,
  not waiting), answers that channel's queued turns in arrival order and removes each entry
  once its reply is shown (`done`). A turn whose reply was stored but not shown (its process
  died in between) is shown from the transcript without asking the model again.

Everything else (`handle`, `accept`, `answer`, `unanswered`, `allowed`) is the turn
processor's. May import `memory`; never `adapters` or `cognition`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.bot.turns import TurnProcessor, take_lease
from strata.core.ports import Clock, PartialCallback
from strata.core.types import Accepted, InboundMessage, QueuedAnswer, TurnResult
from strata.memory.coordination.leases import Leases
from strata.memory.coordination.turn_queue import TurnQueue


@dataclass
class SharedInbox:
    processor: TurnProcessor
    queue: TurnQueue
    leases: Leases
    clock: Clock

    # -- the turn processor's part ----------------------------------------------------------

    def allowed(self, msg: InboundMessage) -> bool:
        return self.processor.allowed(msg)

    async def handle(self, msg: InboundMessage,
                     on_partial: PartialCallback | None = None) -> TurnResult | None:
        return await self.processor.handle(msg, on_partial)

    async def accept(self, msg: InboundMessage) -> Accepted | None:
        return await self.processor.accept(msg)

    async def answer(self, accepted: Accepted,
                     on_partial: PartialCallback | None = None) -> TurnResult | None:
        return await self.processor.answer(accepted, on_partial)

    async def unanswered(self, platform: str, since: datetime) -> list[Accepted]:
        return await self.processor.unanswered(platform, since)

    # -- several processes ------------------------------------------------------------------

    @property
    def holder(self) -> str:
        return self.processor.turns.holder

    def _wall(self) -> datetime:
        return self.processor.turns.wall.now()

    async def hold(self, name: str, ttl: timedelta) -> bool:
        """Take or renew the lease `name` (a platform account's polling) for this process."""
        return await take_lease(self.leases, name, self.holder, self._wall(), ttl)

    async def release(self, name: str) -> None:
        await self.leases.release(name, self.holder)

    async def take_in(self, msg: InboundMessage, reply_to: str | None = None) -> bool:
        """Store `msg` and queue its turn, durably (the platform may be told it arrived once
        this returns). False when there is nothing to answer: not allowed, not addressed to
        the bot (stored only), or already queued or answered (a redelivery)."""
        accepted = await self.processor.accept(msg)
        if accepted is None:
            return False
        # Whichever process claims the channel answers it, not necessarily this one.
        self.processor.let_go(accepted.channel.id, [accepted.turn_id])
        if accepted.stored and not msg.addressed_to_bot:
            return False
        if accepted.stored and await self.processor.answered(accepted.turn_id):
            return False
        return await self.queue.put(
            platform=msg.platform, channel_id=accepted.channel.id,
            person_id=accepted.person.id, turn_id=accepted.turn_id, stored=accepted.stored,
            msg=msg, reply_to=reply_to, now=self.clock.now())

    async def queued_channels(self, platform: str, limit: int = 100) -> list[int]:
        return await self.queue.channels(platform, limit)

    @contextlib.asynccontextmanager
    async def claim(self, channel_id: int) -> AsyncIterator[list[QueuedAnswer] | None]:
        """Hold the channel's turn for the body and yield its queued turns, oldest first;
        None (nothing held) when another task or process holds the channel."""
        async with self.processor.turns.hold(channel_id, wait=False) as held:
            if not held:
                yield None
                return
            entries = await self.queue.for_channel(channel_id)
            out = []
            for e in entries:
                channel = await self.processor.channels.get(e.channel_id)
                person = await self.processor.persons.get(e.person_id)
                if channel is None or person is None:  # forgotten meanwhile: nothing to do
                    await self.queue.done(e.id)
                    continue
                out.append(QueuedAnswer(Accepted(e.msg, person, channel, e.turn_id,
                                                 stored=e.stored), e.reply_to, e.id))
            turn_ids = [a.accepted.turn_id for a in out]
            self.processor.hold_back(channel_id, turn_ids)
            try:
                yield out
            finally:
                self.processor.let_go(channel_id, turn_ids)

    async def done(self, answer: QueuedAnswer) -> None:
        """The turn is answered and its reply shown: it leaves the queue."""
        await self.queue.done(answer.queue_id)
