"""Calendar events pulled from a person's connected services (the connector sync job).

A sync replaces the connector's events for the person in one transaction, so an event deleted
at the source disappears here too. Imports `bot` leaf modules and `strata.memory.engines.db`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database


@dataclass(frozen=True, slots=True)
class CalendarEvent:
    uid: str
    summary: str
    starts_at: datetime
    ends_at: datetime | None = None
    location: str = ""


class CalendarRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def replace(
        self, owner_id: int, connector: str, events: Sequence[CalendarEvent], now: datetime
    ) -> None:
        async with self.db.write() as conn:
            await conn.execute(
                "DELETE FROM calendar_events WHERE owner_id = ? AND connector = ?",
                (owner_id, connector),
            )
            await conn.executemany(
                "INSERT INTO calendar_events (owner_id, connector, uid, summary,"
                " location, starts_at, ends_at, synced_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (owner_id, connector, uid, starts_at) DO UPDATE SET"
                " summary = excluded.summary, location = excluded.location,"
                " ends_at = excluded.ends_at, synced_at = excluded.synced_at",
                [
                    (owner_id, connector, e.uid, e.summary, e.location, to_iso(e.starts_at),
                     to_iso(e.ends_at) if e.ends_at else None, to_iso(now))
                    for e in events
                ],
            )

    async def upcoming(
        self, owner_id: int, now: datetime, until: datetime, limit: int = 10
    ) -> list[CalendarEvent]:
        """Events that have not ended yet and start before `until`, soonest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM calendar_events WHERE owner_id = ? AND starts_at < ?"
            " AND coalesce(ends_at, starts_at) >= ? ORDER BY starts_at LIMIT ?",
            (owner_id, to_iso(until), to_iso(now), limit),
        )
        return [
            CalendarEvent(r["uid"], r["summary"], from_iso(r["starts_at"]),
                          from_iso(r["ends_at"]) if r["ends_at"] else None, r["location"])
            for r in rows
        ]

    async def count(self, owner_id: int) -> int:
        return int(await self.db.fetchval(
            "SELECT count(*) FROM calendar_events WHERE owner_id = ?", (owner_id,)))
