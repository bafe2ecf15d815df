"""The consolidate pass of one memory owner: compaction of each of its channels (continuity
summaries), then the roll-up rounds (leaf, then era) on each memory-producing channel, with the
model the caller hands in (a job run's budgeted `JobContext.model()`), over the memory life
cycle (`strata.memory.lifecycle.passes.MemoryLifecycle`) the composition root built. Run by
the background job `strata.cognition.jobs.consolidate` and by the evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strata.bot.writers.compaction import compact_until_under_budget
from strata.bot.writers.rollup import rollup_channel
from strata.core.ports import ChatModel
from strata.memory.lifecycle.compaction import CompactionResult
from strata.memory.lifecycle.passes import LifecyclePolicy, MemoryLifecycle
from strata.memory.lifecycle.rollup import RollupResult
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episodes import LEAF, TOPIC


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

    def summary(self) -> str:
        compacted = sum(1 for c in self.compactions if c.compacted)
        text = (f"{self.clusters} clusters, {self.parents} parents, {self.tombstoned} episodes "
                f"tombstoned, {compacted} compactions")
        return text + (f", {len(self.errors)} errors" if self.errors else "")

    def __str__(self) -> str:
        return self.summary()

    def lines(self) -> list[str]:
        out = [c.line() for c in self.compactions if c.compacted or c.error]
        out += [r.line() for r in self.rounds]
        out.append(f"clusters formed: {self.clusters}, parents written: {self.parents}, "
                   f"episodes tombstoned: {self.tombstoned}")
        return out


async def consolidate_owner(
    memory: MemoryLifecycle,
    chat: ChatModel,
    owner_id: int,
    now: datetime,
    policy: LifecyclePolicy | None = None,
) -> ConsolidateResult:
    """Compact each of the owner's channels, then run the roll-up rounds where due (with
    `policy`, else the life cycle's own)."""
    policy = policy or memory.policy
    compactions: list[CompactionResult] = []
    rounds: list[RollupResult] = []
    for channel_id, source in await memory.channels(owner_id):
        compactions += await compact_until_under_budget(
            memory, chat, channel_id, now, policy.compaction
        )
        if not profile_for(source).episodes:
            continue
        for level in (LEAF, TOPIC):  # leaf first: its parents may complete an era round
            rounds.append(
                await rollup_channel(memory, chat, channel_id, level, now, policy.rollup)
            )
    return ConsolidateResult(owner_id, tuple(compactions), tuple(rounds))
