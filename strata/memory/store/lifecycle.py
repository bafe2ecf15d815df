"""The memory life cycle's reads and writes (`strata.memory.lifecycle`): a channel's rows not yet
compacted and its compaction rows, the apexes a roll-up clusters and the parent it writes, the
layers per channel that `strata memory show` lists, the refusals of the model's summaries, and
the decay pass (`strata.memory.store.forgetting.janitor`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from strata.core.clock import to_iso
from strata.core.errors import StrataError
from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.checks.grounding import Refusal
from strata.memory.engines.db import Database, placeholders
from strata.memory.store.episodes import Episode, EpisodeRepo, NewEpisode, episode_from_db
from strata.memory.store.episodes import insert_episode as insert_episode_row
from strata.memory.store.forgetting.janitor import DecayResult, decay_pass
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import row_from_db, watermark

# The source of compaction rows: not in the source-profile allowlist, so nothing (episodes,
# facts, patterns) is ever derived from a summary.
COMPACTION_SOURCE = "compaction"


class RollupConflictError(StrataError):
    """A child was tombstoned or re-parented by someone else while its parent was written."""


class LifecycleStore:
    """The life cycle's SQL over one database; `episodes`, `refusals`: the repositories the
    composition root built (`strata.app.memory_wiring.Repos`)."""

    def __init__(self, db: Database, episodes: EpisodeRepo, refusals: RefusalRepo) -> None:
        self.db = db
        self.episodes = episodes
        self.refusals = refusals

    async def record_refusals(self, owner_id: int, refusals: Sequence[Refusal],
                              now: datetime) -> None:
        await self.refusals.record(owner_id, refusals, now)

    # -- compaction ------------------------------------------------------------------------------

    async def watermark(self, channel_id: int) -> tuple[TranscriptRow, int] | None:
        """The channel's newest compaction row and the last row id it covers (`watermark`)."""
        return await watermark(self.db, channel_id)

    async def pending_rows(self, channel_id: int, after_id: int) -> list[TranscriptRow]:
        """The channel's rows after `after_id` that are not compactions, in id order."""
        rows = await self.db.fetchall(
            "SELECT * FROM transcript WHERE channel_id = ? AND id > ? AND kind != 'compaction'"
            " ORDER BY id",
            (channel_id, after_id),
        )
        return [row_from_db(r) for r in rows]

    async def add_compaction(self, channel_id: int, now: datetime, summary: str,
                             covers_to: int) -> int | None:
        """Append the channel's compaction row (covering rows up to `covers_to`); its id."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role,"
                " kind, content, turn_id, covers_to) SELECT id, owner_id, NULL, ?, ?, ?, ?, ?,"
                " ?, ? FROM channels WHERE id = ?",
                (to_iso(now), COMPACTION_SOURCE, Role.SYSTEM.value, RowKind.COMPACTION.value,
                 summary, uuid.uuid4().hex, covers_to, channel_id),
            )
            return cur.lastrowid

    # -- roll-up ---------------------------------------------------------------------------------

    async def apexes(self, channel_id: int, level: int) -> list[Episode]:
        return await self.episodes.apexes(channel_id, level)

    async def embeddings(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        return await self.episodes.embeddings(ids)

    async def add_parent(self, parent: NewEpisode, embedding: npt.NDArray[np.floating],
                         children: Sequence[int], now: datetime) -> int:
        """Write `parent` and tombstone its `children` (linked to it) in one transaction;
        `RollupConflictError` (nothing written) when a child changed meanwhile."""
        marks = placeholders(children)
        async with self.db.write() as conn:
            parent_id = await insert_episode_row(conn, parent, np.asarray(embedding), now,
                                                 self.db.dim)
            cur = await conn.execute(
                f"UPDATE episodes SET parent_id = ?, tombstoned_at = ? WHERE id IN ({marks})"
                " AND parent_id IS NULL AND tombstoned_at IS NULL",
                (parent_id, to_iso(now), *children),
            )
            if cur.rowcount != len(children):
                # Someone else (a /forget, a concurrent round) changed a child meanwhile.
                raise RollupConflictError("the children changed while their parent was written")
        return parent_id

    # -- the layers, decay -----------------------------------------------------------------------

    async def channels(self, owner_id: int) -> list[tuple[int, str]]:
        """(id, source) of each of the owner's channels, in id order."""
        rows = await self.db.fetchall(
            "SELECT id, source FROM channels WHERE owner_id = ? ORDER BY id", (owner_id,)
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def level_counts(self, channel_id: int) -> list[tuple[int, bool, bool, int]]:
        """(level, live, apex, how many) of the channel's episodes."""
        rows = await self.db.fetchall(
            "SELECT level, tombstoned_at IS NULL AS live, parent_id IS NULL AS apex, count(*)"
            " FROM episodes WHERE channel_id = ? GROUP BY 1, 2, 3",
            (channel_id,),
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    async def compactions(self, channel_id: int) -> int:
        """How many compaction rows the channel has."""
        return int(await self.db.fetchval(
            "SELECT count(*) FROM transcript WHERE channel_id = ? AND kind = 'compaction'",
            (channel_id,),
        ))

    async def top_apexes(self, channel_id: int, top: int) -> list[Episode]:
        """The channel's `top` live apexes, highest level first, then newest."""
        best = await self.db.fetchall(
            "SELECT * FROM episodes WHERE channel_id = ? AND parent_id IS NULL"
            " AND tombstoned_at IS NULL ORDER BY level DESC, ended_at DESC, id DESC LIMIT ?",
            (channel_id, top),
        )
        return [episode_from_db(r) for r in best]

    async def decay(self, now: datetime, owner_id: int | None = None) -> DecayResult:
        """`decay_pass` for one owner (or all)."""
        return await decay_pass(self.db, now, owner_id)
