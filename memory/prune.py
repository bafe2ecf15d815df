"""Transcript pruning (DESIGN.md §3.1): raw rows at or below a channel's watermark that no live
episode cites are deleted, together with their turn's tool rows; there is no age cutoff.

Kept: rows above the watermark, rows cited by a live (not tombstoned) episode, compaction rows,
tool rows of a turn that still has a message row, and — on channels that produce episodes —
rows the episode cutter has not reached yet (its cursor), so nothing is pruned before it had
its chance to become memory. FTS rows and `transcript_vec` vectors go with the transcript rows
(triggers). Work is done in batches so the single writer is never held
for long. Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory.db import Database
from memory.profiles import profile_for
from memory.transcript import watermark

log = logging.getLogger(__name__)

BATCH = 20_000

# A row is cited when a live episode's citations include it.
_UNCITED = (
    "NOT EXISTS (SELECT 1 FROM episode_rows er JOIN episodes e ON e.id = er.episode_id"
    " WHERE er.row_id = t.id AND e.tombstoned_at IS NULL)"
)


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What pruning one channel did."""

    channel_id: int
    limit: int  # rows with id <= limit were candidates (0: nothing to prune yet)
    messages_deleted: int = 0
    tool_rows_deleted: int = 0
    vectors_deleted: int = 0

    @property
    def deleted(self) -> int:
        return self.messages_deleted + self.tool_rows_deleted


async def prune_limit(db: Database, channel_id: int, source: str) -> int:
    """The highest row id that may be pruned in the channel (0 when none may)."""
    mark = await watermark(db, channel_id)
    if mark is None:
        return 0
    limit = mark[1]
    if profile_for(source).episodes:
        cursor = await db.fetchval(
            "SELECT last_row_id FROM episode_cursors WHERE channel_id = ?", (channel_id,)
        )
        limit = min(limit, int(cursor or 0))
    return limit


async def count_vectors(conn: Any, table: str, key: str, ids: Sequence[int]) -> int:
    """How many of `ids` have a vector in the vec0 `table` (the vectors themselves leave with
    their rows, by the triggers of migration 0003)."""
    marks = ",".join("?" * len(ids))
    cur = await conn.execute(f"SELECT count(*) FROM {table} WHERE {key} IN ({marks})", list(ids))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _delete(db: Database, ids: list[int]) -> int:
    """Delete transcript rows and their vectors in batches; return the vectors deleted."""
    vectors = 0
    for start in range(0, len(ids), BATCH):
        chunk = ids[start:start + BATCH]
        async with db.write() as conn:
            vectors += await count_vectors(conn, "transcript_vec", "row_id", chunk)
            marks = ",".join("?" * len(chunk))
            await conn.execute(f"DELETE FROM transcript WHERE id IN ({marks})", chunk)
    return vectors


async def prune_channel(db: Database, channel_id: int, source: str) -> PruneResult:
    """Prune one channel; see the module docstring for what is kept."""
    limit = await prune_limit(db, channel_id, source)
    if limit <= 0:
        return PruneResult(channel_id, 0)
    messages = [
        r[0]
        for r in await db.fetchall(
            "SELECT t.id FROM transcript t WHERE t.channel_id = ? AND t.id <= ?"
            f" AND t.kind = 'message' AND {_UNCITED}",
            (channel_id, limit),
        )
    ]
    # A turn's tool rows go when none of its message rows is left.
    tools = [
        r[0]
        for r in await db.fetchall(
            "SELECT t.id FROM transcript t WHERE t.channel_id = ? AND t.id <= ?"
            f" AND t.kind IN ('tool_call', 'tool_result') AND {_UNCITED}"
            " AND NOT EXISTS (SELECT 1 FROM transcript m WHERE m.turn_id = t.turn_id"
            " AND m.kind = 'message' AND (m.id > ? OR m.channel_id != t.channel_id OR NOT "
            + _UNCITED.replace("t.id", "m.id") + "))",
            (channel_id, limit, limit),
        )
    ]
    ids = sorted([*messages, *tools])
    vectors = await _delete(db, ids) if ids else 0
    if ids:
        log.info("channel %s: pruned %d rows (%d tool rows)", channel_id, len(ids), len(tools))
    return PruneResult(channel_id, limit, len(messages), len(tools), vectors)


async def prune_owner(db: Database, owner_id: int | None = None) -> list[PruneResult]:
    """Prune every channel of `owner_id` (every channel when None)."""
    sql = "SELECT id, source FROM channels"
    params: tuple[int, ...] = ()
    if owner_id is not None:
        sql += " WHERE owner_id = ?"
        params = (owner_id,)
    channels = await db.fetchall(sql + " ORDER BY id", params)
    return [await prune_channel(db, c[0], c[1]) for c in channels]
