"""Helpers for the life-cycle tests: a person with a channel, turns appended to the
transcript, episodes inserted directly with embeddings the test constructs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from strata.core.ports import Embedder
from strata.core.types import Channel, ChannelKind, NewRow, Person, Role, RowKind
from strata.memory.engines.db import Database
from strata.memory.lifecycle.passes import MemoryLifecycle
from strata.memory.store.episodes import LEAF, EpisodeRepo, NewEpisode
from strata.memory.store.lifecycle import LifecycleStore
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import TranscriptRepo


class HasMemory(Protocol):
    """An app (or lane app) with a database and an embedder."""

    @property
    def db(self) -> Database: ...

    @property
    def embedder(self) -> Embedder: ...


def lifecycle(app: HasMemory) -> MemoryLifecycle:
    """The memory life cycle over the app's database (as the composition root builds it;
    the tests pass their own policies)."""
    return MemoryLifecycle(lifecycle_store(app.db), app.embedder)


def lifecycle_store(db: Database) -> LifecycleStore:
    """The life cycle's SQL over `db` with its repositories (as the composition root wires
    them)."""
    return LifecycleStore(db, EpisodeRepo(db), RefusalRepo(db))


@dataclass
class Scope:
    db: Database
    person: Person
    channel: Channel

    @property
    def transcript(self) -> TranscriptRepo:
        return TranscriptRepo(self.db)

    @property
    def episodes(self) -> EpisodeRepo:
        return EpisodeRepo(self.db)


async def make_scope(db: Database, name: str, now: datetime, source: str = "user") -> Scope:
    person = await PersonRepo(db).get_or_create(f"console:{name}", name, now)
    channel = await ChannelRepo(db).get_or_create(
        platform="console", room_ref=f"{name}/default", owner_id=person.id,
        kind=ChannelKind.PRIVATE, source=source, now=now)
    return Scope(db, person, channel)


async def add_turn(scope: Scope, n: int, now: datetime, *, words: int = 40,
                   tool: bool = False) -> list[int]:
    """Append one turn (user message, optional tool call + result, reply); return its row ids."""
    text = " ".join(f"word{n}x{i}" for i in range(words))
    turn = f"turn{n}"
    rows = [NewRow(scope.channel.id, scope.person.id, now, scope.channel.source, Role.USER,
                   f"question {n}: {text}", turn)]
    if tool:
        rows += [
            NewRow(scope.channel.id, None, now, scope.channel.source, Role.ASSISTANT,
                   json.dumps([{"id": "c", "name": "t", "arguments": "{}"}]), turn,
                   kind=RowKind.TOOL_CALL),
            NewRow(scope.channel.id, None, now, scope.channel.source, Role.TOOL,
                   json.dumps({"id": "c", "result": "ok"}), turn, kind=RowKind.TOOL_RESULT),
        ]
    rows.append(NewRow(scope.channel.id, None, now, scope.channel.source, Role.ASSISTANT,
                       f"answer {n}: {text}", turn))
    return await scope.transcript.append(rows)


def blobs(sizes: Sequence[int], dim: int, seed: int,
          spread: float = 0.15) -> npt.NDArray[np.float32]:
    """Groups of points around random centres (well separated in `dim` dimensions)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(sizes), dim))
    parts = [centres[i] + spread * rng.normal(size=(n, dim)) for i, n in enumerate(sizes)]
    x = np.vstack(parts).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


async def add_episode(scope: Scope, vec: npt.NDArray[np.float32], now: datetime, *,
                      level: int = LEAF, summary: str = "an episode",
                      rows: Sequence[int] = (), salience: float = 0.5) -> int:
    return await scope.episodes.insert(
        NewEpisode(scope.person.id, scope.channel.id, summary, scope.channel.source, now, now,
                   tuple(rows), level=level, salience=salience), vec, now)
