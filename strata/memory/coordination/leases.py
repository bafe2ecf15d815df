"""Named, fenced leases: work that one process at a time may do, across processes on one
database. The one lease system: a channel's turns (`turn:<channel id>`), a platform account's
fetching (`poll:<platform>:<account>`) and a memory owner's jobs (`job:<owner id>`).

A lease is a row (`name`, `holder`, `expires_at`, `fence`). Taking one is one upsert that
succeeds when the row is free, already the caller's, or expired (its holder died or stalled);
`rowcount` says who won. It is one self-deciding statement (`Database.execute_atomic`): SQLite
runs it under its one writer, PostgreSQL on row locks beside other writers, and two processes
taking one lease never both win. Times come from the caller's injected clock (processes on
several hosts need clocks that agree to well within a lease: NTP).

The fence is a token kept while one holder holds the lease without a break and new whenever
it changes hands. A holder writes under `fenced`: each of its write transactions first checks
that the row still names it with its token, and is refused (`WriteRefusedError`, nothing
changed) once another process took the lease over, so a holder that stalled past its lease
writes nothing after the takeover. A holder that is a process of this host which no longer
runs (`strata.core.identity.holder_gone`) is taken over at once (`claim`), not waited out.
Imports `strata.core` and `strata.memory.engines` (`db`, `guard`).
"""

from __future__ import annotations

import secrets
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.core.clock import from_iso, to_iso
from strata.core.identity import holder_gone
from strata.memory.engines.db import Database
from strata.memory.engines.guard import WriteGuard


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease as its holder took it: the fence is what its writes are checked against."""

    name: str
    holder: str
    fence: str


def new_fence() -> str:
    return secrets.token_hex(8)


class Leases:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def take(self, name: str, holder: str, now: datetime,
                   ttl: timedelta) -> Lease | None:
        """Take or renew lease `name` for `holder` until `now + ttl`: the lease (its fence
        kept while `holder` held it without a break), or None while another holder's lease
        has not expired."""
        return await self.take_until(name, holder, now, now + ttl)

    async def take_until(self, name: str, holder: str, now: datetime,
                         until: datetime) -> Lease | None:
        """`take`, the lease running until `until`."""
        won = await self.db.execute_atomic(
            "INSERT INTO leases (name, holder, expires_at, fence) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            " expires_at = excluded.expires_at, fence = CASE"
            " WHEN leases.holder = excluded.holder THEN leases.fence ELSE excluded.fence END"
            " WHERE leases.holder = excluded.holder OR leases.expires_at < ?",
            (name, holder, to_iso(until), new_fence(), to_iso(now)))
        return await self._held(name, holder) if won == 1 else None

    async def claim(self, name: str, holder: str, now: datetime,
                    ttl: timedelta) -> Lease | None:
        """`take`, and take over at once from a holder that is a dead process of this host
        (a restart after a crash does not wait its lease out)."""
        lease = await self.take(name, holder, now, ttl)
        if lease is not None:
            return lease
        old = await self.holder(name, now)
        if old is None or not holder_gone(old):
            return None
        return await self.take_over(name, old, holder, now, ttl)

    async def take_over(self, name: str, old: str, holder: str, now: datetime,
                        ttl: timedelta) -> Lease | None:
        """Take lease `name` from `old`, known to be gone, at once, with a new fence: the
        lease when `old` still had it."""
        moved = await self.db.execute_atomic(
            "UPDATE leases SET holder = ?, expires_at = ?, fence = ? WHERE name = ?"
            " AND holder = ?", (holder, to_iso(now + ttl), new_fence(), name, old))
        return await self._held(name, holder) if moved == 1 else None

    async def renew(self, lease: Lease, now: datetime, ttl: timedelta) -> bool:
        """Extend `lease` to `now + ttl`; False when it changed hands (or was given back)
        since it was taken: the holder has lost it, whatever it tries next."""
        return await self.db.execute_atomic(
            "UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND fence = ?",
            (to_iso(now + ttl), lease.name, lease.holder, lease.fence)) == 1

    async def release(self, name: str, holder: str) -> None:
        """Give lease `name` back (only if `holder` still has it)."""
        await self.db.execute_atomic(
            "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))

    async def holder(self, name: str, now: datetime) -> str | None:
        """Who holds lease `name` now (None: nobody, or it expired)."""
        row = await self.db.fetchone(
            "SELECT holder, expires_at FROM leases WHERE name = ?", (name,))
        if row is None or from_iso(row["expires_at"]) < now:
            return None
        return str(row["holder"])

    def fenced(self, lease: Lease) -> AbstractContextManager[None]:
        """While the block runs, every write transaction the current task opens first checks
        that `lease` is still its holder's under its fence, and is refused otherwise
        (`WriteRefusedError`, nothing changed). The check and the writes commit together
        (`strata.memory.engines.guard`)."""
        return self.db.guarded(WriteGuard(
            "SELECT 1 FROM leases WHERE name = ? AND holder = ? AND fence = ?",
            (lease.name, lease.holder, lease.fence),
            f"{lease.holder} no longer holds {lease.name}: another process took it over"))

    async def _held(self, name: str, holder: str) -> Lease | None:
        # The token in force (kept, or the new one); None if another holder took the lease
        # in between, as if this take had lost.
        fence = await self.db.fetchval(
            "SELECT fence FROM leases WHERE name = ? AND holder = ?", (name, holder))
        return None if fence is None else Lease(name, holder, str(fence))
