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
from bot.link import LinkCommand
from bot.llm import OpenAIChatModel, OpenAIEmbedder
from bot.memory_commands import MemoryCommands
from bot.memory_tools import MemoryTools
from bot.ports import Adapter, AfterTurn, Clock
from bot.turns import ToolRegistry, TurnProcessor
from bot.types import Channel, Person
from memory.db import Database
from memory.episode_cut import CutSettings, EpisodeCutter
from memory.episodes import EpisodeRepo
from memory.fact_extraction import FactExtractor, model_completer
from memory.fact_recall import FactCandidates
from memory.facts import FactRepo, FactStore
from memory.forget import Forgetter
from memory.persons import ChannelRepo, PersonRepo
from memory.recall import Recall, RecallTuning
from memory.row_vectors import RowIndexer
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


def recall_tuning(settings: Settings) -> RecallTuning:
    """Recall's knobs from the `[recall]` section."""
    return RecallTuning(**settings.recall.model_dump(exclude={"enabled"}))


def cut_settings(settings: Settings) -> CutSettings:
    """Episode cutting from the `[episodes]` section."""
    e = settings.episodes
    return CutSettings(
        window_turns=e.window_turns,
        pause_minutes=e.pause_minutes,
        use_model=e.use_model,
        assistant_name=settings.bot.name,
    )


async def open_db(settings: Settings) -> Database:
    return await Database.open(Path(settings.db.path).expanduser(), settings.embed.dim)


def build_matrix_adapter(settings: Settings) -> Adapter | None:
    """The Matrix adapter when `matrix.homeserver`, `matrix.user` and a password or access
    token are configured (STRATA_MATRIX_*), else None."""
    m = settings.matrix
    if not (m.homeserver and m.user and (m.password or m.access_token)):
        return None
    from adapters.matrix.adapter import MatrixAdapter  # nio is an optional extra

    return MatrixAdapter(
        m, access=settings.access, bot_name=settings.bot.name, stream=settings.bot.stream
    )


def build_adapters(settings: Settings) -> list[Adapter]:
    """Every platform adapter whose credentials are configured (for `strata run`)."""
    builders = [build_matrix_adapter]
    return [a for a in (build(settings) for build in builders) if a is not None]


@dataclass
class ExtractAfterTurn:
    """After-turn hook (`facts.extract_after_turn`): run `before` (the episode cutter), then
    read the owner's new episodes into facts, so a cut episode is read in the same turn."""

    before: AfterTurn
    extractor: FactExtractor
    chat: OpenAIChatModel
    clock: Clock
    max_episodes: int

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        await self.before(channel, person, turn_id)
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
    episodes: EpisodeRepo | None = None
    recall: Recall | None = None
    cutter: EpisodeCutter | None = None
    row_indexer: RowIndexer | None = None

    @classmethod
    async def create(cls, settings: Settings, clock: Clock | None = None) -> App:
        clock = clock or SystemClock()
        db = await open_db(settings)
        chat = make_chat_model(settings)
        embedder = make_embedder(settings)
        persons, channels, transcript = PersonRepo(db), ChannelRepo(db), TranscriptRepo(db)
        commands = CommandRouter()
        LinkCommand(db, persons, clock).register(commands)
        facts = FactStore(FactRepo(db), embedder)
        processor = TurnProcessor(
            settings=settings,
            persons=persons,
            channels=channels,
            transcript=transcript,
            chat=chat,
            clock=clock,
            commands=commands,
            tools=ToolRegistry(),
        )
        # Memory: turn-zero recall (episodes, transcript rows and facts) on the hot path; row
        # vectors and episode cutting after it.
        recall = Recall(db, embedder, clock, recall_tuning(settings))
        recall.add_source(FactCandidates(facts.repo, channels))
        row_indexer = RowIndexer(db, embedder)
        cutter = EpisodeCutter(db, embedder, clock, chat, cut_settings(settings))
        forgetter = Forgetter(db, embedder)
        extractor = FactExtractor(db, facts, persons,
                                  min_confidence=settings.facts.min_confidence)
        processor.recaller = recall
        processor.after_turn += [
            row_indexer,
            ExtractAfterTurn(cutter, extractor, chat, clock, settings.facts.max_episodes)
            if settings.facts.extract_after_turn
            else cutter,
        ]
        if settings.facts.tools:
            MemoryTools(facts, transcript, clock).register(processor.tools)
        MemoryCommands(
            db, persons, channels, forgetter, clock, context=lambda: processor.context,
            settle=processor.drain,
        ).register(commands)
        return cls(
            settings, db, clock, chat, embedder, persons, channels, transcript, processor,
            facts, extractor, forgetter, commands, episodes=EpisodeRepo(db), recall=recall,
            cutter=cutter, row_indexer=row_indexer,
        )

    async def close(self) -> None:
        await self.processor.drain()
        if self.recall is not None:
            await self.recall.close()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()
