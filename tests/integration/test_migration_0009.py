"""Migration 0009 (small vec0 chunks): a database made by the previous schema, with vectors in
all three vec0 tables, keeps every vector under its rowid and owner, and the triggers that make
vectors follow their rows, episodes and facts still work afterwards."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from strata.core.clock import ManualClock
from strata.memory.engines.db import Database
from strata.memory.engines.migrations import available
from strata.memory.rules.fact_types import NewFact
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.facts import FactRepo
from tests.memory_helpers import channel, person, row_indexer, turn

pytestmark = pytest.mark.sqlite_only(
    "upgrades a SQLite file made by an older SQLite schema; PostgreSQL's schema starts"
    " at its own migration 0001")

DIM = 16
# The newest migration before 0009.
PREVIOUS = max(n for n, _, _ in available() if n < 9)


class HashEmbedder:
    """Deterministic unit vectors from a text's hash (the `strata.core.ports.Embedder` shape)."""

    dim = DIM

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([vector(t) for t in texts])


def vector(text: str) -> npt.NDArray[np.float32]:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def vectors(db: Database, table: str, key: str) -> dict[int, tuple[int, bytes]]:
    rows = await db.fetchall(f"SELECT {key}, owner_id, embedding FROM {table}")
    return {int(r[0]): (int(r[1]), bytes(r[2])) for r in rows}


async def test_upgrade_keeps_vectors_and_shrinks_chunks(tmp_path: Path,
                                                        clock: ManualClock) -> None:
    path = tmp_path / "old.db"
    old = await Database.open(path, DIM, upto=PREVIOUS)
    assert await old.fetchval("SELECT max(id) FROM migrations") == PREVIOUS
    assert "chunk_size" not in await old.fetchval(
        "SELECT sql FROM sqlite_master WHERE name = 'transcript_vec'")
    people = [await person(old, name, clock) for name in ("ann", "bob", "cy")]
    indexer = row_indexer(old, HashEmbedder())
    episodes, facts = EpisodeRepo(old), FactRepo(old)
    for n, who in enumerate(people):
        ch = await channel(old, who, f"{who.name}/dm", clock)
        row_ids: list[int] = []
        for i in range(11 * (n + 1)):  # more than one 8-vector chunk for two of them
            row_ids += await turn(old, ch, who, f"{who.name} says thing {i}", clock, reply="ok")
            clock.advance(minutes=1)
        await indexer.index_channel(ch.id)
        summary = f"{who.name} talked about things"
        await episodes.insert(NewEpisode(who.id, ch.id, summary, "user", clock.now(),
                                         clock.now(), tuple(row_ids[:4])), vector(summary),
                              clock.now())
        text = f"{who.name} likes tea"
        await facts.add(NewFact(who.id, "user_specific", text, "user"), vector(text), clock.now())
    before = {t: await vectors(old, t, k) for t, k in
              (("transcript_vec", "row_id"), ("episode_vec", "episode_id"),
               ("fact_vec", "fact_id"))}
    await old.close()
    assert len(before["transcript_vec"]) == 2 * 11 * (1 + 2 + 3)

    db = await Database.open(path, DIM)
    try:
        for table, key in (("transcript_vec", "row_id"), ("episode_vec", "episode_id"),
                           ("fact_vec", "fact_id")):
            assert await vectors(db, table, key) == before[table], table
            assert "chunk_size = 8" in await db.fetchval(
                "SELECT sql FROM sqlite_master WHERE name = ?", (table,))
            assert await db.fetchval(f"SELECT max(size) FROM {table}_chunks") == 8
        assert not await db.fetchall(
            "SELECT name FROM sqlite_master WHERE name LIKE '%_0009'")
        # kNN stays inside the owner's partition and finds the row by its own vector.
        bob = people[1]
        probe = await db.fetchone(
            "SELECT t.id, t.content FROM transcript t WHERE t.owner_id = ? AND t.role = 'user'"
            " ORDER BY t.id DESC LIMIT 1", (bob.id,))
        hits = await db.fetchall(
            "SELECT row_id FROM transcript_vec WHERE embedding MATCH ? AND k = ?"
            " AND owner_id = ?", (vector(probe["content"]).tobytes(), 5, bob.id))
        assert hits[0]["row_id"] == probe["id"]
        owners = await db.fetchall("SELECT DISTINCT owner_id FROM transcript WHERE id IN"
                                   f" ({','.join(str(h['row_id']) for h in hits)})")
        assert [r[0] for r in owners] == [bob.id]
        # The triggers of 0003/0005 still reach the recreated tables.
        async with db.write() as conn:
            await conn.execute("DELETE FROM transcript WHERE id = ?", (probe["id"],))
            await conn.execute("DELETE FROM episodes WHERE owner_id = ?", (bob.id,))
            await conn.execute("DELETE FROM facts WHERE owner_id = ?", (bob.id,))
        assert await db.fetchval("SELECT count(*) FROM transcript_vec WHERE row_id = ?",
                                 (probe["id"],)) == 0
        assert await db.fetchval("SELECT count(*) FROM episode_vec WHERE owner_id = ?",
                                 (bob.id,)) == 0
        assert await db.fetchval("SELECT count(*) FROM fact_vec WHERE owner_id = ?",
                                 (bob.id,)) == 0
    finally:
        await db.close()
