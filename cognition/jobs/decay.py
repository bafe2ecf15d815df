"""Decay: recompute retrieval weights, per-kind fact decay, the janitor and transcript pruning
(a direct call of the memory life cycle, no model). Runs at most every `decay_hours`; its
input is time itself, one watermark per period."""

from __future__ import annotations

from datetime import timedelta

from cognition.registry import BaseJob, JobContext, JobOutcome


async def run_decay_pass(ctx: JobContext) -> str:
    """The life cycle's decay pass for one person; a one-line summary."""
    from memory.janitor import decay_pass  # the life-cycle module

    result = await decay_pass(ctx.services.db, ctx.now, ctx.person.id)
    return str(getattr(result, "summary", lambda: result)())


class DecayJob(BaseJob):
    name = "decay"
    description = "weights, per-kind fact decay, janitor, transcript pruning"

    def min_interval(self, ctx: JobContext) -> timedelta | None:
        return timedelta(hours=ctx.services.settings.cognition.decay_hours)

    async def inputs(self, ctx: JobContext) -> str | None:
        period = ctx.services.settings.cognition.decay_hours * 3600
        return f"t{int(ctx.now.timestamp() // period)}"

    async def run(self, ctx: JobContext) -> JobOutcome:
        return JobOutcome(await run_decay_pass(ctx))
