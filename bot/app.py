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
from bot.ports import Adapter, Clock
from bot.turns import ToolRegistry, TurnProcessor
from memory.db import Database
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
        LinkCommand(db, persons, clock).register(commands)
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
        return cls(
            settings, db, clock, chat, embedder, persons, channels, transcript, processor, commands
        )

    async def close(self) -> None:
        await self.processor.drain()
        await self.chat.close()
        await self.embedder.close()
        await self.db.close()
