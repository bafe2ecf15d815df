"""Who does what across processes on one database: named leases taken for this process
(its identity is `strata.core.identity`'s), and the channel claims that keep one turn at a
time per channel.

One lease system: everything here is a row of `strata.memory.coordination.leases`
(`turn:<channel id>` for a channel, `poll:<platform>:<account>` for the process fetching a
platform account's messages). Lease times are on `wall`, the real clock: a lease is about
whether a process still lives, not about the bot's (perhaps simulated) time. A lease held by a
process of this host that no longer runs is taken over at once (a restart after a crash does
not wait it out; `holder_gone`, the same test the job claims use); one held on another host
is waited out (`ttl`). Imports `strata.core` and
`strata.memory.coordination.leases`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata.core.clock import SystemClock
from strata.core.identity import holder_gone, this_process
from strata.core.ports import Clock
from strata.memory.coordination.leases import Leases

log = logging.getLogger(__name__)


async def take_lease(leases: Leases, name: str, holder: str, now: datetime,
                     ttl: timedelta) -> bool:
    """Take or renew lease `name`; also from a holder that died on this host."""
    if await leases.take(name, holder, now, ttl):
        return True
    old = await leases.holder(name, now)
    return old is not None and holder_gone(old) and await leases.take_over(
        name, old, holder, now, ttl)


@dataclass
class ChannelClaims:
    """One turn at a time per channel, across every process on the database.

    In a process an `asyncio.Lock` per channel queues the claims in arrival order; across
    processes the claimant also holds the database lease `turn:<channel id>`, renewed every
    third of `ttl` while the turn runs, so a process that dies mid-turn holds the channel for
    at most `ttl` more (none, when it ran on this host). Without `leases` (a test's bare
    processor) only the in-process lock is taken.
    """

    leases: Leases | None = None
    holder: str = field(default_factory=lambda: this_process().id)
    ttl: timedelta = timedelta(seconds=30)
    wall: Clock = field(default_factory=SystemClock)
    max_wait: float = 0.5  # seconds between attempts while another process holds the lease
    _locks: dict[int, asyncio.Lock] = field(default_factory=dict, init=False)

    @contextlib.asynccontextmanager
    async def claim(self, channel_id: int, *, wait: bool = True) -> AsyncIterator[bool]:
        """Hold the channel for the body; yields False (and holds nothing) when `wait` is off
        and another task or process has it."""
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        if not wait and lock.locked():
            yield False
            return
        async with lock:
            if not await self._take(channel_id, wait):
                yield False
                return
            renew = asyncio.create_task(self._renew(channel_id))
            try:
                yield True
            finally:
                renew.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await renew
                if self.leases is not None:
                    # Shielded: a turn cancelled at shutdown still frees its channel at once.
                    await asyncio.shield(self.leases.release(self.name(channel_id),
                                                             self.holder))

    @staticmethod
    def name(channel_id: int) -> str:
        return f"turn:{channel_id}"

    async def lead(self, name: str, ttl: timedelta) -> bool:
        """Take or renew the lease `name` (not a channel's) for this process."""
        if self.leases is None:
            return True
        return await take_lease(self.leases, name, self.holder, self.wall.now(), ttl)

    async def step_down(self, name: str) -> None:
        """Give the lease `name` back (only if this process still holds it)."""
        if self.leases is not None:
            await self.leases.release(name, self.holder)

    async def _take(self, channel_id: int, wait: bool) -> bool:
        if self.leases is None:
            return True
        pause = 0.02
        while not await take_lease(self.leases, self.name(channel_id), self.holder,
                                   self.wall.now(), self.ttl):
            if not wait:
                return False
            await asyncio.sleep(pause)  # another process answers this channel: try again
            pause = min(pause * 2, self.max_wait)
        return True

    async def _renew(self, channel_id: int) -> None:
        if self.leases is None:
            return
        while True:
            await asyncio.sleep(self.ttl.total_seconds() / 3)
            if not await self.leases.take(self.name(channel_id), self.holder, self.wall.now(),
                                          self.ttl):
                log.warning("channel %d: the turn lease was taken over (this process stalled "
                            "longer than %s)", channel_id, self.ttl)
