"""Vectors for live transcript message rows, so recall's kNN also covers the raw rows.

After each turn (an `AfterTurn` hook, off the hot path) the channel's new user and assistant
message rows are embedded in batches and stored in the owner-partitioned `transcript_vec`; a
per-channel cursor (`transcript_vec_cursors`) remembers how far that got. Tool rows,
compactions, muted sources (profile without `episodes`) and anything a paused person said are
passed over: they are never recall candidates. Vectors leave with their rows (a trigger).

One pass at a time per process, over every channel that asked: the turns that end while a
pass runs share the next one (one read, one embedding batch and one write transaction for
the rows of many turns and channels), so indexing costs the database a few statements per
batch, not per turn. A row is stored before its vector is made; a crash between the two
leaves the cursor behind it, and the channel's next pass (or `index_all`) picks it up.
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from strata.core.ports import Embedder, Vector
from strata.core.tokens import truncate_to_tokens
from strata.core.types import Channel, Person, Role, RowKind, TranscriptRow
from strata.memory.coordination.cursors import move_cursors, pending_channels, read_cursors
from strata.memory.engines.db import Database
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episodes import as_blob
from strata.memory.store.persons import PersonRepo
from strata.memory.store.transcript import TranscriptRepo

log = logging.getLogger(__name__)

PAGE_ROWS = 256
CHANNELS_PER_PASS = 200  # channels read at a time (each is two parameters of one statement)
# How long a pass started by a hook waits for further turns to join it before reading: rows
# are indexed this much later (nobody waits for them: the next message of a chat comes seconds
# later), and a busy process writes the vectors of many turns in one transaction.
BATCH_SECONDS = 0.01
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
    batch_seconds: float = field(default=BATCH_SECONDS, kw_only=True)
    # One pass at a time; the channels the next pass will read, and that pass's task while it
    # waits for the lock (hooks that come meanwhile join it).
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    _due: set[int] = field(default_factory=set, init=False)
    _next: asyncio.Task[int] | None = field(default=None, init=False)

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        """The after-turn hook: returns once the channel's rows stored before the call have
        their vectors (or the pass that read them failed: its error is raised here)."""
        self._due.add(channel.id)
        if self._next is None:
            self._next = asyncio.create_task(self._pass())
            self._next.add_done_callback(_seen)
        # A hook cancelled at shutdown must not cancel the pass other hooks wait on.
        await asyncio.shield(self._next)

    async def _pass(self) -> int:
        await asyncio.sleep(self.batch_seconds)
        async with self._lock:
            # From here on, a hook's channel goes into the next pass: this one reads rows
            # only after taking the set, so it sees every row stored before those hooks ran.
            self._next = None
            channels, self._due = sorted(self._due), set()
            return sum([await self._index(channels[start:start + CHANNELS_PER_PASS])
                        for start in range(0, len(channels), CHANNELS_PER_PASS)])

    async def index_all(self) -> int:
        """Embed pending rows of every channel; return how many rows got a vector."""
        channels = await pending_channels(self.db, "transcript_vec_cursors")
        done = 0
        for start in range(0, len(channels), CHANNELS_PER_PASS):  # bounded statements
            async with self._lock:
                done += await self._index(channels[start:start + CHANNELS_PER_PASS])
        return done

    async def index_channel(self, channel_id: int) -> int:
        """Embed the channel's rows after its cursor; return how many got a vector."""
        async with self._lock:
            return await self._index([channel_id])

    async def _index(self, channels: list[int]) -> int:
        """Index `channels` page by page; return how many rows got a vector."""
        done = 0
        while channels:
            cursors = await read_cursors(self.db, "transcript_vec_cursors", channels)
            page = await self.transcript.after_cursors(cursors, PAGE_ROWS)
            if not page:
                return done
            todo, vectors = await self._embed(page)
            moves = {r.channel_id: (cursors[r.channel_id], r.id) for r in page}
            # Not durable: a crash that loses the vectors loses the cursor's move with them.
            async with self.db.write(durable=False) as conn:
                moved = await move_cursors(conn, "transcript_vec_cursors", moves)
                stored = [(r.id, r.owner_id, as_blob(v)) for r, v in zip(todo, vectors, strict=True)
                          if v is not None and r.channel_id in moved]
                if stored:  # a row without a usable vector stays, found by keywords only
                    await conn.executemany(
                        "INSERT INTO transcript_vec (row_id, owner_id, embedding)"
                        " VALUES (?, ?, ?)", stored)
            for lost in sorted(moves.keys() - moved):
                log.info("channel %d: row vectors indexed elsewhere", lost)
            done += sum(1 for r in todo if r.channel_id in moved)
            if len(page) < PAGE_ROWS:
                return done
            # Channels with no row in a full page may still have rows after it.
            channels = [c for c in channels if c not in moves.keys() - moved]
        return done

    async def _embed(self, page: list[TranscriptRow]
                     ) -> tuple[list[TranscriptRow], list[Vector | None]]:
        """The page's rows that get a vector, and their vectors (one embedding batch)."""
        # A paused speaker, or a paused owner (their private channel), is not indexed.
        paused = await self.persons.paused_among(
            [r.person_id for r in page] + [r.owner_id for r in page])
        todo = [r for r in page
                if recallable(r) and r.person_id not in paused and r.owner_id not in paused]
        if not todo:
            return [], []
        vectors = await self.embedder.embed(
            [truncate_to_tokens(r.content, EMBED_TOKENS) for r in todo])
        return todo, list(vectors)


def _seen(task: asyncio.Task[int]) -> None:
    """Mark a pass's error as retrieved: the hooks that waited for it have logged it."""
    if not task.cancelled():
        task.exception()
