"""The memory life-cycle passes as plain async functions, for the operator CLI
(`strata jobs run --job consolidate|decay`) and the background runner:

- `consolidate_owner`: compaction of every channel of a person (continuity summaries), then the
  roll-up rounds (leaf, then era) on each memory-producing channel;
- `decay_pass` (from memory.janitor): recompute weights, delete expired tombstones, prune.

Both take the time from the caller and return a result dataclass saying what they did.
Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from bot.ports import ChatModel, Embedder
from memory.compaction import CompactionPolicy, CompactionResult, compact_until_under_budget
from memory.db import Database
from memory.episodes import LEAF, TOPIC
from memory.janitor import DecayResult, decay_pass
from memory.profiles import profile_for
from memory.rollup import RollupPolicy, RollupResult, rollup_channel

__all__ = ["ConsolidateResult", "DecayResult", "LifecyclePolicy", "consolidate_owner",
           "decay_pass"]


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    rollup: RollupPolicy = field(default_factory=RollupPolicy)


@dataclass(frozen=True, slots=True)
class ConsolidateResult:
    """What one consolidate pass over one person did."""

    owner_id: int
    compactions: tuple[CompactionResult, ...] = ()
    rounds: tuple[RollupResult, ...] = ()

    @property
    def clusters(self) -> int:
        return sum(r.clusters for r in self.rounds)

    @property
    def parents(self) -> int:
        return sum(len(r.parents) for r in self.rounds)

    @property
    def tombstoned(self) -> int:
        return sum(r.tombstoned for r in self.rounds)

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(e for r in self.rounds for e in r.errors) + tuple(
            c.error for c in self.compactions if c.error
        )

    def lines(self) -> list[str]:
        out = [c.line() for c in self.compactions if c.compacted or c.error]
        out += [r.line() for r in self.rounds]
        out.append(f"clusters formed: {self.clusters}, parents written: {self.parents}, "
                   f"episodes tombstoned: {self.tombstoned}")
        return out


async def consolidate_owner(
    db: Database,
    chat: ChatModel,
    embedder: Embedder,
    owner_id: int,
    now: datetime,
    policy: LifecyclePolicy = LifecyclePolicy(),
) -> ConsolidateResult:
    """Compact each of the owner's channels, then run the roll-up rounds where due."""
    channels = await db.fetchall(
        "SELECT id, source FROM channels WHERE owner_id = ? ORDER BY id", (owner_id,)
    )
    compactions: list[CompactionResult] = []
    rounds: list[RollupResult] = []
    for channel_id, source in channels:
        compactions += await compact_until_under_budget(
            db, chat, channel_id, now, policy.compaction
        )
        if not profile_for(source).episodes:
            continue
        for level in (LEAF, TOPIC):  # leaf first: its parents may complete an era round
            rounds.append(
                await rollup_channel(db, chat, embedder, channel_id, level, now, policy.rollup)
            )
    return ConsolidateResult(owner_id, tuple(compactions), tuple(rounds))
