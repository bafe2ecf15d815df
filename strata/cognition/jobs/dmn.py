"""The DMN (default-mode network): a reflective pass over the portrait, recent episodes and new
facts.

A background turn on the person's `dmn` channel (source `dmn`: its rows never become episodes
or facts by themselves); each finding that the grounding rule traces to the person's own words
in the episodes it reflects on, or to their facts, is kept as a `reflection` fact citing the
turn's reply, so later conversations of the same person recall it; the others are refused and
counted. Nothing is sent to chat.
The channel runs no turn-zero recall (`strata.bot.background.seeds_memory`): the material is
stated here — the portrait, the newest episodes not written from the DMN's own rows and the facts
learned since the last run (reflections left out), so reflections do not feed reflections forever.
Input watermark: the portrait, that newest episode and that newest fact."""

from __future__ import annotations

from typing import Protocol

from strata.bot.ambient import PORTRAIT_KINDS
from strata.cognition.jobs.common import FactPorts, TranscriptPorts, add_grounded, live_facts
from strata.cognition.prompts import dmn as prompts
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.memory.checks import grounding
from strata.memory.checks.fact_evidence import evidence_problem
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.portraits import PortraitRepo


class DmnPorts(FactPorts, TranscriptPorts, Protocol):
    """What the reflection (DMN) job uses."""

    @property
    def portraits(self) -> PortraitRepo: ...

    @property
    def episodes(self) -> EpisodeRepo: ...


SOURCE = "dmn"
RECENT = 8
NEW_FACTS = 10


def _fact_cursor(inputs: str) -> int:
    """The newest fact id of an input watermark `p1:e2:f3` (0 when there is none)."""
    for part in inputs.split(":"):
        if part.startswith("f") and part[1:].isdigit():
            return int(part[1:])
    return 0


class DmnJob(BaseJob):
    name = "dmn"
    description = "reflective pass over portrait and recent episodes; findings saved as memory"

    async def inputs(self, ctx: JobContext[DmnPorts]) -> str | None:
        s = ctx.services
        portrait = await s.portraits.latest(ctx.person.id)
        newest = await s.episodes.newest_id(ctx.person.id, except_source=SOURCE)
        fact = await s.facts.repo.newest_id(ctx.person.id, except_source=SOURCE)
        if portrait is None and newest is None and fact is None:
            return None
        return f"p{portrait.id if portrait else 0}:e{newest or 0}:f{fact or 0}"

    async def run(self, ctx: JobContext[DmnPorts]) -> JobOutcome:
        s = ctx.services
        portrait = await s.portraits.latest(ctx.person.id)
        episodes = [summary[:600] for summary in await s.episodes.recent_summaries(
            ctx.person.id, except_source=SOURCE, limit=RECENT)]
        facts = await s.facts.repo.newer_than(ctx.person.id, _fact_cursor(ctx.previous),
                                              except_source=SOURCE, limit=NEW_FACTS)
        new_facts = [f"[{kind}] {text[:300]}" for kind, text in facts]
        # The material goes into the instructions, not the stored prompt: the DMN channel's
        # rows become episodes, and they should hold the findings, not copies of old memories.
        reply = await ctx.turn(
            SOURCE,
            prompts.ASK,
            instructions=prompts.INSTRUCTIONS + "\n\n"
            + prompts.material(portrait.text if portrait else None, episodes, new_facts),
            history=True,
        )
        reply_rows = [r.id for r in await s.transcript.by_turn(ctx.turn_id("main"))
                      if r.role.value == "assistant" and r.kind.value == "message"]
        # A finding is a claim about the person: it must trace to the person's own words in
        # the episodes it reflects on, and to the facts (themselves checked against the
        # person's words; the portrait is built from them). Not to the episode summaries:
        # they also tell what the bot said, and a small model's reflection on them laundered
        # questions, hypotheticals and the bot's replies into "findings" (bench/truth.py).
        # Only what the person asserted: a question, a hypothetical or someone else's words
        # is no ground for a finding about them (evidence_problem, as for facts).
        own = [line for line in await s.episodes.recent_own_lines(
            ctx.person.id, except_source=SOURCE, episodes=RECENT) if evidence_problem(line) is None]
        ground = [*own, *(text for _, text in facts),
                  *(f.text for f in await live_facts(ctx, PORTRAIT_KINDS))]
        kept = 0
        for finding in prompts.findings(reply):
            refusal = grounding.check_traced(finding, ground, layer=grounding.REFLECTIONS,
                                             prompt=[prompts.INSTRUCTIONS, prompts.ASK],
                                             names=[ctx.person.name])
            if await add_grounded(ctx, "reflection", finding, SOURCE, refusal,
                                  row_ids=reply_rows):
                kept += 1
        return JobOutcome(f"reflected on {len(episodes)} episodes and {len(new_facts)} new "
                          f"facts; {kept} new findings: "
                          f"{reply[:60]}")
