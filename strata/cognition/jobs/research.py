"""Proactive research, at most once every `research_hours`: search queries from the portrait's
interests, or the person's own facts before there is a portrait (a background turn), the
configured search providers (Wikipedia by default, SearXNG, feeds), then a second
turn that keeps what genuinely interests the person. Only results not already known (by URL)
are shown to the model, and only results from the list can be kept (grounded): each becomes a
`discovery` fact with its source URL. Nothing is sent to chat."""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

from strata.bot.background import BACKGROUND_PLATFORM
from strata.cognition.connectors import ConnectorError, every_source_failed
from strata.cognition.jobs.common import (
    FactPorts,
    TranscriptPorts,
    add_grounded,
    live_facts,
)
from strata.cognition.prompts import read_json
from strata.cognition.prompts import research as prompts
from strata.cognition.registry import BaseJob, JobContext, JobOutcome
from strata.cognition.research import Finding, SearchProvider
from strata.core.config import Settings
from strata.memory.checks import grounding
from strata.memory.store.persons import ChannelRepo
from strata.memory.store.portraits import PortraitRepo


class ResearchPorts(FactPorts, TranscriptPorts, Protocol):
    """What the research job uses."""

    @property
    def settings(self) -> Settings: ...

    @property
    def search(self) -> SearchProvider | None: ...

    @property
    def portraits(self) -> PortraitRepo: ...

    @property
    def channels(self) -> ChannelRepo: ...


# Its turns are muted; its discoveries may feed facts (strata/memory/rules/profiles.py).
SOURCE = "research"


class ResearchJob(BaseJob):
    name = "research"
    description = "grounded search over the portrait's interests → discovery facts"

    def min_interval(self, ctx: JobContext[ResearchPorts]) -> timedelta | None:
        return timedelta(hours=ctx.services.settings.cognition.research_hours)

    async def inputs(self, ctx: JobContext[ResearchPorts]) -> str | None:
        s = ctx.services
        if s.search is None or not ctx.person.research:
            return None  # no source, or the person said /research off
        interests = await self._interests(ctx)
        if interests is None:
            return None
        # Results change with time even for the same interests: one input per period.
        period = s.settings.cognition.research_hours * 3600
        return f"{interests[0]}:t{int(ctx.now.timestamp() // period)}"

    async def _interests(self, ctx: JobContext[ResearchPorts]) -> tuple[str, str] | None:
        """(a watermark, the text) of what research searches for: the portrait, or before
        synthesis has written one, what the person said of themselves (their facts), so a
        fresh install researches too."""
        portrait = await ctx.services.portraits.latest(ctx.person.id)
        if portrait is not None:
            return f"p{portrait.id}", portrait.text
        own = await live_facts(ctx, ["user_specific", "behavioral_pattern"])
        if not own:
            return None
        return f"f{max(f.id for f in own)}", "\n".join(f"- {f.text}" for f in own[-20:])

    async def run(self, ctx: JobContext[ResearchPorts]) -> JobOutcome:
        s = ctx.services
        assert s.search is not None
        interests = await self._interests(ctx)
        assert interests is not None
        portrait = interests[1]
        reply = await ctx.turn(SOURCE, "Portrait:\n" + portrait,
                               instructions=prompts.QUERY_INSTRUCTIONS, step="queries",
                               schema=prompts.Queries)
        queries = [q.strip() for q in read_json(reply, prompts.Queries).queries if q.strip()][:3]
        known = {f.url for f in await live_facts(ctx, ["discovery"]) if f.url}
        shown = await self._shown_before(ctx)
        fresh: list[Finding] = []
        failed: list[ConnectorError] = []
        for query in queries:
            try:
                found = await s.search.search(query, s.settings.cognition.research_max_results)
            except ConnectorError as exc:
                failed.append(exc)  # logged by the provider; another query may still work
                continue
            for f in found:
                if f.url not in known and f"— {f.url}\n" not in shown:
                    known.add(f.url)
                    fresh.append(f)
        if queries and len(failed) == len(queries):
            # Nothing was searched: a failure (retried with backoff), not "nothing new".
            raise every_source_failed(failed)
        partly = f" ({len(failed)} of them failed)" if failed else ""
        if not fresh:
            return JobOutcome(f"{len(queries)} queries{partly}; nothing new found")
        numbered = [(i + 1, f.title, f.url, f.snippet) for i, f in enumerate(fresh)]
        picked = read_json(
            await ctx.turn(SOURCE, prompts.select_prompt(portrait, numbered),
                           instructions=prompts.SELECT_INSTRUCTIONS, step="select",
                           schema=prompts.Picks),
            prompts.Picks,
        ).findings
        stored = 0
        for pick in picked:
            if not 1 <= pick.n <= len(fresh):
                continue  # not one of the results: ungrounded, dropped
            f = fresh[pick.n - 1]
            refusal = grounding.check_discovery(pick.note, [f.title, f.snippet],
                                                prompt=[prompts.SELECT_INSTRUCTIONS])
            if await add_grounded(ctx, "discovery", f"{f.title}: {pick.note.strip()} ({f.url})",
                                  SOURCE, refusal, url=f.url):
                stored += 1
        return JobOutcome(f"{len(queries)} queries{partly}, {len(fresh)} new results, "
                          f"{stored} discoveries kept")

    async def _shown_before(self, ctx: JobContext[ResearchPorts]) -> str:
        """The text of the recent result lists shown to the model (a result it passed over
        once is not new the next time)."""
        ref = f"{ctx.person.id}/{SOURCE}"
        channel = await ctx.services.channels.by_ref(BACKGROUND_PLATFORM, ref)
        if channel is None:
            return ""
        rows = await ctx.services.transcript.for_channel(channel.id, limit=40, newest=True)
        return "\n".join(r.content for r in rows if r.role.value == "user")
