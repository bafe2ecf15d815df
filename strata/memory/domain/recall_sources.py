"""Episodes as recall candidates (`strata.memory.domain.recall_types.CandidateSource`): an owner's
live episodes found by vector kNN and the engine's keyword search, with their raw signals."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from strata.core.clock import from_iso
from strata.memory.domain.decay import episode_weight
from strata.memory.domain.episodes import EpisodeRepo, as_blob, cited_rows_by_episode, cosines
from strata.memory.domain.recall_leaves import LeafIndex
from strata.memory.domain.recall_render import date_of
from strata.memory.domain.recall_types import Candidate, RecallQuery, channel_where
from strata.memory.engines.db import Database, Reads, placeholders
from strata.memory.engines.dialect import Dialect

# Vector kNN over-fetch: tombstoned episodes (kept 30 days after a roll-up) still sit in the
# vector index and take slots that the live-filter then removes.
OVERFETCH = 3


EPISODE = "episode"


LEVEL_LABEL = {0: "notes of a conversation", 1: "notes on a topic", 2: "notes on a period"}


async def _knn(reads: Reads, dialect: Dialect, table: str, key: str, query: RecallQuery,
               k: int) -> dict[int, float]:
    """Cosine similarity of the query to the owner's `k` nearest vectors in `table`.

    Keyword hits outside these get no semantic score: looking their vectors up costs as
    much as the scan itself (vec0 reads whole chunks), and outside the top k their cosine
    is low anyway.
    """
    if query.vector is None:
        return {}
    rows = await reads.fetchall(
        dialect.knn_sql(table, key),
        (as_blob(query.vector), query.owner_id, min(k, 4096)),
    )
    return cosines(rows)


@dataclass
class EpisodeSource:
    """Live episodes (all levels) of the owner."""

    db: Database
    reads: Reads | None = None
    # The leaves' citations recall keeps already: a leaf's rows need no statement then.
    leaves: LeafIndex | None = None
    kind: str = "episode"
    repo: EpisodeRepo = field(init=False)

    def __post_init__(self) -> None:
        self.repo = EpisodeRepo(self.db)

    async def _keyword(self, reads: Reads, query: RecallQuery) -> dict[int, float]:
        if query.match is None:
            return {}
        dialect = self.db.dialect
        hits = await reads.fetchall(dialect.episode_search, (
            dialect.scoped(query.match, query.owner_id, ("summary", "key_terms")),
            query.scan, query.owner_id, query.k))
        return {int(r[0]): float(r[1]) for r in hits}

    async def candidates(self, query: RecallQuery) -> list[Candidate]:
        reads = self.reads or self.db
        cos, bm25 = await asyncio.gather(
            _knn(reads, self.db.dialect, "episode_vec", "episode_id", query,
                 query.k * OVERFETCH),
            self._keyword(reads, query),
        )
        ids = list(cos.keys() | bm25.keys())
        if not ids:
            return []
        known = self.leaves.known(query.owner_id) if self.leaves is not None else {}
        kept = {i: known[i] for i in ids if i in known}
        rows, cited = await asyncio.gather(
            reads.fetchall(
                "SELECT e.id, e.level, e.summary, e.salience, e.started_at, e.ended_at,"
                " e.last_relevant_at, c.kind, c.platform, c.name, c.source FROM episodes e"
                " JOIN channels c ON c.id = e.channel_id"
                f" WHERE e.id IN ({placeholders(ids)}) AND e.owner_id = ?"
                " AND e.tombstoned_at IS NULL",
                [*ids, query.owner_id],
            ),
            # A parent's: through its kept children.
            cited_rows_by_episode(reads, [i for i in ids if i not in kept]),
        )
        cited.update((i, rows_of.tolist()) for i, rows_of in kept.items())
        out = []
        for r in rows:
            start, end = date_of(r["started_at"]), date_of(r["ended_at"])
            out.append(Candidate(
                kind=self.kind,
                id=int(r["id"]),
                text=r["summary"],
                label=LEVEL_LABEL.get(r["level"], "notes"),
                when=start if start == end else f"{start} to {end}",
                where=channel_where(r["kind"], r["platform"], r["name"], r["source"]),
                recency=episode_weight(r["level"], from_iso(r["last_relevant_at"]), query.now),
                salience=float(r["salience"]),
                cited_rows=tuple(cited.get(int(r["id"]), ())),
                cosine=cos.get(int(r["id"])),
                bm25=bm25.get(int(r["id"])),
            ))
        return out

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        await self.repo.touch(ids, now)
