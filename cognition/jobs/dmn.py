"""The DMN (default-mode network): a reflective pass over the portrait and recent episodes.

A background turn on the person's `dmn` channel (source `dmn`: its rows become episodes like
anything the person says); each finding is also kept as a `reflection` fact citing the turn's
reply, so later conversations of the same person recall it. Nothing is sent to chat.
Input watermark: the portrait and the newest episode not written from the DMN's own rows (so
reflections do not feed reflections forever)."""

from __future__ import annotations

from cognition.jobs.common import add_fact
from cognition.prompts import dmn as prompts
from cognition.registry import BaseJob, JobContext, JobOutcome

SOURCE = "dmn"
RECENT = 8


class DmnJob(BaseJob):
    name = "dmn"
    description = "reflective pass over portrait and recent episodes; findings saved as memory"

    async def inputs(self, ctx: JobContext) -> str | None:
        s = ctx.services
        portrait = await s.portraits.latest(ctx.person.id)
        newest = await s.episodes.newest_id(ctx.person.id, except_source=SOURCE)
        if portrait is None and newest is None:
            return None
        return f"p{portrait.id if portrait else 0}:e{newest or 0}"

    async def run(self, ctx: JobContext) -> JobOutcome:
        s = ctx.services
        portrait = await s.portraits.latest(ctx.person.id)
        episodes = [summary[:600] for summary in await s.episodes.recent_summaries(
            ctx.person.id, except_source=SOURCE, limit=RECENT)]
        # The material goes into the instructions, not the stored prompt: the DMN channel's
        # rows become episodes, and they should hold the findings, not copies of old memories.
        reply = await ctx.turn(
            SOURCE,
            prompts.ASK,
            instructions=prompts.INSTRUCTIONS + "\n\n"
            + prompts.material(portrait.text if portrait else None, episodes),
            history=True,
        )
        reply_rows = [r.id for r in await s.transcript.by_turn(ctx.turn_id("main"))
                      if r.role.value == "assistant" and r.kind.value == "message"]
        kept = 0
        for finding in prompts.findings(reply):
            if await add_fact(ctx, "reflection", finding, SOURCE, row_ids=reply_rows):
                kept += 1
        return JobOutcome(f"reflected on {len(episodes)} episodes; {kept} new findings: "
                          f"{reply[:60]}")
