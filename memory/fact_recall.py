"""Facts at turn zero: the data graph as a recall candidate source, and a facts-only recaller.

`FactSource.candidates` turns `FactRepo.search` hits into `FactCandidate`s scored with the
same blend as episodes (relevance, recency = per-kind decay weight, salience = confidence) and
rendered with their provenance (kind, date, where from). `select` applies the design's gates
(an absolute relevance gate, a relative floor on the blended score, a token budget, dedup).
`FactRecaller` is a `bot.ports.Recaller` over facts alone; the full recall (episodes,
transcript) merges `FactSource` candidates with its own under one budget. Facts belong to the
channel's owner, so a shared room (owned by its own scope) never sees a person's facts.
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt

from bot.ports import Clock, Embedder
from bot.tokens import count_tokens
from bot.types import Channel, Person
from memory.decay import fact_weight
from memory.facts import FactHit, FactRepo, normalise_text


@dataclass(frozen=True, slots=True)
class Blend:
    """Recall's weights and gates (from `[recall]` in the config)."""

    w_relevance: float = 0.7
    w_recency: float = 0.2
    w_salience: float = 0.1
    min_relevance: float = 0.25
    relative_floor: float = 0.55
    budget_tokens: int = 1000

    def score(self, relevance: float, recency: float, salience: float) -> float:
        total = self.w_relevance + self.w_recency + self.w_salience
        if total <= 0:
            return relevance
        return (self.w_relevance * relevance + self.w_recency * recency
                + self.w_salience * salience) / total


@dataclass(frozen=True, slots=True)
class FactCandidate:
    """A recall candidate: `score` is calibrated 0..1, `text` is the rendered line."""

    key: str  # "fact:12", for dedup across sources
    fact_id: int
    text: str
    relevance: float
    recency: float
    salience: float
    score: float
    ts: datetime


def render(hit: FactHit) -> str:
    f = hit.fact
    where = "your words" if f.source == "user" else f.source
    url = f" <{f.url}>" if f.url else ""
    return (f"- fact #{f.id} ({f.kind}, since {f.valid_from.date().isoformat()}, from "
            f"{where}): {f.text}{url}")


def select(candidates: Sequence[FactCandidate], blend: Blend) -> list[FactCandidate]:
    """Gate, floor, dedup and budget `candidates` (best first)."""
    relevant = [c for c in candidates if c.relevance >= blend.min_relevance]
    if not relevant:
        return []
    best = max(c.score for c in relevant)
    ranked = sorted((c for c in relevant if c.score >= blend.relative_floor * best),
                    key=lambda c: -c.score)
    out: list[FactCandidate] = []
    seen: set[str] = set()
    used = 0
    for c in ranked:
        norm = normalise_text(c.text.split("): ", 1)[-1])
        if norm in seen:
            continue
        cost = count_tokens(c.text) + 1
        if used + cost > blend.budget_tokens:
            continue
        seen.add(norm)
        used += cost
        out.append(c)
    return out


class FactSource:
    def __init__(self, repo: FactRepo, embedder: Embedder) -> None:
        self.repo = repo
        self.embedder = embedder

    async def candidates(self, owner_id: int, query: str, now: datetime, blend: Blend, *,
                         limit: int = 40, embedding: npt.NDArray[np.floating] | None = None,
                         ) -> list[FactCandidate]:
        """Scored candidates among the owner's live facts (`embedding`: the query's vector,
        when the caller already has it)."""
        if not query.strip():
            return []
        vec = embedding if embedding is not None else (await self.embedder.embed([query]))[0]
        hits = await self.repo.search(owner_id, query, vec, limit=limit)
        out = []
        for h in hits:
            recency = fact_weight(h.fact.kind, h.fact.last_relevant_at, now)
            out.append(FactCandidate(
                key=f"fact:{h.fact.id}", fact_id=h.fact.id, text=render(h),
                relevance=h.relevance, recency=recency, salience=h.fact.confidence,
                score=blend.score(h.relevance, recency, h.fact.confidence),
                ts=h.fact.valid_from,
            ))
        return out


class FactRecaller:
    """`bot.ports.Recaller` over facts only: quoted lines with provenance, or None."""

    def __init__(self, source: FactSource, clock: Clock, blend: Blend,
                 candidates: int = 40) -> None:
        self.source = source
        self.clock = clock
        self.blend = blend
        self.limit = candidates

    async def recall(self, *, channel: Channel, person: Person, query: str) -> str | None:
        now = self.clock.now()
        found = await self.source.candidates(channel.owner_id, query, now, self.blend,
                                             limit=self.limit)
        chosen = select(found, self.blend)
        if not chosen:
            return None
        await self.source.repo.touch([c.fact_id for c in chosen], now)
        return "Facts:\n" + "\n".join(c.text for c in chosen)
