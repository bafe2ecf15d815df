"""Helpers for memory tests: people, channels and transcript rows in a real database."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from strata.bot.llm import OpenAIEmbedder
from strata.bot.writers.episodes import EpisodeCutter
from strata.core.clock import ManualClock
from strata.core.ports import ChatModel, Clock, Embedder
from strata.core.types import Channel, ChannelKind, NewRow, Person, Role, RowKind
from strata.memory.engines.db import Database, Reads
from strata.memory.engines.migrations import available
from strata.memory.lifecycle.episode_cut import CutSettings, EpisodeWindows
from strata.memory.store.episode_cuts import EpisodeCuts
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.recall_reads import RecallReads
from strata.memory.store.row_vectors import RowIndexer
from strata.memory.store.transcript import TranscriptRepo
from tests.fakes.openai_server import FakeOpenAI


def embedder_for(server: FakeOpenAI) -> OpenAIEmbedder:
    return OpenAIEmbedder(base_url=server.base_url, model=server.embed_model, dim=server.dim,
                          api_key="test", max_retries=0)


async def person(db: Database, name: str, clock: ManualClock) -> Person:
    return await PersonRepo(db).get_or_create(f"console:{name}", name, clock.now())


async def channel(db: Database, owner: Person, room: str, clock: ManualClock, *,
                  kind: ChannelKind = ChannelKind.PRIVATE, source: str = "user",
                  platform: str = "console") -> Channel:
    return await ChannelRepo(db).get_or_create(
        platform=platform, room_ref=room, owner_id=owner.id, kind=kind, source=source,
        now=clock.now(), name=room)


async def turn(db: Database, ch: Channel, speaker: Person | None, text: str, clock: ManualClock,
               reply: str | None = None, *, kind: RowKind = RowKind.MESSAGE) -> list[int]:
    """Append one turn (a user row and optionally the assistant's reply); return row ids."""
    turn_id = uuid.uuid4().hex
    rows = [NewRow(ch.id, speaker.id if speaker else None, clock.now(), ch.source, Role.USER,
                   text, turn_id, kind=kind)]
    if reply is not None:
        rows.append(NewRow(ch.id, None, clock.now(), ch.source, Role.ASSISTANT, reply, turn_id))
    return await TranscriptRepo(db).append(rows)


async def turns(db: Database, ch: Channel, speaker: Person, texts: Sequence[str],
                clock: ManualClock, minutes: float = 1.0) -> list[int]:
    ids: list[int] = []
    for text in texts:
        ids += await turn(db, ch, speaker, text, clock, reply="I see.")
        clock.advance(minutes=minutes)
    return ids


_FILLER = (
    "river cloud table window garden pencil orange rocket quiet yellow bread lamp carpet "
    "bottle shelf coffee morning tram ticket bicycle umbrella jacket notebook candle pepper "
    "tomato mirror ladder blanket kettle"
)
FILLER_WORDS = _FILLER.split()


def filler(i: int, words: int = 7) -> str:
    """A deterministic sentence of distinct everyday words (no repeats, no topic)."""
    n = len(FILLER_WORDS)
    return " ".join(FILLER_WORDS[(i * 7 + j * 3) % n] for j in range(words))


def row_indexer(db: Database, embedder: Embedder) -> RowIndexer:
    """A row indexer over `db` with its repositories (as the composition root wires it)."""
    return RowIndexer(db, embedder, transcript=TranscriptRepo(db), persons=PersonRepo(db))


def recall_reads(db: Database, reads: Reads | None = None) -> RecallReads:
    """Recall's reads over `db` with its repositories (as the composition root wires them)."""
    return RecallReads(db, reads, episodes=EpisodeRepo(db), transcript=TranscriptRepo(db))


def episode_cutter(db: Database, embedder: Embedder, clock: Clock, chat: ChatModel | None,
                   settings: CutSettings) -> EpisodeCutter:
    """An episode cutter over `db` with its repositories (as the composition root wires it)."""
    return EpisodeCutter(EpisodeWindows(EpisodeCuts(db), embedder, settings, TranscriptRepo(db),
                                        PersonRepo(db)), clock, chat)


MIGRATION_PACKAGES = {"sqlite": "strata.memory.engines.migrations",
                      "postgres": "strata.memory.engines.pg.migrations"}


def before_migration(engine: str, number: int) -> int:
    """The engine's last migration before its migration `number`: how far an upgrade test
    migrates the database it fills with the older schema's rows."""
    return max(n for n, _, _ in available(MIGRATION_PACKAGES[engine]) if n < number)
