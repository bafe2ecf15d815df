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
from bot.ports import Clock
from bot.turns import ToolRegistry, TurnProcessor
from memory.db import Database
from memory.episode_cut import CutSettings, EpisodeCutter
from memory.episodes import EpisodeRepo
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
        # Memory: turn-zero recall on the hot path; row vectors and episode cutting after it.
        recall = Recall(db, embedder, clock, recall_tuning(settings))
        row_indexer = RowIndexer(db, embedder)
        cutter = EpisodeCutter(db, embedder, clock, chat, cut_settings(settings))
        processor.recaller = recall
        processor.after_turn += [row_indexer, cutter]
        return cls(
            settings, db, clock, chat, embedder, persons, channels, transcript, processor,
            commands, episodes=EpisodeRepo(db), recall=recall, cutter=cutter,
            row_indexer=row_indexer,
        )

    async def close(self) -> None:
        await self.processor.drain()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()
