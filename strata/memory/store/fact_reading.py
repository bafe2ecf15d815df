"""Fact extraction's reads and writes (`strata.memory.facts.extraction`): its cursor over an
owner's leaf episodes (`fact_cursors`), the episodes after it, the messages each cites, and the
refusals of a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from strata.core.clock import to_iso
from strata.memory.checks.grounding import Refusal
from strata.memory.engines.db import Database, Row
from strata.memory.store.episodes import LEAF, Episode, episode_from_db
from strata.memory.store.refusals import RefusalRepo


class FactReading:
    """Fact extraction's SQL over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.refusals = RefusalRepo(db)

    async def cursor(self, owner_id: int) -> tuple[int, str]:
        """(last episode id, its creation time) read so far; (0, "") before the first run."""
        row = await self.db.fetchone(
            "SELECT last_episode_id, last_created_at FROM fact_cursors WHERE owner_id = ?",
            (owner_id,),
        )
        return (int(row[0]), str(row[1])) if row else (0, "")

    async def pending(self, owner_id: int, limit: int = 100) -> list[Episode]:
        """Leaf episodes of `owner_id` after the cursor, oldest first."""
        last_id, last_created = await self.cursor(owner_id)
        rows = await self.db.fetchall(
            "SELECT * FROM episodes WHERE owner_id = ? AND level = ?"
            " AND (id > ? OR created_at > ?) ORDER BY id LIMIT ?",
            (owner_id, LEAF, last_id, last_created, limit),
        )
        return [episode_from_db(r) for r in rows]

    async def newest_pending(self, owner_id: int) -> int | None:
        """The newest leaf episode id after the cursor, or None."""
        last_id, last_created = await self.cursor(owner_id)
        return await self.db.fetchval(
            "SELECT max(id) FROM episodes WHERE owner_id = ? AND level = ?"
            " AND (id > ? OR created_at > ?)",
            (owner_id, LEAF, last_id, last_created),
        )

    async def advance(self, owner_id: int, episodes: Sequence[Episode]) -> None:
        """Move the cursor past `episodes` (never back)."""
        if not episodes:
            return
        last_id = max(e.id for e in episodes)
        last_created = max(to_iso(e.created_at) for e in episodes)
        await self.db.execute_write(
            "INSERT INTO fact_cursors (owner_id, last_episode_id, last_created_at)"
            " VALUES (?, ?, ?) ON CONFLICT (owner_id) DO UPDATE SET"
            # The larger of old and new (SQLite's two-argument max() is not PostgreSQL's).
            " last_episode_id = CASE WHEN excluded.last_episode_id > fact_cursors.last_episode_id"
            " THEN excluded.last_episode_id ELSE fact_cursors.last_episode_id END,"
            " last_created_at = CASE WHEN excluded.last_created_at > fact_cursors.last_created_at"
            " THEN excluded.last_created_at ELSE fact_cursors.last_created_at END",
            (owner_id, last_id, last_created),
        )

    async def messages(self, episode_id: int) -> list[Row]:
        """(id, role, content) of the message rows the episode cites, in id order."""
        return await self.db.fetchall(
            "SELECT t.id, t.role, t.content FROM episode_rows er"
            " JOIN transcript t ON t.id = er.row_id"
            " WHERE er.episode_id = ? AND t.kind = 'message' ORDER BY t.id",
            (episode_id,),
        )

    async def record_refusals(self, owner_id: int, refusals: Sequence[Refusal],
                              now: datetime) -> None:
        await self.refusals.record(owner_id, refusals, now)
