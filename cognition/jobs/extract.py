"""Fact extraction: the person's new episodes → the data graph (the data-graph module's
extractor, which keeps its own per-episode cursor). Input watermark: the newest live episode."""

from __future__ import annotations

from cognition.registry import BaseJob, JobContext, JobOutcome


async def run_fact_extraction(ctx: JobContext) -> str:
    """The data graph's extraction over the person's new episodes; a one-line summary."""
    from memory.extraction import extract_new  # the data-graph module

    result = await extract_new(ctx.services.db, ctx.services.chat, ctx.services.embedder,
                               ctx.person.id, ctx.now)
    return str(result)


class FactExtractionJob(BaseJob):
    name = "extract"
    description = "durable facts from new episodes → data graph"

    async def inputs(self, ctx: JobContext) -> str | None:
        newest = await ctx.services.db.fetchval(
            "SELECT max(id) FROM episodes WHERE owner_id = ? AND tombstoned_at IS NULL",
            (ctx.person.id,),
        )
        return f"ep:{newest}" if newest else None

    async def run(self, ctx: JobContext) -> JobOutcome:
        return JobOutcome(await run_fact_extraction(ctx))
