"""Synthesis: refresh the portrait ("who you are", in every prompt) when the person's traits,
patterns or places changed since the last one. A background turn on the muted `job:synthesis`
channel; input watermark: the ids of the live facts it is built from."""

from __future__ import annotations

import hashlib
from typing import Protocol

from strata.bot.ambient import PORTRAIT_KINDS
from strata.cognition.jobs.common import FactPorts, live_facts, refuse
from strata.cognition.prompts import synthesis as prompts
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.core.voice import opens_in_first_person, told_as
from strata.memory.checks import grounding
from strata.memory.store.portraits import PortraitRepo


class SynthesisPorts(FactPorts, Protocol):
    """What the synthesis job uses."""

    @property
    def portraits(self) -> PortraitRepo: ...


SOURCE = "job:synthesis"
KINDS = PORTRAIT_KINDS
MAX_FACTS = 60


class SynthesisJob(BaseJob):
    name = "synthesis"
    description = "refresh the portrait when traits or patterns changed"

    async def inputs(self, ctx: JobContext[SynthesisPorts]) -> str | None:
        facts = await live_facts(ctx, KINDS)
        if not facts:
            return None
        ids = ",".join(str(f.id) for f in sorted(facts, key=lambda f: f.id))
        return "facts:" + hashlib.sha1(ids.encode()).hexdigest()[:16]

    async def run(self, ctx: JobContext[SynthesisPorts]) -> JobOutcome:
        s = ctx.services
        facts = sorted(await live_facts(ctx, KINDS),
                       key=lambda f: f.created_at, reverse=True)[:MAX_FACTS]
        previous = await s.portraits.latest(ctx.person.id)
        reply = await ctx.turn(
            SOURCE,
            prompts.prompt([f"[{f.kind}] {f.text}" for f in facts],
                           previous.text if previous else None),
            instructions=prompts.INSTRUCTIONS,
        )
        # Each sentence must trace to the facts it was written from; the others are refused
        # (a portrait is in every prompt: one invented sentence is repeated forever).
        shown = [prompts.INSTRUCTIONS]
        texts = [f.text for f in facts]
        kept, refused = [], []
        for sentence in grounding.sentences(reply.strip()[: prompts.MAX_CHARS]):
            why = grounding.check_traced(sentence, texts, layer=grounding.PORTRAIT,
                                         prompt=shown, names=[ctx.person.name])
            if why:
                refused.append(why)
            else:
                # The small model writes the portrait as the person ("I am a pharmacist…");
                # read under "your portrait of them" it makes the bot speak as them.
                kept.append(told_as(sentence, "they") if opens_in_first_person(sentence)
                            else sentence)
        await refuse(ctx, refused)
        if not kept:
            return JobOutcome(f"no sentence of the new portrait traced to the facts "
                              f"({len(refused)} refused); kept the old one")
        text = " ".join(kept)
        await s.portraits.save(ctx.person.id, text, ctx.inputs, ctx.now)
        return JobOutcome(f"portrait refreshed from {len(facts)} facts ({len(refused)} "
                          f"sentences refused): {text[:60]}…")
