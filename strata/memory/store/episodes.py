"""The episode store: leaf episodes, topic super-episodes and era digests, with one embedding
each (in the owner-partitioned `vec0`).

Provenance: a leaf cites the transcript rows it came from (`episode_rows`). A topic or era
episode cites no rows: it links to its children (their `parent_id`), counts them
(`child_count`) and records the span and channel it covers (`started_at`, `ended_at`,
`channel_id`), which outlive the children and their pruned rows. `cited_rows_by_episode`
resolves a parent's rows through its children while they are still kept.

Only storage lives here; cutting windows into episodes, recall and roll-up are their own
modules. Imports `bot` leaf modules and `strata.memory.engines.db`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database, Reads, Row, placeholders

LEAF, TOPIC, ERA = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Episode:
    id: int
    owner_id: int
    channel_id: int
    level: int
    parent_id: int | None
    summary: str
    key_terms: str
    salience: float
    emotion: str
    emotion_intensity: float
    source: str
    method: str
    started_at: datetime
    ended_at: datetime
    created_at: datetime
    last_relevant_at: datetime
    weight: float
    tombstoned_at: datetime | None
    child_count: int = 0  # child episodes a topic/era episode gathered (0 for a leaf)

    @property
    def live(self) -> bool:
        return self.tombstoned_at is None


@dataclass(frozen=True, slots=True)
class NewEpisode:
    owner_id: int
    channel_id: int
    summary: str
    source: str
    started_at: datetime
    ended_at: datetime
    row_ids: tuple[int, ...]  # cited transcript rows: leaves only (a parent links children)
    level: int = LEAF
    key_terms: str = ""
    salience: float = 0.5
    emotion: str = "neutral"
    emotion_intensity: float = 0.0
    method: str = "llm"
    child_count: int = 0


def episode_from_db(row: Row) -> Episode:
    return Episode(
        id=row["id"], owner_id=row["owner_id"], channel_id=row["channel_id"],
        level=row["level"], parent_id=row["parent_id"], summary=row["summary"],
        key_terms=row["key_terms"], salience=row["salience"], emotion=row["emotion"],
        emotion_intensity=row["emotion_intensity"], source=row["source"],
        method=row["method"], started_at=from_iso(row["started_at"]),
        ended_at=from_iso(row["ended_at"]), created_at=from_iso(row["created_at"]),
        last_relevant_at=from_iso(row["last_relevant_at"]), weight=row["weight"],
        tombstoned_at=from_iso(row["tombstoned_at"]) if row["tombstoned_at"] else None,
        child_count=row["child_count"],
    )


def as_blob(vec: npt.NDArray[np.floating]) -> bytes:
    """A vector as sqlite-vec wants it: little-endian float32 bytes."""
    return np.asarray(vec, dtype="<f4").tobytes()


def cosines(rows: Iterable[Sequence[Any]]) -> dict[int, float]:
    """(id, cosine distance) rows of a vec0 kNN as {id: cosine similarity}.

    A zero or NaN vector stored before vectors were checked has no distance (NULL or NaN):
    it gets no semantic score rather than breaking the search.
    """
    out: dict[int, float] = {}
    for key, distance in rows:
        if distance is not None and math.isfinite(float(distance)):
            out[int(key)] = 1.0 - float(distance)
    return out


async def insert_episode(conn: Any, new: NewEpisode,
                         embedding: npt.NDArray[np.floating] | None, now: datetime,
                         dim: int) -> int:
    """Insert an episode, its citations and its embedding on `conn`, inside the caller's
    write transaction (so a caller can move a cursor in the same transaction). Without an
    embedding (the model gave no usable one) the episode is found by keywords only."""
    if embedding is not None and embedding.shape != (dim,):
        raise ValueError(f"embedding has shape {embedding.shape}, expected ({dim},)")
    if new.level != LEAF and new.row_ids:
        raise ValueError("only leaf episodes cite transcript rows; a parent links its children")
    cur = await conn.execute(
        "INSERT INTO episodes (owner_id, channel_id, level, summary, key_terms, salience,"
        " emotion, emotion_intensity, source, method, started_at, ended_at, created_at,"
        " last_relevant_at, child_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (new.owner_id, new.channel_id, new.level, new.summary, new.key_terms,
         min(max(new.salience, 0.0), 1.0), new.emotion,
         min(max(new.emotion_intensity, 0.0), 1.0), new.source, new.method,
         to_iso(new.started_at), to_iso(new.ended_at), to_iso(now), to_iso(now),
         new.child_count),
    )
    episode_id = cur.lastrowid
    assert episode_id is not None
    await conn.executemany(
        "INSERT INTO episode_rows (episode_id, row_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(episode_id, r) for r in new.row_ids],
    )
    if embedding is not None:
        await conn.execute(
            "INSERT INTO episode_vec (episode_id, owner_id, embedding) VALUES (?, ?, ?)",
            (episode_id, new.owner_id, as_blob(embedding)),
        )
    return int(episode_id)


async def cited_rows_by_episode(db: Reads, ids: Sequence[int]) -> dict[int, list[int]]:
    """The transcript rows behind each of `ids`: a leaf's own citations, a parent's through
    its descendants' (none once those rows are pruned, which follows the roll-up; the
    parent's span and channel remain its provenance)."""
    if not ids:
        return {}
    marks = placeholders(ids)
    rows = await db.fetchall(
        "WITH RECURSIVE tree (root, id) AS ("
        f" SELECT id, id FROM episodes WHERE id IN ({marks})"
        " UNION SELECT tree.root, e.id FROM episodes e JOIN tree ON e.parent_id = tree.id)"
        " SELECT DISTINCT tree.root, er.row_id FROM tree"
        " JOIN episode_rows er ON er.episode_id = tree.id ORDER BY tree.root, er.row_id",
        list(ids),
    )
    out: dict[int, list[int]] = {}
    for root, row in rows:  # unpacked: a driver's row indexes by key in Python
        out.setdefault(int(root), []).append(int(row))
    return out


@dataclass(frozen=True, slots=True)
class ApexCount:
    """How many live, not yet rolled-up episodes a channel holds at one level."""

    channel_id: int
    level: int
    count: int


class EpisodeRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def insert(self, new: NewEpisode, embedding: npt.NDArray[np.floating],
                     now: datetime) -> int:
        """Store an episode, its citations and its embedding in one transaction."""
        async with self.db.write() as conn:
            return await insert_episode(conn, new, embedding, now, self.db.dim)

    async def get(self, episode_id: int) -> Episode | None:
        row = await self.db.fetchone("SELECT * FROM episodes WHERE id = ?", (episode_id,))
        return episode_from_db(row) if row else None

    async def for_owner(self, owner_id: int, *, live_only: bool = True) -> list[Episode]:
        sql = "SELECT * FROM episodes WHERE owner_id = ?"
        if live_only:
            sql += " AND tombstoned_at IS NULL"
        rows = await self.db.fetchall(sql + " ORDER BY id", (owner_id,))
        return [episode_from_db(r) for r in rows]

    async def count(self, owner_id: int) -> int:
        """An owner's live episodes."""
        return int(await self.db.fetchval(
            "SELECT count(*) FROM episodes WHERE owner_id = ? AND tombstoned_at IS NULL",
            (owner_id,),
        ))

    async def count_by_method(self, owner_id: int) -> dict[str, int]:
        """An owner's live episodes per writing method (`llm`, `extractive`)."""
        rows = await self.db.fetchall(
            "SELECT method, count(*) FROM episodes WHERE owner_id = ?"
            " AND tombstoned_at IS NULL GROUP BY method", (owner_id,))
        return {str(r[0]): int(r[1]) for r in rows}

    async def newest_id(self, owner_id: int, *, except_source: str) -> int | None:
        """An owner's newest live episode not made from `except_source`'s rows."""
        value = await self.db.fetchval(
            "SELECT max(id) FROM episodes WHERE owner_id = ? AND tombstoned_at IS NULL"
            " AND source != ?",
            (owner_id, except_source),
        )
        return None if value is None else int(value)

    async def recent_summaries(self, owner_id: int, *, except_source: str,
                               limit: int) -> list[str]:
        """The summaries of an owner's `limit` latest live episodes not from `except_source`,
        oldest first."""
        rows = await self.db.fetchall(
            "SELECT summary FROM episodes WHERE owner_id = ? AND tombstoned_at IS NULL"
            " AND source != ? ORDER BY ended_at DESC, id DESC LIMIT ?",
            (owner_id, except_source, limit),
        )
        return [str(r["summary"]) for r in rows][::-1]

    async def recent_own_lines(self, owner_id: int, *, except_source: str, episodes: int,
                               limit: int = 200) -> list[str]:
        """The person's own messages cited by their `episodes` latest live episodes not from
        `except_source`, oldest first: what a reflection on those episodes may rest on (a
        summary also tells what the bot said, which is no evidence about the person)."""
        rows = await self.db.fetchall(
            "SELECT t.content FROM episode_rows er JOIN transcript t ON t.id = er.row_id"
            " WHERE er.episode_id IN (SELECT id FROM episodes WHERE owner_id = ?"
            " AND tombstoned_at IS NULL AND source != ? ORDER BY ended_at DESC, id DESC"
            " LIMIT ?) AND t.role = 'user' AND t.kind = 'message' ORDER BY t.id DESC LIMIT ?",
            (owner_id, except_source, episodes, limit),
        )
        return [str(r["content"]) for r in rows][::-1]

    async def apex_counts(self, owner_id: int) -> list[ApexCount]:
        """Per channel and level, an owner's live episodes with no parent yet."""
        rows = await self.db.fetchall(
            "SELECT channel_id, level, count(*) AS n FROM episodes WHERE owner_id = ?"
            " AND parent_id IS NULL AND tombstoned_at IS NULL GROUP BY channel_id, level"
            " ORDER BY channel_id, level",
            (owner_id,),
        )
        return [ApexCount(int(r["channel_id"]), int(r["level"]), int(r["n"])) for r in rows]

    async def apexes(self, channel_id: int, level: int) -> list[Episode]:
        """Live episodes of `level` in a channel with no parent yet (candidates for roll-up)."""
        rows = await self.db.fetchall(
            "SELECT * FROM episodes WHERE channel_id = ? AND level = ? AND parent_id IS NULL"
            " AND tombstoned_at IS NULL ORDER BY id",
            (channel_id, level),
        )
        return [episode_from_db(r) for r in rows]

    async def owner_apexes(self, owner_id: int) -> list[Episode]:
        """An owner's live apex episodes of every channel and level, oldest first (the map)."""
        rows = await self.db.fetchall(
            "SELECT * FROM episodes WHERE owner_id = ? AND parent_id IS NULL"
            " AND tombstoned_at IS NULL ORDER BY id",
            (owner_id,),
        )
        return [episode_from_db(r) for r in rows]

    async def embeddings(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        """The stored embeddings of `ids`, in that order, shape (len(ids), dim)."""
        out = np.zeros((len(ids), self.db.dim), dtype=np.float32)
        index = {eid: i for i, eid in enumerate(ids)}
        for start in range(0, len(ids), 500):
            rows = await self.db.fetchall(*self.db.dialect.vectors_query(
                "episode_vec", "episode_id", ids[start:start + 500]))
            for r in rows:
                out[index[r[0]]] = np.frombuffer(r[1], dtype="<f4")
        return out

    async def cited_rows(self, episode_id: int) -> list[int]:
        rows = await self.db.fetchall(
            "SELECT row_id FROM episode_rows WHERE episode_id = ? ORDER BY row_id",
            (episode_id,),
        )
        return [r[0] for r in rows]

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        """Mark episodes as relevant now (they were recalled into a prompt)."""
        if ids:
            await self.db.executemany_write(
                "UPDATE episodes SET last_relevant_at = ? WHERE id = ?",
                [(to_iso(now), i) for i in ids],
            )

    async def live_citing(self, row_ids: Sequence[int]) -> list[int]:
        """Live episodes that cite any of `row_ids`."""
        out: set[int] = set()
        for start in range(0, len(row_ids), 500):
            part = list(row_ids[start:start + 500])
            rows = await self.db.fetchall(
                "SELECT DISTINCT r.episode_id FROM episode_rows r JOIN episodes e"
                " ON e.id = r.episode_id WHERE e.tombstoned_at IS NULL"
                f" AND r.row_id IN ({','.join('?' * len(part))})", part)
            out.update(int(r[0]) for r in rows)
        return sorted(out)

    async def tombstone(self, ids: Sequence[int], parent_id: int, now: datetime) -> None:
        """Children rolled up into `parent_id`: kept for provenance, hidden from recall."""
        await self.db.executemany_write(
            "UPDATE episodes SET parent_id = ?, tombstoned_at = ? WHERE id = ?",
            [(parent_id, to_iso(now), i) for i in ids],
        )
