"""Geo patterns: location habits from location-tagged transcript rows → `place` facts.

Rows from sources whose profile has `geo` on are grouped into ~100 m cells; each cell's visit
count, local days and parts of day, and what the person wrote there go to a background turn on
the muted `job:geo` channel, which names the habits. Input watermark: the newest such row."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Protocol

from strata.cognition.jobs.common import (
    FactPorts,
    TranscriptPorts,
    add_grounded,
    newest_row,
    part_of_day,
    sources_for,
)
from strata.cognition.prompts import geo as prompts
from strata.cognition.prompts import read_json
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.core.recurrence import local
from strata.core.types import Role
from strata.memory.checks import grounding
from strata.memory.store.transcript import RowFilter


class GeoPorts(FactPorts, TranscriptPorts, Protocol):
    """What the geo job uses."""


SOURCE = "job:geo"
HISTORY = 500  # the newest location rows looked at (habits need more than the new ones)


def _where() -> RowFilter:
    """Located rows from sources whose profile has `geo` on."""
    return RowFilter(sources_for("geo"), located=True)


class GeoPatternsJob(BaseJob):
    name = "geo"
    description = "location habits from location-tagged messages → place facts"

    async def inputs(self, ctx: JobContext[GeoPorts]) -> str | None:
        return await newest_row(ctx, _where())

    async def run(self, ctx: JobContext[GeoPorts]) -> JobOutcome:
        rows = await ctx.services.transcript.matching(ctx.person.id, _where(), limit=HISTORY,
                                                      newest=True)
        tz = ctx.person.timezone
        cells: dict[tuple[float, float], list] = defaultdict(list)
        for r in rows:
            assert r.lat is not None and r.lon is not None
            cells[(round(r.lat, 3), round(r.lon, 3))].append(r)
        repeated = {k: v for k, v in cells.items() if len(v) >= 2}
        if not repeated:
            return JobOutcome(f"{len(rows)} located messages; no place visited twice yet")
        blocks, seen = [], {}
        for (lat, lon), visits in sorted(repeated.items(), key=lambda kv: -len(kv[1])):
            times = Counter(f"{local(v.ts, tz):%A} {part_of_day(v.ts, tz)}" for v in visits)
            said = [f"> {v.content[:160]}" for v in visits[-3:] if v.content.strip()]
            blocks.append(f"Place {lat:.3f}, {lon:.3f}: {len(visits)} visits; "
                          + ", ".join(f"{t} ×{n}" for t, n in times.most_common(4))
                          + ("\nThey wrote there:\n" + "\n".join(said) if said else ""))
            # What a habit may rest on: when they were there, and what they wrote there.
            seen[(lat, lon)] = [*times, *(v.content for v in visits if v.role is Role.USER)]
        reply = await ctx.turn(SOURCE, "\n\n".join(blocks), instructions=prompts.INSTRUCTIONS,
                               schema=prompts.Places)
        found = read_json(reply, prompts.Places).places
        stored = 0
        for p in found:
            cell = (round(p.lat, 3), round(p.lon, 3))
            cited = [v.id for v in repeated.get(cell, [])]
            refusal = grounding.check_claim(p.habit, seen.get(cell, []), layer=grounding.PLACES,
                                            prompt=[prompts.INSTRUCTIONS],
                                            names=[ctx.person.name])
            if await add_grounded(ctx, "place", f"{p.habit.strip()} (near {p.lat:.3f}, "
                                  f"{p.lon:.3f})", "user", refusal, row_ids=cited):
                stored += 1
        return JobOutcome(f"{len(repeated)} places visited repeatedly; {stored} new place facts")
