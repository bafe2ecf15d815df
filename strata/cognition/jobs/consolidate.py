"""Consolidate: `strata.bot.writers.consolidate` — compaction of each channel, then the
episode roll-up rounds (UMAP → HDBSCAN) on each memory-producing channel — for a person or
a shared room. Input watermark: the apex counts per channel and level plus the newest
transcript row, so an owner whose memory did not change is not clustered again."""

from __future__ import annotations

from typing import Protocol

from strata.bot.writers.consolidate import consolidate_owner
from strata.cognition.jobs.common import TranscriptPorts
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.memory.lifecycle.passes import MemoryLifecycle
from strata.memory.store.episodes import EpisodeRepo


class ConsolidatePorts(TranscriptPorts, Protocol):
    """What the consolidate job uses."""

    @property
    def episodes(self) -> EpisodeRepo: ...
    @property
    def lifecycle(self) -> MemoryLifecycle: ...


class ConsolidateJob(BaseJob):
    name = "consolidate"
    description = "compaction and episode roll-up into topics and eras"
    for_rooms = True

    async def inputs(self, ctx: JobContext[ConsolidatePorts]) -> str | None:
        s = ctx.services
        apexes = await s.episodes.apex_counts(ctx.person.id)
        newest = await s.transcript.newest_id(ctx.person.id)
        if not apexes and newest is None:
            return None
        return f"r{newest or 0};" + ";".join(
            f"{a.channel_id}/{a.level}:{a.count}" for a in apexes)

    async def run(self, ctx: JobContext[ConsolidatePorts]) -> JobOutcome:
        s = ctx.services
        result = await consolidate_owner(s.lifecycle, ctx.model(), ctx.person.id, ctx.now)
        if result.errors:
            # Recorded as a failed run; the watermark stays so the work is tried again.
            raise RuntimeError("; ".join(result.errors))
        return JobOutcome("; ".join(result.lines()), details={
            "clusters": result.clusters, "parents": result.parents,
            "tombstoned": result.tombstoned, "errors": list(result.errors),
        })
