"""Fact extraction: the person's new episodes → the data graph, by the data graph's extractor
(`memory.fact_extraction`, which keeps its own per-episode cursor and validates the model's
answer) with its model call routed through a background turn on the muted `job:extract`
channel. Input watermark: the newest episode the extractor has not read."""

from __future__ import annotations

from collections.abc import Sequence

from bot.types import ChatMessage
from cognition.registry import BaseJob, JobContext, JobOutcome

SOURCE = "job:extract"
MAX_BATCHES = 5  # per run (8 episodes each); the rest waits for the next run


class FactExtractionJob(BaseJob):
    name = "extract"
    description = "durable facts from new episodes → data graph"

    async def inputs(self, ctx: JobContext) -> str | None:
        newest = await ctx.services.extractor.watermark(ctx.person.id)
        return f"ep:{newest}" if newest else None

    async def run(self, ctx: JobContext) -> JobOutcome:
        extractor = ctx.services.extractor
        lines = []
        for _ in range(MAX_BATCHES):
            if not await extractor.pending(ctx.person.id, limit=1) or ctx.remaining <= 0:
                break
            # The batch is named by where the extractor's cursor stands, so a batch redone
            # after a restart reuses its finished turn instead of asking the model again.
            position, _ = await extractor.cursor(ctx.person.id)

            async def complete(messages: Sequence[ChatMessage], at: int = position) -> str:
                system = "\n\n".join(m.content or "" for m in messages if m.role == "system")
                user = "\n\n".join(m.content or "" for m in messages if m.role != "system")
                return await ctx.turn(SOURCE, user, instructions=system, step=f"after{at}")

            report = await extractor.run(ctx.person.id, complete, ctx.now)
            lines.append(report.line())
            if report.skipped:
                break
        return JobOutcome("; ".join(lines) or "nothing to read")
