"""Turn-zero recall: what the bot remembers about a query, before the model sees the turn.

Candidate sources (episodes and live transcript message rows here; facts can be added by
`Recall.add_source`) each run vector kNN (sqlite-vec, `owner_id` partition + `k`) and FTS5
keyword search over ONE owner's memory, and return `Candidate`s with their raw signals. Those
are turned into calibrated per-signal scores, each 0–1 and comparable across queries:

- semantic: the cosine similarity mapped linearly from [`sim_zero`, `sim_full`] onto [0, 1]
  (for the kNN hits; a keyword hit outside them scores 0 here);
- keyword: bm25 normalised per query and source (best hit 1), times the share of the query's
  terms the candidate contains, so matching one common word of a long question stays weak;
- relevance = 1 − (1 − semantic)(1 − keyword): either signal can carry a candidate, both
  together count more.

Two absolute gates: when even the best candidate's relevance is below `min_top_relevance`, the
query is about nothing remembered and nothing is injected (one weakly related item is not a
reason to inject); a candidate below `min_relevance` is dropped. The rest are ranked by a blend
of relevance, recency (the decay weight of memory/decay.py) and salience, and anything scoring
below `relative_floor` × the best score is dropped. Then, best first: near-duplicate texts and
rows already cited by a chosen episode are collapsed, and items are taken while they fit the
token budget (ceil(chars/4)). The result is rendered as quoted data with date and provenance,
never as instructions.

Recall never crosses owners: a person's recall covers all of their channels (private and
background); a shared room's owner is the room's own scope, so a room only recalls itself.
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from bot.clock import from_iso
from bot.errors import ModelError
from bot.ports import Clock, Embedder
from bot.tokens import count_tokens, truncate_to_tokens
from bot.types import Channel, Person
from memory.db import Database, Params, ReaderPool, Row
from memory.decay import episode_weight
from memory.episodes import LEAF, EpisodeRepo, as_blob, cited_rows_by_episode, cosines
from memory.fts import match_query, owner_scoped, terms
from memory.profiles import sources_with, wildcard_prefixes_with

log = logging.getLogger(__name__)

# Rows carry no salience of their own; a neutral value keeps the blend fair to them.
ROW_SALIENCE = 0.5
# Vector kNN over-fetch: tombstoned episodes (kept 30 days after a roll-up) still sit in the
# vector index and take slots that the live-filter then removes.
OVERFETCH = 3
QUERY_TOKENS = 512
LEVEL_LABEL = {0: "notes of a conversation", 1: "notes on a topic", 2: "notes on a period"}


@dataclass(frozen=True, slots=True)
class RecallTuning:
    """Recall's knobs (built from `RecallSettings` by the app; see the example config)."""

    budget_tokens: int = 1000
    candidates: int = 40
    relative_floor: float = 0.55
    min_relevance: float = 0.25
    min_top_relevance: float = 0.7
    w_relevance: float = 0.7
    w_recency: float = 0.05
    w_salience: float = 0.1
    sim_zero: float = 0.15
    sim_full: float = 0.65
    near_duplicate: float = 0.85
    skip_recent_rows: int = 20
    keyword_scan: int = 2000
    query_embed_seconds: float = 10.0  # then keyword search only (a hanging embedder)


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """One search, as every candidate source sees it."""

    owner_id: int
    text: str
    terms: tuple[str, ...]
    match: str | None  # FTS5 expression of quoted terms (memory.fts), bound as a parameter
    vector: npt.NDArray[np.float32] | None  # L2-normalised; None when the embedder failed
    now: datetime
    k: int
    scan: int = 2000  # keyword matches ranked at most (the newest)
    # Rows of this channel newer than this id are already in the prompt's history.
    skip_channel_id: int | None = None
    skip_after_row_id: int = 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A memory item with its raw signals, as a source found it."""

    kind: str  # "episode", "row", later "fact"
    id: int
    text: str
    label: str  # what it is, e.g. "notes of a conversation", "Alice said"
    when: str  # the date (or date range) shown
    where: str  # provenance: which channel
    recency: float  # decay weight 0–1
    salience: float  # 0–1
    cited_rows: tuple[int, ...] = ()
    cosine: float | None = None
    bm25: float | None = None  # SQLite's bm25: negative, more negative is better


class CandidateSource(Protocol):
    """Finds candidates of one kind in one owner's memory (see `Recall.add_source`)."""

    kind: str

    async def candidates(self, query: RecallQuery) -> list[Candidate]: ...

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        """These items were injected into a prompt: refresh their "last relevant" time."""
        ...


@dataclass(frozen=True, slots=True)
class RecallItem:
    kind: str
    id: int
    score: float
    relevance: float
    tokens: int
    cited_rows: tuple[int, ...]
    text: str
    rendered: str


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What recall chose, best first, with what it cites and costs."""

    items: tuple[RecallItem, ...] = ()
    considered: int = 0
    elapsed_ms: float = 0.0

    @property
    def tokens(self) -> int:
        return sum(i.tokens for i in self.items)

    @property
    def cited_row_ids(self) -> set[int]:
        """Transcript rows the injected block cites (a row item cites itself)."""
        return {r for i in self.items for r in i.cited_rows}

    def render(self) -> str | None:
        """The block for the prompt, or None when nothing is worth injecting."""
        if not self.items:
            return None
        return "\n".join(i.rendered for i in self.items)


# -- scoring (pure) ---------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
_SUFFIXES = ("ing", "ed", "es", "ly", "s")


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude suffix strip, enough to match `sisters`/`sister` or `painted`/`paint`."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


# Cached: the same candidate texts come back query after query (this is on the hot path).
@functools.lru_cache(maxsize=4096)
def word_set(text: str) -> frozenset[str]:
    return frozenset(map(stem, set(_WORD.findall(text.lower()))))


def coverage(query_terms: Sequence[str], text: str) -> float:
    """The share of `query_terms` that occur (stemmed) in `text`."""
    if not query_terms:
        return 0.0
    words = word_set(text)
    return sum(1 for t in query_terms if stem(t) in words) / len(query_terms)


def semantic_score(cosine: float | None, tuning: RecallTuning) -> float:
    if cosine is None:
        return 0.0
    span = max(tuning.sim_full - tuning.sim_zero, 1e-6)
    return min(max((cosine - tuning.sim_zero) / span, 0.0), 1.0)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


@dataclass(frozen=True, slots=True)
class Scored:
    candidate: Candidate
    relevance: float
    score: float


def score_candidates(
    candidates: Sequence[Candidate], query_terms: Sequence[str], tuning: RecallTuning
) -> list[Scored]:
    """Calibrated relevance, the absolute gate, the blend and the relative floor; best first."""
    best_bm25: dict[str, float] = {}
    for c in candidates:
        if c.bm25 is not None and c.bm25 < 0:
            best_bm25[c.kind] = min(best_bm25.get(c.kind, 0.0), c.bm25)
    weights = tuning.w_relevance + tuning.w_recency + tuning.w_salience or 1.0
    scored = []
    for c in candidates:
        sem = semantic_score(c.cosine, tuning)
        kw = 0.0
        if c.bm25 is not None and c.bm25 < 0 and best_bm25.get(c.kind):
            kw = (c.bm25 / best_bm25[c.kind]) * coverage(query_terms, c.text)
        relevance = 1.0 - (1.0 - sem) * (1.0 - kw)
        if relevance < tuning.min_relevance or relevance <= 0.0:
            continue
        blend = (
            tuning.w_relevance * relevance
            + tuning.w_recency * c.recency
            + tuning.w_salience * c.salience
        ) / weights
        scored.append(Scored(c, relevance, blend))
    if not scored or max(s.relevance for s in scored) < tuning.min_top_relevance:
        return []
    scored.sort(key=lambda s: (-s.score, s.candidate.kind, s.candidate.id))
    if scored:
        floor = tuning.relative_floor * scored[0].score
        scored = [s for s in scored if s.score >= floor]
    return scored


def render_item(c: Candidate) -> str:
    """One quoted memory: a header with date and provenance, then the text as `>` lines."""
    quoted = "\n".join("  > " + line for line in c.text.splitlines() if line.strip())
    return f"- {c.when}, {c.where} — {c.label}:\n{quoted}"


def select(scored: Sequence[Scored], budget: int, tuning: RecallTuning) -> list[RecallItem]:
    """Best first: collapse duplicates, keep within `budget` tokens."""
    chosen: list[tuple[Scored, RecallItem, frozenset[str]]] = []
    covered: set[int] = set()
    used = 0
    for s in scored:
        c = s.candidate
        if c.kind == "row" and c.id in covered:
            continue
        cited = set(c.cited_rows)
        if c.kind != "row" and cited and cited <= covered:
            continue  # everything it is about is already in the block
        words = word_set(c.text)
        if any(jaccard(words, w) >= tuning.near_duplicate for _, _, w in chosen):
            continue
        rendered = render_item(c)
        cost = count_tokens(rendered + "\n")
        # An episode replaces the rows it cites that were chosen before it.
        dropped = [x for x in chosen if x[1].kind == "row" and x[1].id in cited] if cited else []
        freed = sum(x[1].tokens for x in dropped)
        if used - freed + cost > budget:
            continue
        chosen = [x for x in chosen if x not in dropped]
        used += cost - freed
        cites = c.cited_rows if c.kind != "row" else (c.id,)
        covered.update(cites)
        item = RecallItem(c.kind, c.id, round(s.score, 4), round(s.relevance, 4), cost,
                          tuple(cites), c.text, rendered)
        chosen.append((s, item, words))
    return [item for _, item, _ in chosen]


# -- candidate sources ------------------------------------------------------------------------


def _where(kind: str, platform: str, name: str, source: str) -> str:
    if kind == "shared":
        return f'shared room "{name}" on {platform}' if name else f"shared room on {platform}"
    if kind == "background":
        return f"background channel ({source})"
    return f"private chat on {platform}"


def _date(ts: str) -> str:
    return ts[:10]


def _source_filter(column: str) -> tuple[str, list[object]]:
    """SQL keeping only sources whose profile feeds memory (muted sources are never found)."""
    exact = sources_with("episodes")
    parts = [f"{column} IN ({_marks(len(exact))})"] if exact else []
    params: list[object] = list(exact)
    for prefix in wildcard_prefixes_with("episodes"):
        parts.append(f"substr({column}, 1, ?) = ?")
        params += [len(prefix), prefix]
    return "(" + (" OR ".join(parts) or "0") + ")", params


def _marks(n: int) -> str:
    return ",".join("?" * n)


class Reads(Protocol):
    """Where sources read from: the database's reader, or a `ReaderPool` (side by side)."""

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...


async def _knn(reads: Reads, table: str, key: str, query: RecallQuery,
               k: int) -> dict[int, float]:
    """Cosine similarity of the query to the owner's `k` nearest vectors in `table`.

    Keyword hits outside these get no semantic score: looking their vectors up costs as
    much as the scan itself (vec0 reads whole chunks), and outside the top k their cosine
    is low anyway.
    """
    if query.vector is None:
        return {}
    rows = await reads.fetchall(
        f"SELECT {key}, distance FROM {table} WHERE embedding MATCH ? AND owner_id = ?"
        " AND k = ?",
        (as_blob(query.vector), query.owner_id, min(k, 4096)),
    )
    return cosines(rows)


@dataclass
class EpisodeSource:
    """Live episodes (all levels) of the owner."""

    db: Database
    reads: Reads | None = None
    kind: str = "episode"
    repo: EpisodeRepo = field(init=False)

    def __post_init__(self) -> None:
        self.repo = EpisodeRepo(self.db)

    async def _keyword(self, reads: Reads, query: RecallQuery) -> dict[int, float]:
        if query.match is None:
            return {}
        # bm25 costs a read of every match's position lists: only the newest `scan`
        # matches are ranked (all of them unless the query's words are very common). The
        # CROSS JOIN keeps the planner from running the MATCH once per episode row.
        hits = await reads.fetchall(
            "SELECT e.id, f.s FROM (SELECT rowid AS id,"
            " bm25(episode_owner_fts, 0.0, 1.0, 1.0) AS s FROM episode_owner_fts"
            " WHERE episode_owner_fts MATCH ? ORDER BY rowid DESC LIMIT ?) AS f"
            " CROSS JOIN episodes e ON e.id = f.id"
            " WHERE e.owner_id = ? AND e.tombstoned_at IS NULL ORDER BY f.s LIMIT ?",
            (owner_scoped(query.match, query.owner_id, ("summary", "key_terms")),
             query.scan, query.owner_id, query.k),
        )
        return {int(r[0]): float(r[1]) for r in hits}

    async def candidates(self, query: RecallQuery) -> list[Candidate]:
        reads = self.reads or self.db
        cos, bm25 = await asyncio.gather(
            _knn(reads, "episode_vec", "episode_id", query, query.k * OVERFETCH),
            self._keyword(reads, query),
        )
        ids = list(cos.keys() | bm25.keys())
        if not ids:
            return []
        rows, cited = await asyncio.gather(
            reads.fetchall(
                "SELECT e.id, e.level, e.summary, e.salience, e.started_at, e.ended_at,"
                " e.last_relevant_at, c.kind, c.platform, c.name, c.source FROM episodes e"
                " JOIN channels c ON c.id = e.channel_id"
                f" WHERE e.id IN ({_marks(len(ids))}) AND e.owner_id = ?"
                " AND e.tombstoned_at IS NULL",
                [*ids, query.owner_id],
            ),
            cited_rows_by_episode(reads, ids),  # a parent's: through its kept children
        )
        out = []
        for r in rows:
            start, end = _date(r["started_at"]), _date(r["ended_at"])
            out.append(Candidate(
                kind=self.kind,
                id=int(r["id"]),
                text=r["summary"],
                label=LEVEL_LABEL.get(r["level"], "notes"),
                when=start if start == end else f"{start} to {end}",
                where=_where(r["kind"], r["platform"], r["name"], r["source"]),
                recency=episode_weight(r["level"], from_iso(r["last_relevant_at"]), query.now),
                salience=float(r["salience"]),
                cited_rows=tuple(cited.get(int(r["id"]), ())),
                cosine=cos.get(int(r["id"])),
                bm25=bm25.get(int(r["id"])),
            ))
        return out

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        await self.repo.touch(ids, now)


@dataclass
class TranscriptSource:
    """Live user and assistant message rows of the owner (never tool rows or compactions)."""

    db: Database
    reads: Reads | None = None
    kind: str = "row"

    def _filter(self, query: RecallQuery) -> tuple[str, list[object]]:
        allowed, params = _source_filter("t.source")
        return (
            f"t.owner_id = ? AND t.kind = 'message' AND t.role IN ('user', 'assistant')"
            f" AND {allowed} AND NOT (t.channel_id = ? AND t.id > ?)",
            [query.owner_id, *params, query.skip_channel_id or 0, query.skip_after_row_id],
        )

    async def _keyword(self, reads: Reads, query: RecallQuery) -> dict[int, float]:
        if query.match is None:
            return {}
        where, params = self._filter(query)
        hits = await reads.fetchall(
            "SELECT t.id, f.s FROM (SELECT rowid AS id,"
            " bm25(transcript_owner_fts, 0.0, 1.0) AS s FROM transcript_owner_fts"
            " WHERE transcript_owner_fts MATCH ? ORDER BY rowid DESC LIMIT ?) AS f"
            f" CROSS JOIN transcript t ON t.id = f.id WHERE {where} ORDER BY f.s LIMIT ?",
            [owner_scoped(query.match, query.owner_id, ("content",)), query.scan, *params,
             query.k],
        )
        return {int(r[0]): float(r[1]) for r in hits}

    async def candidates(self, query: RecallQuery) -> list[Candidate]:
        reads = self.reads or self.db
        cos, bm25 = await asyncio.gather(
            _knn(reads, "transcript_vec", "row_id", query, query.k * 2),
            self._keyword(reads, query),
        )
        ids = list(cos.keys() | bm25.keys())
        if not ids:
            return []
        where, params = self._filter(query)
        rows = await reads.fetchall(
            "SELECT t.id, t.ts, t.role, t.content, p.name AS speaker, c.kind, c.platform,"
            " c.name, c.source FROM transcript t JOIN channels c ON c.id = t.channel_id"
            " LEFT JOIN persons p ON p.id = t.person_id"
            f" WHERE t.id IN ({_marks(len(ids))}) AND {where}",
            [*ids, *params],
        )
        out = []
        for r in rows:
            said = "you said" if r["role"] == "assistant" else f"{r['speaker'] or 'they'} said"
            out.append(Candidate(
                kind=self.kind,
                id=int(r["id"]),
                text=truncate_to_tokens(r["content"], 300),
                label=said,
                when=_date(r["ts"]),
                where=_where(r["kind"], r["platform"], r["name"], r["source"]),
                recency=episode_weight(LEAF, from_iso(r["ts"]), query.now),
                salience=ROW_SALIENCE,
                cited_rows=(int(r["id"]),),
                cosine=cos.get(int(r["id"])),
                bm25=bm25.get(int(r["id"])),
            ))
        return out

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        return None  # a row's recency is its own time; it has no "last relevant" field


# -- the recaller -----------------------------------------------------------------------------


class Recall:
    """Turn-zero recall over one owner's memory; implements `bot.ports.Recaller`."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        clock: Clock,
        tuning: RecallTuning | None = None,
        sources: Sequence[CandidateSource] | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.clock = clock
        self.tuning = tuning or RecallTuning()
        # Two sources × (vector, keyword) searches run side by side on these connections.
        self.pool = ReaderPool(db, size=4)
        self.sources: list[CandidateSource] = (
            list(sources)
            if sources is not None
            else [EpisodeSource(db, self.pool), TranscriptSource(db, self.pool)]
        )

    async def close(self) -> None:
        await self.pool.close()

    def add_source(self, source: CandidateSource) -> None:
        """Add a candidate source (e.g. facts); its `kind` must be new."""
        if any(s.kind == source.kind for s in self.sources):
            raise ValueError(f"a candidate source of kind {source.kind!r} is already there")
        self.sources.append(source)

    async def embed_query(self, text: str) -> npt.NDArray[np.float32] | None:
        """The query's vector, or None (keyword search only) when the embedder fails."""
        if not text.strip():
            return None
        try:
            async with asyncio.timeout(self.tuning.query_embed_seconds):
                return (await self.embedder.embed([truncate_to_tokens(text, QUERY_TOKENS)]))[0]
        except ModelError as exc:
            log.warning("recall: query embedding failed, keyword search only: %s", exc)
        except TimeoutError:
            log.warning("recall: no query embedding within %.1f s, keyword search only",
                        self.tuning.query_embed_seconds)
        return None

    async def search(
        self,
        owner_id: int,
        query: str,
        now: datetime | None = None,
        budget: int | None = None,
        *,
        vector: npt.NDArray[np.float32] | None = None,
        skip_channel_id: int | None = None,
        skip_after_row_id: int = 0,
    ) -> RecallResult:
        """Search `owner_id`'s memory for `query` (read only: nothing is touched).

        `vector`: the query's embedding if the caller already has it (else it is computed);
        rows of `skip_channel_id` after `skip_after_row_id` are left out (already in the
        prompt).
        """
        now = now or self.clock.now()
        budget = self.tuning.budget_tokens if budget is None else budget
        if vector is None:
            vector = await self.embed_query(query)
        started = time.perf_counter()
        query_terms = tuple(terms(query))
        q = RecallQuery(
            owner_id=owner_id,
            text=query,
            terms=query_terms,
            match=match_query(query),
            vector=vector,
            now=now,
            k=self.tuning.candidates,
            scan=self.tuning.keyword_scan,
            skip_channel_id=skip_channel_id,
            skip_after_row_id=skip_after_row_id,
        )
        candidates: list[Candidate] = []
        if budget > 0 and (q.match is not None or q.vector is not None):
            found = await asyncio.gather(*(source.candidates(q) for source in self.sources))
            candidates = [c for batch in found for c in batch]
        items = select(score_candidates(candidates, query_terms, self.tuning), budget, self.tuning)
        elapsed = (time.perf_counter() - started) * 1000
        return RecallResult(tuple(items), len(candidates), round(elapsed, 3))

    async def touch(self, result: RecallResult, now: datetime) -> None:
        """Refresh "last relevant" of everything `result` injected."""
        for source in self.sources:
            ids = [i.id for i in result.items if i.kind == source.kind]
            if ids:
                await source.touch(ids, now)

    async def recent_boundary(self, channel_id: int) -> int:
        """The id below which the channel's rows are no longer in the prompt's history."""
        n = self.tuning.skip_recent_rows
        if n <= 0:
            return 2**62
        value = await self.db.fetchval(
            "SELECT id FROM transcript WHERE channel_id = ? AND kind = 'message'"
            " ORDER BY id DESC LIMIT 1 OFFSET ?",
            (channel_id, n - 1),
        )
        return int(value) if value is not None else 0

    async def recall(
        self, *, channel: Channel, person: Person, query: str,
        shown_from_row_id: int | None = None,
    ) -> str | None:
        """The quoted memory block for a turn in `channel`, or None. The owner is the
        channel's: the person for private and background channels, the room for a room.
        The channel's rows from `shown_from_row_id` on are in the prompt already and are left
        out; without it, the newest `skip_recent_rows` are assumed to be."""
        now = self.clock.now()
        if shown_from_row_id is not None:
            skip_after = shown_from_row_id - 1
        else:
            skip_after = await self.recent_boundary(channel.id)
        result = await self.search(
            channel.owner_id,
            query,
            now,
            skip_channel_id=channel.id,
            skip_after_row_id=skip_after,
        )
        if result.items:
            await self.touch(result, now)
            log.debug("recall: %d items, %d tokens, %.1f ms", len(result.items),
                      result.tokens, result.elapsed_ms)
        return result.render()
