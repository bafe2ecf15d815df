"""Named leases: work that one process at a time may do, across processes on one database.

A lease is a row (`name`, `holder`, `expires_at`). Taking one is one upsert that succeeds when
the row is free, already the caller's, or expired (its holder died or stalled); `rowcount`
says who won. It is one self-deciding statement (`Database.execute_atomic`): SQLite runs it
under its one writer, PostgreSQL on row locks beside other writers, and two processes taking
one lease never both win. Times are the holders' wall clocks (processes on
several hosts need clocks that agree to well within a lease: NTP), never a simulated clock:
a lease measures whether a process still lives. Imports `strata.core.clock` and
`strata.memory.engines.db`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database


class Leases:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def take(self, name: str, holder: str, now: datetime, ttl: timedelta) -> bool:
        """Take or renew lease `name` for `holder` until `now + ttl`: True when it is now
        `holder`'s, False while another holder's lease has not expired."""
        return await self.db.execute_atomic(
            "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,"
            " expires_at = excluded.expires_at"
            " WHERE leases.holder = excluded.holder OR leases.expires_at < ?",
            (name, holder, to_iso(now + ttl), to_iso(now))) == 1

    async def take_over(self, name: str, old: str, holder: str, now: datetime,
                        ttl: timedelta) -> bool:
        """Take lease `name` from `old`, known to be gone (a dead process on this host), at
        once: True when `old` still had it and now `holder` does."""
        return await self.db.execute_atomic(
            "UPDATE leases SET holder = ?, expires_at = ? WHERE name = ? AND holder = ?",
            (holder, to_iso(now + ttl), name, old)) == 1

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
