"""Decay: recompute episode weights, delete expired tombstones, prune the transcript (the
memory life cycle's `decay_pass`), then per-kind fact decay and the purge of faded facts —
invalid ones, and live ones hidden for longer than their kind's grace (the data graph's
`FactRepo.decay`, table in `strata.memory.rules.decay.FACT_DECAY`) — and the person's job-run
records older than `job_runs_keep_days` — direct calls, no model. Runs at most every `decay_hours`
for each person and shared room; its input is time itself, one watermark per period."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from strata.cognition.jobs.common import FactPorts
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.core.config import Settings
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.lifecycle.passes import MemoryLifecycle


class DecayPorts(FactPorts, Protocol):
    """What the decay job uses."""

    @property
    def settings(self) -> Settings: ...
    @property
    def lifecycle(self) -> MemoryLifecycle: ...
    @property
    def runs(self) -> JobRunRepo: ...


class DecayJob(BaseJob):
    name = "decay"
    description = "weights, expired tombstones, transcript pruning, faded facts"
    for_rooms = True

    def min_interval(self, ctx: JobContext[DecayPorts]) -> timedelta | None:
        return timedelta(hours=ctx.services.settings.cognition.decay_hours)

    async def inputs(self, ctx: JobContext[DecayPorts]) -> str | None:
        period = ctx.services.settings.cognition.decay_hours * 3600
        return f"t{int(ctx.now.timestamp() // period)}"

    async def run(self, ctx: JobContext[DecayPorts]) -> JobOutcome:
        result = await ctx.services.lifecycle.decay(ctx.now, ctx.person.id)
        facts_weighed, facts_purged = await ctx.services.facts.repo.decay(ctx.now, ctx.person.id)
        keep = ctx.services.settings.cognition.job_runs_keep_days
        runs_deleted = await ctx.services.runs.prune(ctx.person.id, ctx.now - timedelta(days=keep))
        lines = [*result.lines(), f"fact weights updated: {facts_weighed}, faded facts "
                                  f"purged: {facts_purged}",
                 f"job runs older than {keep:g} days deleted: {runs_deleted}"]
        return JobOutcome("; ".join(lines), details={
            "weights_updated": result.weights_updated,
            "episodes_deleted": result.episodes_deleted,
            "rows_pruned": result.rows_pruned,
            "fact_weights_updated": facts_weighed,
            "facts_purged": facts_purged,
            "job_runs_deleted": runs_deleted,
        })
