"""Pattern match: new user-behaviour transcript rows → `behavioral_pattern` facts, each mapped
to the tool it relates to where one fits. A background turn on the muted `job:patterns`
channel; input watermark: the newest of the person's own messages from pattern sources."""

from __future__ import annotations

from typing import Protocol

from strata.bot.tools import ToolRegistry
from strata.cognition.jobs.common import (
    FactPorts,
    TranscriptPorts,
    add_grounded,
    newest_row,
    part_of_day,
    row_cursor,
    sources_for,
    when,
)
from strata.cognition.prompts import patterns as prompts
from strata.cognition.prompts import read_json
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.core.recurrence import local
from strata.core.types import Role, RowKind
from strata.memory.checks import grounding
from strata.memory.store.transcript import RowFilter


class PatternPorts(FactPorts, TranscriptPorts, Protocol):
    """What the pattern job uses: the tools, to name the one a habit relates to."""

    @property
    def tools(self) -> ToolRegistry: ...


SOURCE = "job:patterns"
BATCH = 200


def _where() -> RowFilter:
    """The person's own messages from sources whose profile has `patterns` on."""
    return RowFilter(sources_for("patterns"), role=Role.USER, kind=RowKind.MESSAGE)


class PatternMatchJob(BaseJob):
    name = "patterns"
    description = "behavioural patterns from new messages → behavioral_pattern facts"

    async def inputs(self, ctx: JobContext[PatternPorts]) -> str | None:
        return await newest_row(ctx, _where())

    async def run(self, ctx: JobContext[PatternPorts]) -> JobOutcome:
        s = ctx.services
        rows = await s.transcript.matching(ctx.person.id, _where(),
                                           after_id=row_cursor(ctx.previous), limit=BATCH)
        if not rows:
            return JobOutcome("no new messages")
        tz = ctx.person.timezone
        lines = [f"> [{r.id} {when(r.ts, tz)}] {r.content[:300]}" for r in rows]
        tools = [(spec.name, spec.description[:120]) for spec in s.tools.specs.values()]
        ask = prompts.prompt(lines, tools)
        reply = await ctx.turn(SOURCE, ask, instructions=prompts.INSTRUCTIONS,
                               schema=prompts.Patterns)
        found = read_json(reply, prompts.Patterns).patterns
        names = {name for name, _ in tools}
        by_id = {r.id: r for r in rows}
        shown = [prompts.INSTRUCTIONS, *(f"{n}: {d}" for n, d in tools)]
        stored = 0
        for p in found:
            cited = [by_id[i] for i in dict.fromkeys(p.rows) if i in by_id]
            # The person's own words, with the local day and part of day they were written
            # (a habit's "Tuesday evenings" comes from when, not what).
            said = [f"{local(r.ts, tz):%A} {part_of_day(r.ts, tz)}: {r.content}" for r in cited]
            # A habit is something at least two of its messages say, each on its own.
            holding = [line for line in said
                       if grounding.content_share(p.pattern, line, [ctx.person.name])
                       >= grounding.CLAIM_SHARE]
            refusal = grounding.check_claim(p.pattern, said, layer=grounding.PATTERNS,
                                            prompt=shown, names=[ctx.person.name])
            if refusal is None and len(holding) < 2:
                refusal = grounding.Refusal(grounding.PATTERNS, grounding.UNCITED, p.pattern)
            text = p.pattern.strip()
            if p.tool and p.tool in names:
                text += f" (related tool: {p.tool})"
            if await add_grounded(ctx, "behavioral_pattern", text, "user", refusal,
                                  row_ids=[r.id for r in cited]):
                stored += 1
        return JobOutcome(f"read {len(rows)} messages; {stored} new patterns",
                          cursor=f"row:{rows[-1].id}")
