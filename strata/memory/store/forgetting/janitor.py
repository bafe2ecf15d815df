"""The decay pass and the janitor (docs/lifecycle.md §3).

`decay_pass` recomputes the stored retrieval weight of every episode from
`strata.memory.rules.decay`, hard-deletes tombstoned episodes 30 days after they were tombstoned
(with their vectors; their citations and FTS rows go by cascade and triggers), and prunes the
transcript. All time comes from the caller. Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database
from strata.memory.rules.decay import TOMBSTONE_KEEP_DAYS, episode_weight
from strata.memory.store.forgetting.prune import PruneResult, count_vectors, prune_owner

log = logging.getLogger(__name__)

BATCH = 2000
# Stored weights change by less than this are left alone (saves rewriting every row daily).
_EPSILON = 1e-4


@dataclass(frozen=True, slots=True)
class JanitorResult:
    episodes_deleted: int = 0
    vectors_deleted: int = 0


@dataclass(frozen=True, slots=True)
class DecayResult:
    """What one decay pass did."""

    weights_updated: int = 0
    episodes_deleted: int = 0
    vectors_deleted: int = 0
    pruned: tuple[PruneResult, ...] = field(default_factory=tuple)

    @property
    def rows_pruned(self) -> int:
        return sum(p.deleted for p in self.pruned)

    def summary(self) -> str:
        return (f"{self.weights_updated} weights updated, {self.episodes_deleted} tombstoned "
                f"episodes deleted, {self.rows_pruned} transcript rows pruned")

    def __str__(self) -> str:
        return self.summary()

    def lines(self) -> list[str]:
        return [
            f"weights updated: {self.weights_updated}",
            f"tombstoned episodes deleted (older than {TOMBSTONE_KEEP_DAYS:g} days): "
            f"{self.episodes_deleted}",
            f"transcript rows pruned: {self.rows_pruned} "
            f"({sum(p.tool_rows_deleted for p in self.pruned)} tool rows)",
        ]


def _owner_filter(owner_id: int | None) -> tuple[str, tuple[int, ...]]:
    return ("", ()) if owner_id is None else (" AND owner_id = ?", (owner_id,))


async def recompute_weights(db: Database, now: datetime, owner_id: int | None = None) -> int:
    """Store exp(−Δt/τ) for every episode; return how many stored weights changed."""
    where, params = _owner_filter(owner_id)
    rows = await db.fetchall(
        "SELECT id, level, last_relevant_at, tombstoned_at, weight FROM episodes WHERE 1 = 1"
        + where,
        params,
    )
    updates = []
    for r in rows:
        w = episode_weight(r[1], from_iso(r[2]), now, tombstoned=r[3] is not None)
        if abs(w - r[4]) > _EPSILON:
            updates.append((w, r[0]))
    for start in range(0, len(updates), BATCH):
        await db.executemany_write(
            "UPDATE episodes SET weight = ? WHERE id = ?", updates[start:start + BATCH]
        )
    return len(updates)


async def delete_expired_tombstones(
    db: Database, now: datetime, owner_id: int | None = None
) -> JanitorResult:
    """Hard-delete episodes tombstoned at least `TOMBSTONE_KEEP_DAYS` ago, with their vectors."""
    cutoff = to_iso(now - timedelta(days=TOMBSTONE_KEEP_DAYS))
    where, params = _owner_filter(owner_id)
    ids = [
        r[0]
        for r in await db.fetchall(
            "SELECT id FROM episodes WHERE tombstoned_at IS NOT NULL AND tombstoned_at <= ?"
            + where,
            (cutoff, *params),
        )
    ]
    vectors = 0
    for start in range(0, len(ids), BATCH):
        chunk = ids[start:start + BATCH]
        async with db.write() as conn:
            vectors += await count_vectors(conn, "episode_vec", "episode_id", chunk)
            await conn.executemany("DELETE FROM episodes WHERE id = ?", [(i,) for i in chunk])
    if ids:
        log.info("janitor: deleted %d tombstoned episodes", len(ids))
    return JanitorResult(len(ids), vectors)


async def decay_pass(db: Database, now: datetime, owner_id: int | None = None) -> DecayResult:
    """Recompute weights, delete expired tombstones, prune the transcript (one owner or all)."""
    updated = await recompute_weights(db, now, owner_id)
    janitor = await delete_expired_tombstones(db, now, owner_id)
    pruned = await prune_owner(db, owner_id)
    return DecayResult(updated, janitor.episodes_deleted, janitor.vectors_deleted, tuple(pruned))
