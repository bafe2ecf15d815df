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
from memory.clustering import ClusterParams
from memory.compaction import CompactionHook, CompactionPolicy
from memory.db import Database
from memory.lifecycle import LifecyclePolicy
from memory.persons import ChannelRepo, PersonRepo
from memory.rollup import RollupPolicy
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


def make_lifecycle_policy(settings: Settings) -> LifecyclePolicy:
    s = settings.lifecycle
    return LifecyclePolicy(
        compaction=CompactionPolicy(
            trigger_tokens=s.compact_tokens,
            keep_tokens=s.compact_keep_tokens,
            input_tokens=s.compact_input_tokens,
        ),
        rollup=RollupPolicy(
            leaf_round_at=s.leaf_round_at,
            era_round_at=s.era_round_at,
            use_model=s.rollup_use_model,
            cluster=ClusterParams(
                min_cluster_size=s.min_cluster_size, random_state=s.random_state
            ),
        ),
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
        if settings.lifecycle.compact_after_turn:
            policy = make_lifecycle_policy(settings).compaction
            processor.after_turn.append(CompactionHook(db, chat, clock, policy))
        return cls(
            settings, db, clock, chat, embedder, persons, channels, transcript, processor, commands
        )

    async def close(self) -> None:
        await self.processor.drain()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()
