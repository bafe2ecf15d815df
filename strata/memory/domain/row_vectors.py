"""Vectors for live transcript message rows, so recall's kNN also covers the raw rows.

After each turn (an `AfterTurn` hook, off the hot path) the channel's new user and assistant
message rows are embedded in batches and stored in the owner-partitioned `transcript_vec`; a
per-channel cursor (`transcript_vec_cursors`) remembers how far that got. Tool rows,
compactions, muted sources (profile without `episodes`) and anything a paused person said are
passed over: they are never recall candidates. Vectors leave with their rows (a trigger).
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from strata.core.ports import Embedder
from strata.core.tokens import truncate_to_tokens
from strata.core.types import Channel, Person, Role, RowKind, TranscriptRow
from strata.memory.coordination.cursors import move_cursor, pending_channels, read_cursor
from strata.memory.domain.episodes import as_blob
from strata.memory.domain.persons import PersonRepo
from strata.memory.domain.profiles import profile_for
from strata.memory.domain.transcript import TranscriptRepo
from strata.memory.engines.db import Database

log = logging.getLogger(__name__)

PAGE_ROWS = 256
# Embedding models read a few hundred tokens at most; the rest of a long row adds nothing.
EMBED_TOKENS = 512


def recallable(row: TranscriptRow) -> bool:
    """Whether a row may ever be a recall candidate (ignoring the person's pause flag)."""
    return (
        row.kind is RowKind.MESSAGE
        and row.role in (Role.USER, Role.ASSISTANT)
        and bool(row.content.strip())
        and profile_for(row.source).episodes
    )


@dataclass
class RowIndexer:
    db: Database
    embedder: Embedder
    transcript: TranscriptRepo = field(kw_only=True)
    persons: PersonRepo = field(kw_only=True)
    _locks: dict[int, asyncio.Lock] = field(default_factory=dict, init=False)
    # Channels with a call waiting for the channel's lock: it will read every row stored
    # before it starts, so a further turn's call has nothing to add and returns at once.
    _waiting: set[int] = field(default_factory=set, init=False)

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        """The after-turn hook: index the channel's new rows. Turns that end while the channel
        is being indexed share one further pass (one embedding batch, one transaction)."""
        if channel.id in self._waiting:
            return
        self._waiting.add(channel.id)
        await self.index_channel(channel.id, waiting=True)

    async def index_all(self) -> int:
        """Embed pending rows of every channel; return how many rows got a vector."""
        return sum([await self.index_channel(c)
                    for c in await pending_channels(self.db, "transcript_vec_cursors")])

    async def index_channel(self, channel_id: int, *, waiting: bool = False) -> int:
        """Embed the channel's rows after its cursor; return how many got a vector
        (`waiting`: the caller registered in `_waiting`)."""
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        try:
            await lock.acquire()
        finally:
            if waiting:  # from here on, rows stored later are not read: a new call must run
                self._waiting.discard(channel_id)
        try:
            return await self._index_locked(channel_id)
        finally:
            lock.release()

    async def _index_locked(self, channel_id: int) -> int:
        done = 0
        while True:
            cursor = await read_cursor(self.db, "transcript_vec_cursors", channel_id)
            page = await self.transcript.for_channel(
                channel_id, after_id=cursor, limit=PAGE_ROWS
            )
            if not page:
                return done
            # A paused speaker, or a paused owner (their private channel), is not indexed.
            paused = await self.persons.paused_among(
                [r.person_id for r in page] + [page[0].owner_id]
            )
            todo = [] if page[0].owner_id in paused else [
                r for r in page if recallable(r) and r.person_id not in paused
            ]
            vectors = (
                await self.embedder.embed(
                    [truncate_to_tokens(r.content, EMBED_TOKENS) for r in todo]
                )
                if todo
                else None
            )
            async with self.db.write() as conn:
                if not await move_cursor(
                    conn, "transcript_vec_cursors", channel_id, cursor, page[-1].id
                ):
                    log.info("channel %d: row vectors indexed elsewhere", channel_id)
                    return done
                if vectors is not None:
                    # A row without a usable vector stays, found by keywords only.
                    await conn.executemany(
                        "INSERT INTO transcript_vec (row_id, owner_id, embedding)"
                        " VALUES (?, ?, ?)",
                        [(r.id, r.owner_id, as_blob(v))
                         for r, v in zip(todo, vectors, strict=True) if v is not None],
                    )
            done += len(todo)
            if len(page) < PAGE_ROWS:
                return done
