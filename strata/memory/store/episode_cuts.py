"""The episode cutter's reads and writes (`strata.memory.lifecycle.episode_cut`): the channels
with rows after their episode cursor, the cursor itself, the names of a window's speakers, the
refusals of the model's summaries, and a window's leaf episode stored with the cursor moved past
it in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

import numpy as np
import numpy.typing as npt

from strata.memory.checks.grounding import Refusal
from strata.memory.coordination.cursors import move_cursor, pending_channels, read_cursor
from strata.memory.engines.db import Database, placeholders
from strata.memory.store.episodes import NewEpisode, insert_episode
from strata.memory.store.refusals import RefusalRepo

CURSORS: Final = "episode_cursors"


class CursorMoved(Exception):
    """Another cutter advanced this channel's cursor first; this run stops."""


class EpisodeCuts:
    """The cutter's SQL over one database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.refusals = RefusalRepo(db)

    async def pending(self) -> list[int]:
        """The channels with rows after their episode cursor."""
        return await pending_channels(self.db, CURSORS)

    async def last_row(self, channel_id: int, turn_id: str) -> int | None:
        """The id of the turn's last row in the channel (what that turn completed)."""
        return await self.db.fetchval(
            "SELECT max(id) FROM transcript WHERE turn_id = ? AND channel_id = ?",
            (turn_id, channel_id),
        )

    async def channel(self, channel_id: int) -> tuple[int, int, str, bool] | None:
        """(id, owner, source, whether the owner paused memory) of the channel, or None."""
        row = await self.db.fetchone(
            "SELECT c.id, c.owner_id, c.source, p.paused FROM channels c"
            " JOIN persons p ON p.id = c.owner_id WHERE c.id = ?",
            (channel_id,),
        )
        if row is None:
            return None
        return row["id"], row["owner_id"], row["source"], bool(row["paused"])

    async def cursor(self, channel_id: int) -> int:
        """The channel's episode cursor (0 before its first episode)."""
        return await read_cursor(self.db, CURSORS, channel_id)

    async def advance(self, channel_id: int, expected: int, to: int) -> None:
        """Move the cursor from `expected` to `to`; `CursorMoved` when someone moved it first."""
        async with self.db.write() as conn:
            if not await move_cursor(conn, CURSORS, channel_id, expected, to):
                raise CursorMoved

    async def names(self, person_ids: Sequence[int]) -> dict[int, str]:
        """The names of the persons `person_ids` (those that exist)."""
        if not person_ids:
            return {}
        marks = placeholders(person_ids)
        found = await self.db.fetchall(f"SELECT id, name FROM persons WHERE id IN ({marks})",
                                       person_ids)
        return {r[0]: r[1] for r in found}

    async def record_refusals(self, owner_id: int, refusals: Sequence[Refusal],
                              now: datetime) -> None:
        await self.refusals.record(owner_id, refusals, now)

    async def add_episode(self, new: NewEpisode, vector: npt.NDArray[np.floating] | None,
                          now: datetime, expected: int, to: int) -> int:
        """Store the leaf `new` and move its channel's cursor from `expected` to `to` in one
        transaction; `CursorMoved` (nothing written) when someone moved the cursor first."""
        async with self.db.write() as conn:
            if not await move_cursor(conn, CURSORS, new.channel_id, expected, to):
                raise CursorMoved
            return await insert_episode(conn, new, vector, now, self.db.dim)
