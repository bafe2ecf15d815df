"""What background cognition works with: the app's services, gathered once by the composition
root (`bot.app`) and passed to the runner, the jobs and the reminder tools.

Defined here, not in `bot.app`, because `bot.app` imports `cognition` (never the other way).
May import `bot` and `memory`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.config import Settings
from bot.outbound import Outbound
from bot.ports import ChatModel, Clock, Embedder
from bot.turns import TurnProcessor
from cognition.connectors import Connector
from cognition.research import SearchProvider
from memory.calendar import CalendarRepo
from memory.db import Database
from memory.episode_cut import EpisodeCutter
from memory.episodes import EpisodeRepo
from memory.fact_extraction import FactExtractor
from memory.facts import FactStore
from memory.jobruns import JobRunRepo
from memory.lifecycle import LifecyclePolicy
from memory.persons import ChannelRepo, PersonRepo
from memory.portraits import PortraitRepo
from memory.reminders import ReminderRepo
from memory.transcript import TranscriptRepo


@dataclass
class Services:
    settings: Settings
    db: Database
    clock: Clock
    chat: ChatModel
    embedder: Embedder
    processor: TurnProcessor
    outbound: Outbound
    persons: PersonRepo
    channels: ChannelRepo
    transcript: TranscriptRepo
    episodes: EpisodeRepo
    runs: JobRunRepo
    reminders: ReminderRepo
    portraits: PortraitRepo
    calendar: CalendarRepo
    facts: FactStore
    extractor: FactExtractor
    lifecycle: LifecyclePolicy = field(default_factory=LifecyclePolicy)
    cutter: EpisodeCutter | None = None
    connectors: list[Connector] = field(default_factory=list)
    search: SearchProvider | None = None

    @classmethod
    def build(
        cls,
        *,
        settings: Settings,
        db: Database,
        clock: Clock,
        chat: ChatModel,
        embedder: Embedder,
        processor: TurnProcessor,
        outbound: Outbound,
        facts: FactStore,
        extractor: FactExtractor,
        lifecycle: LifecyclePolicy,
        episodes: EpisodeRepo,
        runs: JobRunRepo,
        reminders: ReminderRepo,
        portraits: PortraitRepo,
        calendar: CalendarRepo,
        cutter: EpisodeCutter | None = None,
    ) -> Services:
        """The services over one database (the repositories built by the composition root),
        with the connectors and search provider that the configuration asks for."""
        from cognition.connectors import configured_connectors
        from cognition.research import configured_search

        return cls(
            settings=settings,
            db=db,
            clock=clock,
            chat=chat,
            embedder=embedder,
            processor=processor,
            outbound=outbound,
            persons=processor.persons,
            channels=processor.channels,
            transcript=processor.transcript,
            episodes=episodes,
            runs=runs,
            reminders=reminders,
            portraits=portraits,
            calendar=calendar,
            facts=facts,
            extractor=extractor,
            lifecycle=lifecycle,
            cutter=cutter,
            connectors=configured_connectors(settings),
            search=configured_search(settings),
        )
