"""The channel claims that keep one turn at a time per channel, and the named leases this
process takes (its identity is `strata.core.identity`'s), on the one fenced lease system
(`strata.memory.coordination.leases`): `turn:<channel id>` for a channel,
`poll:<platform>:<account>` for the process fetching a platform account's messages.

Lease times come from the injected clock. A lease held by a process of this host that no
longer runs is taken over at once (a restart after a crash does not wait it out); one held on
another host is waited out (`ttl`). A turn's writes are fenced by its channel's lease: once
another process took the channel over (this one stalled past `ttl`), every write of the turn
is refused, so the stale holder stores nothing more of it. Imports `strata.core` and
`strata.memory.coordination.leases`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta

from strata.core.clock import SystemClock
from strata.core.identity import this_process
from strata.core.ports import Clock
from strata.core.tasks import cancel_and_wait
from strata.memory.coordination.leases import Lease, Leases

log = logging.getLogger(__name__)


@dataclass
class ChannelClaims:
    """One turn at a time per channel, across every process on the database.

    In a process an `asyncio.Lock` per channel queues the claims in arrival order; across
    processes the claimant also holds the database lease `turn:<channel id>`, renewed every
    third of `ttl` while the turn runs, so a process that dies mid-turn holds the channel for
    at most `ttl` more (none, when it ran on this host); the body's writes are fenced by it.
    Without `leases` (a test's bare processor) only the in-process lock is taken.
    """

    leases: Leases | None = None
    holder: str = field(default_factory=lambda: this_process().id)
    ttl: timedelta = timedelta(seconds=30)
    clock: Clock = field(default_factory=SystemClock)
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
            if self.leases is None:
                yield True
                return
            lease = await self._take(self.leases, channel_id, wait)
            if lease is None:
                yield False
                return
            renew = asyncio.create_task(self._renew(self.leases, lease))
            try:
                with self.leases.fenced(lease):
                    yield True
            finally:
                with contextlib.suppress(asyncio.CancelledError):
                    await cancel_and_wait(renew)
                # Shielded: a turn cancelled at shutdown still frees its channel at once.
                await asyncio.shield(self.leases.release(lease.name, self.holder))

    @staticmethod
    def name(channel_id: int) -> str:
        return f"turn:{channel_id}"

    async def lead(self, name: str, ttl: timedelta) -> bool:
        """Take or renew the lease `name` (not a channel's) for this process."""
        if self.leases is None:
            return True
        return await self.leases.claim(name, self.holder, self.clock.now(), ttl) is not None

    async def step_down(self, name: str) -> None:
        """Give the lease `name` back (only if this process still holds it)."""
        if self.leases is not None:
            await self.leases.release(name, self.holder)

    async def _take(self, leases: Leases, channel_id: int, wait: bool) -> Lease | None:
        pause = 0.02
        name = self.name(channel_id)
        while (lease := await leases.claim(name, self.holder, self.clock.now(),
                                           self.ttl)) is None:
            if not wait:
                return None
            await asyncio.sleep(pause)  # another process answers this channel: try again
            pause = min(pause * 2, self.max_wait)
        return lease

    async def _renew(self, leases: Leases, lease: Lease) -> None:
        while True:
            await asyncio.sleep(self.ttl.total_seconds() / 3)
            if not await leases.renew(lease, self.clock.now(), self.ttl):
                log.warning("%s: the turn lease was taken over (this process stalled longer "
                            "than %s); the turn's writes from now on are refused",
                            lease.name, self.ttl)
                return
