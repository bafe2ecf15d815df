"""Geo patterns: location habits from location-tagged transcript rows → `place` facts.

Rows from sources whose profile has `geo` on are grouped into ~100 m cells; each cell's visit
count, local days and parts of day, and what the person wrote there go to a background turn on
the muted `job:geo` channel, which names the habits. Input watermark: the newest such row."""

from __future__ import annotations

from collections import Counter, defaultdict

from cognition.jobs.common import add_fact, newest_row, part_of_day, source_in
from cognition.prompts import geo as prompts
from cognition.prompts import read_json
from cognition.registry import BaseJob, JobContext, JobOutcome
from cognition.reminders import local
from memory.transcript import row_from_db

SOURCE = "job:geo"
HISTORY = 500  # the newest location rows looked at (habits need more than the new ones)


def _where() -> tuple[str, list[str]]:
    """Located rows from sources whose profile has `geo` on."""
    where, params = source_in("geo")
    return f"lat IS NOT NULL AND lon IS NOT NULL AND {where}", params


class GeoPatternsJob(BaseJob):
    name = "geo"
    description = "location habits from location-tagged messages → place facts"

    async def inputs(self, ctx: JobContext) -> str | None:
        return await newest_row(ctx, *_where())

    async def run(self, ctx: JobContext) -> JobOutcome:
        s = ctx.services
        where, params = _where()
        rows = [row_from_db(r) for r in await s.db.fetchall(
            f"SELECT * FROM transcript WHERE owner_id = ? AND {where} ORDER BY id DESC LIMIT ?",
            (ctx.person.id, *params, HISTORY),
        )][::-1]
        tz = ctx.person.timezone
        cells: dict[tuple[float, float], list] = defaultdict(list)
        for r in rows:
            assert r.lat is not None and r.lon is not None
            cells[(round(r.lat, 3), round(r.lon, 3))].append(r)
        repeated = {k: v for k, v in cells.items() if len(v) >= 2}
        if not repeated:
            return JobOutcome(f"{len(rows)} located messages; no place visited twice yet")
        blocks = []
        for (lat, lon), visits in sorted(repeated.items(), key=lambda kv: -len(kv[1])):
            times = Counter(f"{local(v.ts, tz):%A} {part_of_day(v.ts, tz)}" for v in visits)
            said = [f"> {v.content[:160]}" for v in visits[-3:] if v.content.strip()]
            blocks.append(f"Place {lat:.3f}, {lon:.3f}: {len(visits)} visits; "
                          + ", ".join(f"{t} ×{n}" for t, n in times.most_common(4))
                          + ("\nThey wrote there:\n" + "\n".join(said) if said else ""))
        reply = await ctx.turn(SOURCE, "\n\n".join(blocks), instructions=prompts.INSTRUCTIONS)
        found = read_json(reply, prompts.Places).places
        stored = 0
        for p in found:
            cell = (round(p.lat, 3), round(p.lon, 3))
            cited = [v.id for v in repeated.get(cell, [])]
            if await add_fact(ctx, "place", f"{p.habit.strip()} (near {p.lat:.3f}, {p.lon:.3f})",
                              "user", row_ids=cited):
                stored += 1
        return JobOutcome(f"{len(repeated)} places visited repeatedly; {stored} new place facts")
