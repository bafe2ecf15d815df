"""The composition root: builds the database, model clients, repositories and the turn
processor from `Settings`, and owns their lifetimes. The only module (with `bot.cli`) that may
import `adapters` and `cognition`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from bot.clock import SystemClock
from bot.commands import CommandRouter
from bot.config import Settings
from bot.llm import OpenAIChatModel, OpenAIEmbedder
from bot.memory_commands import MemoryCommands
from bot.memory_tools import MemoryTools
from bot.ports import Clock
from bot.turns import ToolRegistry, TurnProcessor
from bot.types import Channel, Person
from memory.db import Database
from memory.fact_extraction import FactExtractor, model_completer
from memory.fact_recall import Blend, FactRecaller, FactSource
from memory.facts import FactRepo, FactStore
from memory.forget import Forgetter
from memory.persons import ChannelRepo, PersonRepo
from memory.transcript import TranscriptRepo

log = logging.getLogger(__name__)


def make_chat_model(settings: Settings) -> OpenAIChatModel:
    s = settings.llm
    return OpenAIChatModel(
        base_url=s.base_url,
        model=s.model,
        api_key=s.api_key,
        timeout=s.timeout,
        max_retries=s.max_retries,
        backoff=s.retry_backoff,
        max_tokens=s.max_tokens,
    )


def make_embedder(settings: Settings) -> OpenAIEmbedder:
    s = settings.embed
    return OpenAIEmbedder(
        base_url=s.base_url,
        model=s.model,
        dim=s.dim,
        api_key=s.api_key,
        timeout=s.timeout,
        max_retries=s.max_retries,
        backoff=settings.llm.retry_backoff,
        batch_size=s.batch_size,
    )


async def open_db(settings: Settings) -> Database:
    return await Database.open(Path(settings.db.path).expanduser(), settings.embed.dim)


@dataclass
class ExtractAfterTurn:
    """After-turn hook: read the owner's new episodes into facts (`facts.extract_after_turn`)."""

    extractor: FactExtractor
    chat: OpenAIChatModel
    clock: Clock
    max_episodes: int

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        if channel.owner_id != person.id or await self.extractor.watermark(person.id) is None:
            return
        await self.extractor.run(
            person.id, model_completer(self.chat), self.clock.now(),
            max_episodes=self.max_episodes,
        )


@dataclass
class App:
    settings: Settings
    db: Database
    clock: Clock
    chat: OpenAIChatModel
    embedder: OpenAIEmbedder
    persons: PersonRepo
    channels: ChannelRepo
    transcript: TranscriptRepo
    processor: TurnProcessor
    facts: FactStore
    extractor: FactExtractor
    forgetter: Forgetter
    commands: CommandRouter = field(default_factory=CommandRouter)

    @classmethod
    async def create(cls, settings: Settings, clock: Clock | None = None) -> App:
        clock = clock or SystemClock()
        db = await open_db(settings)
        chat = make_chat_model(settings)
        embedder = make_embedder(settings)
        persons, channels, transcript = PersonRepo(db), ChannelRepo(db), TranscriptRepo(db)
        commands = CommandRouter()
        facts = FactStore(FactRepo(db), embedder)
        r = settings.recall
        blend = Blend(r.w_relevance, r.w_recency, r.w_salience, r.min_relevance,
                      r.relative_floor, r.budget_tokens)
        processor = TurnProcessor(
            settings=settings,
            persons=persons,
            channels=channels,
            transcript=transcript,
            chat=chat,
            clock=clock,
            commands=commands,
            tools=ToolRegistry(),
            # Facts-only until the full recall (episodes, transcript) merges FactSource in.
            recaller=FactRecaller(FactSource(facts.repo, embedder), clock, blend,
                                  r.candidates),
        )
        forgetter = Forgetter(db, embedder)
        extractor = FactExtractor(db, facts, persons,
                                  min_confidence=settings.facts.min_confidence)
        if settings.facts.tools:
            MemoryTools(facts, transcript, clock).register(processor.tools)
        if settings.facts.extract_after_turn:
            processor.after_turn.append(
                ExtractAfterTurn(extractor, chat, clock, settings.facts.max_episodes)
            )
        MemoryCommands(
            db, persons, channels, forgetter, clock, context=lambda: processor.context
        ).register(commands)
        return cls(
            settings, db, clock, chat, embedder, persons, channels, transcript, processor,
            facts, extractor, forgetter, commands,
        )

    async def close(self) -> None:
        await self.processor.drain()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()
