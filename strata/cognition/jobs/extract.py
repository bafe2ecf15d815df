"""Fact extraction: the person's new episodes → the data graph.

First the conversation windows the person left open are closed: they have been idle long
enough that the conversation paused, so the episode cutter flushes them into episodes (only
channels whose sources make episodes). Then the data graph's extractor
(`strata.bot.writers.facts` over `strata.memory.facts.extraction`, which keeps its
own per-episode cursor and checks the model's answer) reads the new episodes, with its model
call routed through a background turn on the muted `job:extract` channel. Input watermark:
the newest unread episode and the newest row not yet cut into an episode. With
`facts.use_model` off the job only closes paused windows (there is no extractive fallback for
facts)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from strata.bot.writers.episodes import EpisodeCutter
from strata.bot.writers.facts import FactExtraction
from strata.cognition.jobs.common import TranscriptPorts
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.core.config import Settings
from strata.core.types import ChatMessage
from strata.memory.facts.candidates import FactsSchema
from strata.memory.rules.profiles import sources_with


class ExtractPorts(TranscriptPorts, Protocol):
    """What the extraction job uses."""

    @property
    def settings(self) -> Settings: ...

    @property
    def cutter(self) -> EpisodeCutter | None: ...

    @property
    def extractor(self) -> FactExtraction: ...


SOURCE = "job:extract"
MAX_BATCHES = 5  # per run (8 episodes each); the rest waits for the next run


async def open_channels(ctx: JobContext[ExtractPorts]) -> dict[int, int]:
    """The person's memory-producing channels with rows after their episode cursor: {channel
    id: newest row id}."""
    return await ctx.services.transcript.uncut_channels(ctx.person.id, sources_with("episodes"))


async def close_paused(ctx: JobContext[ExtractPorts]) -> str:
    """Flush the person's open conversation windows into episodes; the outcome line."""
    cut = 0
    if ctx.services.cutter is not None:
        for channel_id in await open_channels(ctx):
            cut += len(await ctx.services.cutter.flush(channel_id, ctx.now))
    return f"{cut} episodes cut from paused conversations"


class FactExtractionJob(BaseJob):
    name = "extract"
    description = "close paused conversations into episodes; durable facts → data graph"

    async def inputs(self, ctx: JobContext[ExtractPorts]) -> str | None:
        # Without the model (facts.use_model off) only the paused windows are work.
        newest = (await ctx.services.extractor.watermark(ctx.person.id)
                  if ctx.services.settings.facts.use_model else None)
        open_rows = max((await open_channels(ctx)).values(), default=None)
        if newest is None and open_rows is None:
            return None
        return f"ep:{newest or 0};open:{open_rows or 0}"

    async def run(self, ctx: JobContext[ExtractPorts]) -> JobOutcome:
        s = ctx.services
        lines = [await close_paused(ctx)]
        if not s.settings.facts.use_model:
            return JobOutcome("; ".join([*lines, "no facts: facts.use_model is off"]))
        for _ in range(MAX_BATCHES):
            if not await s.extractor.pending(ctx.person.id, limit=1) or ctx.remaining <= 0:
                break
            # The batch is named by where the extractor's cursor stands, so a batch redone
            # after a restart reuses its finished turn instead of asking the model again.
            position, _ = await s.extractor.cursor(ctx.person.id)

            async def complete(messages: Sequence[ChatMessage], at: int = position) -> str:
                system = "\n\n".join(m.content or "" for m in messages if m.role == "system")
                user = "\n\n".join(m.content or "" for m in messages if m.role != "system")
                return await ctx.turn(SOURCE, user, instructions=system, step=f"after{at}",
                                      schema=FactsSchema)

            report = await s.extractor.run(ctx.person.id, complete, ctx.now)
            lines.append(report.line())
            if report.skipped:
                break
        return JobOutcome("; ".join(lines))
