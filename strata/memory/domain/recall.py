"""Turn-zero recall: what the bot remembers about a query, before the model sees the turn.

The unit of recall is a short window of the transcript: a row with its neighbours before and
after in the same channel and session, built from the owner's live recallable rows
(`strata.memory.domain.recall_index`) and ranked per query by `strata.memory.domain.recall_rank`:
BM25 over the window's words divided by the best window's, plus twice the window's cosine relative
to the query's own background over the same memory (so no cosine range of a particular embedding
model is assumed), plus a little salience (the live leaves' that cite the row), with recency only as
a tie-break. The budget is filled in rank order, from the items within `relative_floor` of the best
one; overlapping or touching windows merge into one quoted span, so the same turns are never paid
for twice. Decay acts (`decay_floor`): an episode unused until its weight fell under the floor
has faded, with the rows only faded leaves cite, and comes in only as one of the strongest
matches (`faded_floor` of the best score); it stays stored, and `touch` makes it fresh again.

Other memories compete as extra candidates (`CandidateSource`: episodes here, facts added by
`Recall.add_source`): they are found by vector kNN and FTS5 over one owner's memory and scored
on the same per-query scale. An episode whose rows are all still live is left out (its rows are
windows already); topic and period notes, and notes whose rows were pruned, stay.

A logistic gate (`strata.memory.domain.recall_gate`) on the best window's cosine (as an excess
z-score over the background) and the idf-weighted share of the query's words that the best keyword
window holds decides whether anything is injected at all. The block is rendered as quoted data with
date and provenance, never as instructions, read fresh from the database; it never exceeds
the token budget (ceil(chars/4)).

Recall never crosses owners: a person's recall covers all of their channels (private and
background); a shared room's owner is the room's own scope, so a room only recalls itself.
Imports `bot` leaf modules and `memory`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from strata.core.clock import from_iso
from strata.core.errors import ModelError
from strata.core.ports import Clock, Embedder
from strata.core.tokens import count_tokens, truncate_to_tokens
from strata.core.types import Channel, Person
from strata.memory.domain.decay import EPISODE_TAU_DAYS, episode_weight
from strata.memory.domain.episodes import LEAF, EpisodeRepo, as_blob, cited_rows_by_episode, cosines
from strata.memory.domain.recall_focus import NOTE_TOKENS, excerpt
from strata.memory.domain.recall_gate import gate_features, gate_idf, gate_logit
from strata.memory.domain.recall_index import NAMED, RowIndex, recency_of
from strata.memory.domain.recall_pack import rank_order, row_shares, window_units
from strata.memory.domain.recall_rank import (
    RankTuning,
    RowTable,
    Selection,
    Unit,
    WindowScores,
    above_floor,
    bm25_text,
    greedy,
    spans,
    surface_words,
    unit_semantic,
    unit_vectors,
    unknown_name,
    window_scores,
)
from strata.memory.domain.text import query_stems, text_coverage
from strata.memory.engines.db import Database, ReaderPool, Reads, Row, placeholders
from strata.memory.engines.dialect import Dialect
from strata.memory.engines.fts import terms

log = logging.getLogger(__name__)

# Vector kNN over-fetch: tombstoned episodes (kept 30 days after a roll-up) still sit in the
# vector index and take slots that the live-filter then removes.
OVERFETCH = 3
QUERY_TOKENS = 512
ROW_TOKENS = 300
EPISODE = "episode"
LEVEL_LABEL = {0: "notes of a conversation", 1: "notes on a topic", 2: "notes on a period"}


@dataclass(frozen=True, slots=True)
class RecallTuning:
    """Recall's knobs (built from `RecallSettings` by the app; see the example config).

    The gate's coefficients were fitted by logistic regression on a development split; its
    features are scale-free, so they carry over to other embedding models.
    """

    budget_tokens: int = 1000
    candidates: int = 40  # extra candidates (episodes, facts) per source and signal
    pool: int = 100  # best windows the selection considers
    w_keyword: float = 1.0
    w_semantic: float = 0.5
    w_recency: float = 0.02
    w_salience: float = 0.1
    session_penalty: float = 0.0
    relative_floor: float = 0.3
    # Decay that acts: an episode whose weight exp(−Δt/τ) since it was last relevant is below
    # `decay_floor` has faded, and so have the live rows that only such leaves cite (they stay
    # in storage until roll-up or the janitor). A faded item comes into the block only when it
    # scores at least `faded_floor` × the best item's score: an old memory needs a strong cue.
    # faded_floor > 1: faded items leave recall altogether. decay_floor 0: nothing fades.
    decay_floor: float = 0.05
    faded_floor: float = 0.45
    gate_bias: float = -0.4
    gate_cosine: float = 0.86
    gate_keyword: float = 5.47
    gate_unknown_name: float = 2.577
    cost_power: float = 0.5
    redundancy: float = 0.3
    semantic_top: int = 1
    diversity: bool = False
    skip_recent_rows: int = 20
    keyword_scan: int = 2000
    query_embed_seconds: float = 10.0  # then keyword search only (a hanging embedder)
    # Display: the best `trim_after` windows are shown whole; any other shows only its rows
    # within `trim_margin` of its best row's own score (strata.memory.domain.recall_pack; inf:
    # whole).
    trim_margin: float = 0.5
    trim_after: int = 6
    # State each channel once, in a heading above its items, instead of in every header.
    channel_headings: bool = True

    @property
    def rank(self) -> RankTuning:
        return RankTuning(**{f.name: getattr(self, f.name) for f in fields(RankTuning)})


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """One search, as every candidate source sees it."""

    owner_id: int
    text: str
    terms: tuple[str, ...]
    # The engine's keyword query (`Dialect.keyword_query`: for SQLite an FTS5 expression of
    # quoted terms, strata.memory.engines.fts), bound as a parameter.
    match: str | None
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
    # Provenance ("private chat on telegram"), when the block states it once for all of the
    # channel's items (`heading`) instead of in each item's header ("" : in the header).
    where: str = ""


# Provenance phrases naming a channel take "the" in a heading ("From the private chat on
# console:"); the others carry their own determiner ("From my own reflections:").
CHANNEL_PHRASES = ("private chat", "shared room", "background channel")


def heading(where: str) -> str:
    """The line above the items of one channel, when items leave provenance out."""
    return f"From the {where}:" if where.startswith(CHANNEL_PHRASES) else f"From {where}:"


def heading_cost(where: str) -> int:
    return count_tokens(heading(where) + "\n")


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What recall chose, best first, with what it cites and costs."""

    items: tuple[RecallItem, ...] = ()
    considered: int = 0
    elapsed_ms: float = 0.0

    @property
    def tokens(self) -> int:
        wheres = {i.where for i in self.items if i.where}
        return sum(i.tokens for i in self.items) + sum(map(heading_cost, wheres))

    @property
    def cited_row_ids(self) -> set[int]:
        """Transcript rows the injected block cites (a row item cites itself)."""
        return {r for i in self.items for r in i.cited_rows}

    def render(self) -> str | None:
        """The block for the prompt, or None when nothing is worth injecting."""
        if not self.items:
            return None
        if not any(i.where for i in self.items):
            return "\n".join(i.rendered for i in self.items)
        # One heading per channel, channels in the order of their best item.
        groups: dict[str, list[str]] = {}
        for i in self.items:
            groups.setdefault(i.where, []).append(i.rendered)
        return "\n".join(line for where, parts in groups.items()
                         for line in ([heading(where)] if where else []) + parts)


# -- candidate sources ------------------------------------------------------------------------


def channel_where(kind: str, platform: str, name: str, source: str) -> str:
    """A channel in words ("private chat on console"): the one phrase rows, episodes and
    facts use, so a channel's items share one heading."""
    if kind == "shared":
        return f'shared room "{name}" on {platform}' if name else f"shared room on {platform}"
    if kind == "background":
        return f"background channel ({source})"
    return f"private chat on {platform}"


def _date(ts: str) -> str:
    return ts[:10]


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
        rows, cited = await asyncio.gather(
            reads.fetchall(
                "SELECT e.id, e.level, e.summary, e.salience, e.started_at, e.ended_at,"
                " e.last_relevant_at, c.kind, c.platform, c.name, c.source FROM episodes e"
                " JOIN channels c ON c.id = e.channel_id"
                f" WHERE e.id IN ({placeholders(ids)}) AND e.owner_id = ?"
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




# -- rendering ---------------------------------------------------------------------------------



def render_item(c: Candidate, provenance: bool = True) -> str:
    """One quoted memory: a header with date and provenance (unless a heading gives it),
    then the text as `>` lines."""
    quoted = "\n".join("  > " + line for line in c.text.splitlines() if line.strip())
    where = f", {c.where}" if provenance else ""
    return f"- {c.when}{where} — {c.label}:\n{quoted}"


def row_line(row: Row) -> str:
    """A row as quoted lines, with who said it unless the text already begins with a name."""
    text = truncate_to_tokens(row["content"], ROW_TOKENS)
    if not NAMED.match(text):
        who = "you" if row["role"] == "assistant" else (row["speaker"] or "they")
        text = f"{who}: {text}"
    return "\n".join("  > " + line for line in text.splitlines() if line.strip())


def row_where(row: Row) -> str:
    """The provenance of a row: which channel it was said in."""
    return channel_where(row["kind"], row["platform"], row["name"], row["source"])


def _header(first: Row, last: Row, provenance: bool = True) -> str:
    start, end = _date(first["ts"]), _date(last["ts"])
    when = start if start == end else f"{start} to {end}"
    return f"- {when}, {row_where(first)}:" if provenance else f"- {when}:"


def render_span(rows: Sequence[Row], provenance: bool = True) -> str:
    """Neighbouring rows quoted under one header: date (range) and channel (unless a heading
    above gives it)."""
    return (_header(rows[0], rows[-1], provenance) + "\n"
            + "\n".join(row_line(x) for x in rows))


@dataclass
class SpanCost:
    """What a quoted span costs: exactly count_tokens(render_span(rows, provenance) + "\n"),
    from each row's line and header parts computed once (`recall_rank.greedy` asks again and
    again)."""

    fresh: dict[int, Row]  # table index → the row as it is now
    provenance: bool = True  # False: the channel is in a heading above (`heading`)
    lines: dict[int, int] = field(default_factory=dict)  # row → len(line) + 1
    headers: dict[tuple[int, int], int] = field(default_factory=dict)  # (first, last) → chars

    def _line(self, i: int) -> int:
        if i not in self.lines:
            self.lines[i] = len(row_line(self.fresh[i])) + 1
        return self.lines[i]

    def __call__(self, run: tuple[int, ...]) -> int:
        ends = (run[0], run[-1])
        if ends not in self.headers:
            first, last = self.fresh[ends[0]], self.fresh[ends[1]]
            self.headers[ends] = len(_header(first, last, self.provenance)) + 1
        chars = self.headers[ends] + sum(self._line(i) for i in run)
        return -(-chars // 4)


# -- the recaller -----------------------------------------------------------------------------


class Recall:
    """Turn-zero recall over one owner's memory; implements `strata.core.ports.Recaller`."""

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
        # The episode (vector, keyword) searches and the row index run on these connections.
        self.pool = ReaderPool(db, size=4)
        self.index = RowIndex(self.pool, db.dim)
        self.repo = EpisodeRepo(db)
        self.sources: list[CandidateSource] = (
            list(sources) if sources is not None else [EpisodeSource(db, self.pool)]
        )

    async def close(self) -> None:
        await self.pool.close()

    def add_source(self, source: CandidateSource) -> None:
        """Add a candidate source (e.g. facts); its `kind` must be new."""
        if any(s.kind == source.kind for s in self.sources) or source.kind == "window":
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
        q = RecallQuery(
            owner_id=owner_id,
            text=query,
            terms=tuple(terms(query)),
            match=self.db.dialect.keyword_query(query),
            vector=vector,
            now=now,
            k=self.tuning.candidates,
            scan=self.tuning.keyword_scan,
            skip_channel_id=skip_channel_id,
            skip_after_row_id=skip_after_row_id,
        )
        items: list[RecallItem] = []
        considered = 0
        stems = query_stems(query)
        if budget > 0 and (stems or vector is not None):
            items, considered = await self._search(q, stems, budget)
        elapsed = (time.perf_counter() - started) * 1000
        return RecallResult(tuple(items), considered, round(elapsed, 3))

    async def _search(self, q: RecallQuery, stems: list[str],
                      budget: int) -> tuple[list[RecallItem], int]:
        rank = self.tuning.rank
        floor = self.tuning.decay_floor
        (rows, table), found, leaves = await asyncio.gather(
            self.index.table(q.owner_id),
            asyncio.gather(*(source.candidates(q) for source in self.sources)),
            leaf_citations(self.pool, q.owner_id) if floor > 0 or rank.w_salience
            else _no_leaves(),
        )
        mask = np.ones(table.n, dtype=bool)
        if q.skip_channel_id is not None:
            mask &= ~((table.channel == q.skip_channel_id) & (table.ids > q.skip_after_row_id))
        leaf_weight, salience = leaf_signals(leaves, rows.position, table.n, q.now)
        # A row whose citing live leaves have all faded has faded with them; a row no leaf
        # cites yet (a conversation still open) is new and has not.
        faded = leaf_weight < floor
        recency = recency_of(table.minutes, q.now, EPISODE_TAU_DAYS[LEAF])
        ws = window_scores(table, stems, q.vector, mask, recency, rank,
                           np.nan_to_num(salience) if rank.w_salience else None)
        # Extra candidates: left out when every row they cite is a live row that may be
        # quoted (a window); notes about rows left out as already shown still compete.
        extras = [focus(c, ws.idf) for batch in found for c in batch
                  if not (c.cited_rows and all(r in rows.position and mask[rows.position[r]]
                                               for r in c.cited_rows))]
        order = np.argsort(-ws.score, kind="stable")[: rank.pool]
        top = [int(i) for i in order if ws.valid[i]]
        if not top and not extras:
            return [], 0
        # The gate: how far the best window stands out, and how much of the query one passage
        # of memory holds (a note counts as such a passage).
        z, cover = gate_features(table, ws, q.text, stems)
        extra_scores = [self._extra_score(c, ws, rank) for c in extras]
        if extras:
            weights = gate_idf(table, stems)
            cover = max(cover, *(text_coverage(c.text, weights) for c in extras))
        # A name said only in rows since pruned lives on in the notes: not a stranger.
        noted = {w for c in extras for w in surface_words(c.text)}
        if gate_logit(z, cover, unknown_name(q.text, table, noted), rank) < 0:
            return [], len(top) + len(extras)
        wanted = sorted({int(m) for i in top for m in ws.members[i] if m >= 0})
        fresh_rows = await self.index.texts(q.owner_id, [int(table.ids[i]) for i in wanted])
        fresh = {i: fresh_rows[int(table.ids[i])] for i in wanted
                 if int(table.ids[i]) in fresh_rows}
        said = {i: str(row["content"]) for i, row in fresh.items()}
        units = mark_faded(window_units(table, ws, top, said,
                                        *shares_for(table, ws, top, stems, q.vector,
                                                    self.tuning)), faded)
        for j, c in enumerate(extras):
            cited = tuple(rows.position[r] for r in c.cited_rows if r in rows.position)
            units.append(Unit(-1 - j, extra_scores[j], cited, -1,
                              faded=c.kind == EPISODE and c.recency < floor))
        return pack(table, fresh, units, extras, extra_scores, budget,
                    self.tuning), len(top) + len(extras)

    @staticmethod
    def _extra_score(c: Candidate, ws: WindowScores, rank: RankTuning) -> float:
        kw = 0.0
        if ws.bm25_best > 0:
            kw = min(bm25_text(c.text, ws.idf, ws.avg_len) / ws.bm25_best, 1.0)
        return (rank.w_keyword * kw + rank.w_semantic * unit_semantic(c.cosine, ws)
                + rank.w_recency * c.recency + rank.w_salience * c.salience)

    async def touch(self, result: RecallResult, now: datetime) -> None:
        """Refresh "last relevant" of everything `result` injected; quoted rows refresh the
        live episodes that cite them (decay acts on what was actually useful)."""
        quoted = sorted({r for i in result.items if i.kind == "window" for r in i.cited_rows})
        covering = await self.repo.live_citing(quoted) if quoted else []
        for source in self.sources:
            ids = [i.id for i in result.items if i.kind == source.kind]
            if source.kind == EPISODE:
                ids = sorted(set(ids) | set(covering))
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


@dataclass(frozen=True, slots=True)
class LeafCitations:
    """The rows the owner's live leaves cite, each with the citing leaf's last relevant time
    (as stored) and salience; a row two leaves cite comes twice."""

    row_ids: list[int] = field(default_factory=list)
    last_relevant: list[str] = field(default_factory=list)
    salience: list[float] = field(default_factory=list)


async def leaf_citations(reads: Reads, owner_id: int) -> LeafCitations:
    found = await reads.fetchall(
        "SELECT r.row_id, e.last_relevant_at, e.salience FROM episodes e"
        " JOIN episode_rows r ON r.episode_id = e.id"
        " WHERE e.owner_id = ? AND e.level = ? AND e.tombstoned_at IS NULL",
        (owner_id, LEAF))
    return LeafCitations([int(r[0]) for r in found], [str(r[1]) for r in found],
                         [float(r[2]) for r in found])


async def _no_leaves() -> LeafCitations:
    return LeafCitations()


def leaf_signals(leaves: LeafCitations, position: Mapping[int, int], n: int,
                 now: datetime) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per row of the table: the highest decay weight and salience among the live leaves
    citing it; nan for a row no live leaf cites. Each distinct time is parsed once (a leaf's
    rows share it)."""
    weight = np.full(n, np.nan)
    salience = np.full(n, np.nan)
    at = np.fromiter((position.get(r, -1) for r in leaves.row_ids), np.int64,
                     len(leaves.row_ids))
    keep = at >= 0
    if not keep.any():
        return weight, salience
    seen: dict[str, float] = {}
    w = np.fromiter((seen[t] if t in seen else seen.setdefault(
        t, episode_weight(LEAF, from_iso(t), now)) for t in leaves.last_relevant), np.float64,
        len(leaves.last_relevant))
    sal = np.asarray(leaves.salience, dtype=np.float64)
    # fmax ignores the nan a row starts with.
    np.fmax.at(weight, at[keep], w[keep])
    np.fmax.at(salience, at[keep], sal[keep])
    return weight, salience


def mark_faded(units: Sequence[Unit], faded: npt.NDArray[np.bool_]) -> list[Unit]:
    """Windows whose centre row has faded (`faded`, per table row) marked as such."""
    return [replace(u, faded=True) if u.key >= 0 and faded[u.key] else u for u in units]


def focus(c: Candidate, idf: dict[str, float]) -> Candidate:
    """A long note (a roll-up parent) as its sentences that hold the query's words."""
    text = excerpt(c.text, idf, NOTE_TOKENS)
    return c if text == c.text else replace(c, text=text)


def shares_for(table: RowTable, ws: WindowScores, top: Sequence[int], stems: Sequence[str],
               vector: npt.NDArray[np.float32] | None,
               tuning: RecallTuning) -> tuple[dict[int, float] | None, float, int]:
    """What `strata.memory.domain.recall_pack.window_units` trims with: the member rows' own scores,
    the
    margin and how many of the best windows stay whole; no scores when all are whole."""
    if not math.isfinite(tuning.trim_margin):
        return None, math.inf, 0
    rows = sorted({int(m) for i in top for m in ws.members[i] if m >= 0})
    return (row_shares(table, rows, stems, vector, ws, tuning.rank), tuning.trim_margin,
            tuning.trim_after)


def pack(table: RowTable, fresh: dict[int, Row], units: list[Unit],
         extras: Sequence[Candidate], extra_scores: Sequence[float], budget: int,
         tuning: RecallTuning) -> list[RecallItem]:
    """Fill the budget from `units` (windows, then one per extra with key −1 − its position,
    priced here) and render what was chosen as items, best first. With channel headings, the
    heading of every channel a candidate comes from is paid for up front, so the block never
    exceeds the budget whichever of them is used."""
    headings = tuning.channel_headings
    rendered_extras = [render_item(c, not headings) for c in extras]
    costs = [count_tokens(r + "\n") for r in rendered_extras]
    units = [replace(u, cost=costs[-1 - u.key]) if u.key < 0 else u for u in units]
    if headings:
        wheres = {row_where(fresh[r]) for u in units if u.key >= 0 for r in u.rows}
        budget -= sum(map(heading_cost, wheres | {c.where for c in extras}))
    span_cost = SpanCost(fresh, not headings)
    units = above_floor(units, tuning.relative_floor,
                        tuning.faded_floor if tuning.decay_floor > 0 else 0.0)
    if tuning.diversity:
        sel = greedy(units, table, span_cost, budget, tuning.rank, unit_vectors(table, units))
    else:
        sel = rank_order(units, table, span_cost, budget)
    return _items(table, fresh, sel, span_cost, extras, extra_scores, rendered_extras, costs,
                  headings)


def _items(table: RowTable, fresh: dict[int, Row], sel: Selection, span_cost: SpanCost,
           extras: Sequence[Candidate], extra_scores: Sequence[float],
           rendered_extras: Sequence[str], costs: Sequence[int],
           headings: bool) -> list[RecallItem]:
    """The chosen spans and extras as items, best first."""
    out: list[tuple[float, RecallItem]] = []
    for run in spans(table, sel.rows):
        rendered = render_span([fresh[i] for i in run], not headings)
        score = max(sel.order[i] for i in run)
        text = "\n".join(str(fresh[i]["content"]) for i in run)
        ids = tuple(int(table.ids[i]) for i in run)
        out.append((score, RecallItem("window", ids[0], round(score, 4), round(score, 4),
                                      span_cost(run), ids, text, rendered,
                                      row_where(fresh[run[0]]) if headings else "")))
    for j in sel.extras:
        c = extras[j]
        out.append((extra_scores[j], RecallItem(c.kind, c.id, round(extra_scores[j], 4),
                                                round(extra_scores[j], 4), costs[j],
                                                c.cited_rows, c.text, rendered_extras[j],
                                                c.where if headings else "")))
    out.sort(key=lambda x: -x[0])
    return [item for _, item in out]
