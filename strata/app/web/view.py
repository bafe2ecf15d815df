"""What the web view shows, read through the repositories for one person only.

Every read here takes the session's person id and checks ownership itself: an episode, fact or
row of someone else is reported as missing (the server answers 404), exactly as one that does
not exist. Rooms are owned by their room scope, so nothing said in a shared room shows here.
Imports `bot` and `memory` modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strata.app.web.topic_map import LEVEL_NAMES, MapPoint, layout
from strata.core.ports import Clock
from strata.core.types import Channel, ChannelKind, TranscriptRow
from strata.memory.coordination.jobruns import JobRun, JobRunRepo
from strata.memory.rules.decay import episode_weight, fact_weight
from strata.memory.rules.fact_types import FACT_KINDS, Fact
from strata.memory.store.episodes import Episode, EpisodeRepo
from strata.memory.store.facts import FactRepo
from strata.memory.store.persons import ChannelRepo
from strata.memory.store.services.web_access import RecallLogRepo, RecallRecord
from strata.memory.store.transcript import TranscriptRepo

RECENT_ROWS = 40
RECENT_JOBS = 30


@dataclass(frozen=True, slots=True)
class EpisodeView:
    episode: Episode
    level: str
    weight: float  # the decay weight now (strata.memory.rules.decay), not the stored one
    where: str


@dataclass(frozen=True, slots=True)
class FactView:
    fact: Fact
    weight: float
    source: str  # who it came from, in words
    where: str  # which channel, if any


@dataclass(frozen=True, slots=True)
class RecallView:
    record: RecallRecord
    where: str


def source_words(source: str) -> str:
    """Provenance in words (strata/memory/rules/profiles.py names the sources that feed facts): the
    person, research, a connector, an outside agent or the bot's own reflection."""
    kind, _, name = source.partition(":")
    words = {"user": "your conversation", "dmn": "the bot's own reflection",
             "research": "research", "connector": f"connector {name}",
             "external-agent": f"agent {name}"}
    return words.get(kind, source)


@dataclass
class MemoryView:
    clock: Clock
    channels: ChannelRepo
    transcript: TranscriptRepo
    episodes: EpisodeRepo
    facts: FactRepo
    runs: JobRunRepo
    recall_log: RecallLogRepo

    async def _where(self, channel_id: int | None, cache: dict[int, Channel | None]) -> str:
        if channel_id is None:
            return ""
        if channel_id not in cache:
            cache[channel_id] = await self.channels.get(channel_id)
        channel = cache[channel_id]
        return f"{channel.platform} {channel.kind.value}" if channel else ""

    def _episode_view(self, e: Episode, where: str, now: datetime) -> EpisodeView:
        return EpisodeView(e, LEVEL_NAMES.get(e.level, str(e.level)),
                           episode_weight(e.level, e.last_relevant_at, now, not e.live), where)

    async def episode_list(self, person_id: int) -> list[EpisodeView]:
        cache: dict[int, Channel | None] = {}
        now = self.clock.now()
        found = await self.episodes.for_owner(person_id)
        return [self._episode_view(e, await self._where(e.channel_id, cache), now)
                for e in reversed(found)]

    async def episode(self, person_id: int, episode_id: int
                      ) -> tuple[EpisodeView, list[TranscriptRow], list[EpisodeView]] | None:
        """An episode of the person's, the rows it cites and the episodes it gathered."""
        e = await self.episodes.get(episode_id)
        if e is None or e.owner_id != person_id:
            return None
        cache: dict[int, Channel | None] = {}
        now = self.clock.now()
        rows = [r for r in [await self.transcript.get(i)
                            for i in await self.episodes.cited_rows(e.id)]
                if r is not None and r.owner_id == person_id]
        children = [self._episode_view(c, await self._where(c.channel_id, cache), now)
                    for c in await self.episodes.for_owner(person_id, live_only=False)
                    if c.parent_id == e.id]
        return self._episode_view(e, await self._where(e.channel_id, cache), now), rows, children

    async def topic_map(self, person_id: int) -> list[MapPoint]:
        live = await self.episodes.for_owner(person_id)
        vectors = await self.episodes.embeddings([e.id for e in live])
        return layout([e.id for e in live], [e.level for e in live],
                      [e.salience for e in live],
                      [f"{LEVEL_NAMES.get(e.level, '')}: {e.summary[:160]}" for e in live],
                      vectors)

    async def fact_groups(self, person_id: int, *, superseded: bool
                          ) -> list[tuple[str, list[FactView]]]:
        cache: dict[int, Channel | None] = {}
        now = self.clock.now()
        facts = await self.facts.for_owner(person_id, live_only=not superseded)
        groups = []
        for kind in FACT_KINDS:
            views = [FactView(f, fact_weight(f.kind, f.last_relevant_at, now, f.live),
                              source_words(f.source), await self._where(f.channel_id, cache))
                     for f in facts if f.kind == kind]
            if views:
                groups.append((kind, views))
        return groups

    async def fact(self, person_id: int, fact_id: int
                   ) -> tuple[FactView, list[int], list[TranscriptRow]] | None:
        """A fact of the person's, the episodes it came from and the rows it cites."""
        f = await self.facts.get(fact_id)
        if f is None or f.owner_id != person_id:
            return None
        sources = await self.facts.sources(f.id)
        rows = [r for r in [await self.transcript.get(i) for i in sources.row_ids]
                if r is not None and r.owner_id == person_id]
        view = FactView(f, fact_weight(f.kind, f.last_relevant_at, self.clock.now(), f.live),
                        source_words(f.source), await self._where(f.channel_id, {}))
        return view, list(sources.episode_ids), rows

    async def recent_rows(self, person_id: int) -> list[tuple[str, TranscriptRow]]:
        """The newest messages of the person's private chats, oldest first (the background
        channels hold the jobs' own prompts, not a conversation)."""
        out: list[tuple[str, TranscriptRow]] = []
        for channel in await self.channels.for_owner(person_id):
            if channel.kind is not ChannelKind.PRIVATE:
                continue
            where = f"{channel.platform} {channel.kind.value}"
            rows = await self.transcript.for_channel(channel.id, limit=RECENT_ROWS, newest=True)
            out += [(where, r) for r in rows if r.owner_id == person_id]
        out.sort(key=lambda pair: (pair[1].ts, pair[1].id))
        return out[-RECENT_ROWS:]

    async def recalls(self, person_id: int) -> list[RecallView]:
        cache: dict[int, Channel | None] = {}
        return [RecallView(r, await self._where(r.channel_id, cache))
                for r in await self.recall_log.recent(person_id)]

    async def jobs(self, person_id: int) -> list[JobRun]:
        return await self.runs.runs(person_id=person_id, limit=RECENT_JOBS)
