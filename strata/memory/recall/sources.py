"""Episodes as recall candidates (`strata.memory.recall.types.CandidateSource`): an owner's
live episodes found by vector kNN and the engine's keyword search, with their raw signals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso
from strata.memory.recall.leaves import LeafIndex
from strata.memory.recall.render import date_of
from strata.memory.recall.types import Candidate, RecallQuery, channel_where
from strata.memory.rules.decay import episode_weight
from strata.memory.store.episodes import cosines
from strata.memory.store.recall_reads import EpisodeSearch, RecallReads

# Vector kNN over-fetch: tombstoned episodes (kept 30 days after a roll-up) still sit in the
# vector index and take slots that the live-filter then removes.
OVERFETCH = 3


EPISODE = "episode"


LEVEL_LABEL = {0: "notes of a conversation", 1: "notes on a topic", 2: "notes on a period"}


@dataclass
class EpisodeSource:
    """Live episodes (all levels) of the owner."""

    reads: RecallReads
    # The leaves' citations recall keeps already: a leaf's rows need no statement then.
    leaves: LeafIndex | None = None
    kind: str = "episode"

    async def candidates(self, query: RecallQuery) -> list[Candidate]:
        reads = self.reads
        found = await reads.found_episodes(EpisodeSearch(
            query.owner_id, query.vector, query.match, query.k * OVERFETCH, query.scan,
            query.k))
        # Found by the kNN with a distance (a zero or NaN vector stored before vectors were
        # checked has none: `cosines`) or by the keyword search.
        cosine = cosines([(r["id"], r["distance"]) for r in found])
        rows = [r for r in found if int(r["id"]) in cosine or r["s"] is not None]
        known = self.leaves.known(query.owner_id) if self.leaves is not None else {}
        # A parent's rows: through its kept children.
        cited = await reads.cited_rows([int(r["id"]) for r in rows
                                        if int(r["id"]) not in known])
        cited.update((int(r["id"]), known[int(r["id"])].tolist()) for r in rows
                     if int(r["id"]) in known)
        weights: dict[tuple[int, str], float] = {}  # episodes rolled up together share a time
        out = []
        for r in rows:
            rid, level, last = int(r["id"]), r["level"], r["last_relevant_at"]
            if (level, last) not in weights:
                weights[level, last] = episode_weight(level, from_iso(last), query.now)
            start, end = date_of(r["started_at"]), date_of(r["ended_at"])
            out.append(Candidate(
                kind=self.kind,
                id=rid,
                text=r["summary"],
                label=LEVEL_LABEL.get(level, "notes"),
                when=start if start == end else f"{start} to {end}",
                where=channel_where(r["kind"], r["platform"], r["name"], r["source"]),
                recency=weights[level, last],
                salience=float(r["salience"]),
                cited_rows=tuple(cited.get(rid, ())),
                cosine=cosine.get(rid),
                bm25=None if r["s"] is None else float(r["s"]),
            ))
        return out

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        await self.reads.episodes.touch(ids, now)
