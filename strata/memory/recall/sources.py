"""Episodes as recall candidates (`strata.memory.recall.types.CandidateSource`): an owner's
live episodes found by vector kNN and the engine's keyword search, with their raw signals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from strata.core.clock import from_iso
from strata.memory.engines.db import Database, Reads
from strata.memory.engines.dialect import Dialect
from strata.memory.recall.leaves import LeafIndex
from strata.memory.recall.render import date_of
from strata.memory.recall.types import Candidate, RecallQuery, channel_where
from strata.memory.rules.decay import episode_weight
from strata.memory.store.episodes import EpisodeRepo, as_blob, cited_rows_by_episode, cosines

# Vector kNN over-fetch: tombstoned episodes (kept 30 days after a roll-up) still sit in the
# vector index and take slots that the live-filter then removes.
OVERFETCH = 3


EPISODE = "episode"


LEVEL_LABEL = {0: "notes of a conversation", 1: "notes on a topic", 2: "notes on a period"}


def found_query(dialect: Dialect, query: RecallQuery, k: int) -> tuple[str, list[object]]:
    """One statement for the owner's episodes that the vector kNN (the `k` nearest) or the
    keyword search finds, each live one with its details, its kNN distance and its keyword
    score (NULL where that search did not find it), in id order; ("", []) when the query has
    neither a vector nor words.

    Keyword hits outside the kNN get no semantic score: looking their vectors up costs as much
    as the scan itself (vec0 reads whole chunks), and outside the top k their cosine is low
    anyway. Each search runs once (MATERIALIZED): joined, the kNN would run again per row."""
    found: list[str] = []
    params: list[object] = []
    if query.vector is not None:
        found.append(f"k (id, distance) AS MATERIALIZED"
                     f" ({dialect.knn_sql('episode_vec', 'episode_id')})")
        params += [as_blob(query.vector), query.owner_id, min(k, 4096)]
    if query.match is not None:
        found.append(f"f (id, s) AS MATERIALIZED ({dialect.episode_search})")
        params += [dialect.scoped(query.match, query.owner_id, ("summary", "key_terms")),
                   query.scan, query.owner_id, query.k]
    if not found:
        return "", []
    names = [part[0] for part in found]
    hits = " UNION ".join(f"SELECT id FROM {n}" for n in names)
    sql = (f"WITH {', '.join(found)}, hits (id) AS ({hits})"
           " SELECT e.id, e.level, e.summary, e.salience, e.started_at, e.ended_at,"
           " e.last_relevant_at, c.kind, c.platform, c.name, c.source,"
           f" {'k.distance' if 'k' in names else 'NULL'} AS distance,"
           f" {'f.s' if 'f' in names else 'NULL'} AS s"
           " FROM hits JOIN episodes e ON e.id = hits.id JOIN channels c ON c.id = e.channel_id"
           + (" LEFT JOIN k ON k.id = e.id" if "k" in names else "")
           + (" LEFT JOIN f ON f.id = e.id" if "f" in names else "")
           + " WHERE e.owner_id = ? AND e.tombstoned_at IS NULL ORDER BY e.id")
    return sql, [*params, query.owner_id]


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

    async def candidates(self, query: RecallQuery) -> list[Candidate]:
        reads = self.reads or self.db
        sql, params = found_query(self.db.dialect, query, query.k * OVERFETCH)
        if not sql:
            return []
        # Found by the kNN with a distance (a zero or NaN vector stored before vectors were
        # checked has none: `cosines`) or by the keyword search.
        rows = [r for r in await reads.fetchall(sql, params)
                if cosines([(r["id"], r["distance"])]) or r["s"] is not None]
        known = self.leaves.known(query.owner_id) if self.leaves is not None else {}
        # A parent's rows: through its kept children.
        cited = await cited_rows_by_episode(reads, [int(r["id"]) for r in rows
                                                    if int(r["id"]) not in known])
        cited.update((int(r["id"]), known[int(r["id"])].tolist()) for r in rows
                     if int(r["id"]) in known)
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
                cosine=cosines([(r["id"], r["distance"])]).get(int(r["id"])),
                bm25=None if r["s"] is None else float(r["s"]),
            ))
        return out

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        await self.repo.touch(ids, now)
