"""The memory life cycle over one database, for the operator CLI and the background runner:

- `MemoryLifecycle`: what the consolidate pass (`strata.bot.writers.consolidate`, which
  asks the model) reads and writes: a channel's compaction work and its stored summary
  (`strata.memory.lifecycle.compaction`), a roll-up round's clusters and their stored parents
  (`strata.memory.lifecycle.rollup`); the model's text is stored only through their checks;
- `decay_pass` (strata.memory.store.forgetting.janitor): recompute weights, delete
  expired tombstones, prune;
- `hierarchy`: the layers per channel, for `strata memory show`.

The passes take the time from the caller and return a result dataclass saying what they did
(`lines()` for a report, `summary()` / `str()` for one line). Imports no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strata.core.ports import Embedder
from strata.memory.lifecycle import compaction, rollup
from strata.memory.lifecycle.compaction import CompactionPolicy, CompactionResult, CompactionWork
from strata.memory.lifecycle.rollup import LifecyclePolicy, RollupPolicy, RollupResult, RollupRound
from strata.memory.store.episodes import ERA, LEAF, TOPIC, Episode
from strata.memory.store.forgetting.janitor import DecayResult, decay_pass
from strata.memory.store.lifecycle import LifecycleStore

__all__ = ["ChannelHierarchy", "DecayResult", "LifecyclePolicy", "MemoryLifecycle",
           "decay_pass", "hierarchy"]


@dataclass(frozen=True, slots=True)
class MemoryLifecycle:
    """The life-cycle passes over one database, for callers that must not hold the database
    (the background jobs): built once by the composition root."""

    store: LifecycleStore
    embedder: Embedder
    policy: LifecyclePolicy = field(default_factory=LifecyclePolicy)

    async def channels(self, owner_id: int) -> list[tuple[int, str]]:
        """(id, source) of each of the owner's channels, in id order."""
        return await self.store.channels(owner_id)

    async def compaction_due(self, channel_id: int,
                             policy: CompactionPolicy) -> CompactionWork | CompactionResult:
        """`compaction.compaction_due`."""
        return await compaction.compaction_due(self.store, channel_id, policy)

    async def store_compaction(self, work: CompactionWork, now: datetime,
                               policy: CompactionPolicy, summary: str = "",
                               shown: Sequence[str] = ()) -> CompactionResult:
        """`compaction.store_compaction`: the model's summary only through grounding."""
        return await compaction.store_compaction(self.store, work, now, policy, summary, shown)

    async def rollup_round(self, channel_id: int, level: int,
                           policy: RollupPolicy) -> RollupRound | RollupResult:
        """`rollup.rollup_round`."""
        return await rollup.rollup_round(self.store, channel_id, level, policy)

    async def store_parent(self, children: Sequence[Episode], now: datetime,
                           policy: RollupPolicy, answer: str | None = None,
                           sources: Sequence[str] = (), prompt: Sequence[str] = ()) -> int:
        """`rollup.store_parent`: the model's summary only through its schema and grounding."""
        return await rollup.store_parent(self.store, self.embedder, children, now, policy, answer,
                                         sources, prompt)

    async def decay(self, now: datetime, owner_id: int | None = None) -> DecayResult:
        """`decay_pass` for one owner (or all)."""
        return await self.store.decay(now, owner_id)


@dataclass(frozen=True, slots=True)
class ChannelHierarchy:
    """One channel's memory layers, for `strata memory show`."""

    channel_id: int
    source: str
    live: dict[int, int]  # level → live episodes
    apexes: dict[int, int]  # level → live episodes without a parent
    tombstoned: int
    compactions: int
    watermark: int | None  # last row covered by the newest compaction
    top: tuple[Episode, ...]  # apexes, highest level first, then newest

    def as_dict(self) -> dict[str, Any]:
        return {
            "channel": self.channel_id,
            "source": self.source,
            "live": {LEVEL_NAMES[k]: v for k, v in self.live.items()},
            "apexes": {LEVEL_NAMES[k]: v for k, v in self.apexes.items()},
            "tombstoned": self.tombstoned,
            "compactions": self.compactions,
            "watermark": self.watermark,
            "top": [{"id": e.id, "level": e.level, "weight": round(e.weight, 3),
                     "started_at": e.started_at.isoformat(), "ended_at": e.ended_at.isoformat(),
                     "summary": e.summary} for e in self.top],
        }


LEVEL_NAMES = {LEAF: "leaf", TOPIC: "topic", ERA: "era"}


async def hierarchy(store: LifecycleStore, owner_id: int, *,
                    top: int = 10) -> list[ChannelHierarchy]:
    """Counts per level (live, apex), tombstones, compactions and the top apexes per channel."""
    out = []
    for channel_id, source in await store.channels(owner_id):
        live = {lvl: 0 for lvl in LEVEL_NAMES}
        apexes = {lvl: 0 for lvl in LEVEL_NAMES}
        tombstoned = 0
        for level, is_live, is_apex, count in await store.level_counts(channel_id):
            if is_live:
                live[level] += count
                apexes[level] += count if is_apex else 0
            else:
                tombstoned += count
        compactions = await store.compactions(channel_id)
        mark = await store.watermark(channel_id)
        best = await store.top_apexes(channel_id, top)
        out.append(ChannelHierarchy(channel_id, source, live, apexes, tombstoned, compactions,
                                    mark[1] if mark else None, tuple(best)))
    return out
