"""Turn-zero recall: what the bot remembers about a query, before the model sees the turn.

The unit of recall is a short window of the transcript: a row with its neighbours before and
after in the same channel and session, built from the owner's live recallable rows
(`strata.memory.recall.index`) and ranked per query by `strata.memory.recall.rank`:
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

A logistic gate (`strata.memory.recall.gate`) on the best window's cosine (as an excess
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
import time
from collections.abc import Awaitable, Sequence
from datetime import datetime

import numpy as np
import numpy.typing as npt

from strata.core.errors import ModelError
from strata.core.ports import Clock, Embedder
from strata.core.tokens import truncate_to_tokens
from strata.core.types import Channel, Person
from strata.core.words import terms
from strata.memory.recall.bridge import bridged_stems, bridges_for
from strata.memory.recall.focus import focus
from strata.memory.recall.hint import (
    GateWords,
    clean_hints,
    gate_words,
    hinted_stems,
    hinted_text,
    mean_vector,
)
from strata.memory.recall.index import OWNERS_KEPT, OwnerRows, RowIndex, recency_of
from strata.memory.recall.leaves import LeafIndex, leaf_signals, mark_faded, no_leaves
from strata.memory.recall.pack import pack, shares_for, window_units
from strata.memory.recall.profiles import ProfileCache
from strata.memory.recall.rank import (
    RankTuning,
    WindowScores,
    best_first,
    bm25_text,
    quotable,
    unit_semantic,
    window_scores,
)
from strata.memory.recall.select import Unit
from strata.memory.recall.sources import EPISODE, EpisodeSource
from strata.memory.recall.types import (
    Candidate,
    CandidateSource,
    RecallItem,
    RecallQuery,
    RecallResult,
    RecallTuning,
)
from strata.memory.recall.verdict import GateScope, gate_opens
from strata.memory.rules.decay import EPISODE_TAU_DAYS
from strata.memory.rules.row_table import RowTable
from strata.memory.rules.text import query_stems
from strata.memory.store.episodes import LEAF
from strata.memory.store.recall_reads import RecallReads

log = logging.getLogger(__name__)

QUERY_TOKENS = 512


def _drop(loading: asyncio.Future[tuple[OwnerRows, RowTable]] | None) -> None:
    """Cancel a load of an owner's rows nobody waits for any more (its error, if it failed
    already, counts as seen: there is nothing to report it to)."""
    if loading is not None:
        loading.cancel()
        if loading.done() and not loading.cancelled():
            loading.exception()


def _extra_units(extras: list[Candidate], scores: list[float], rows: OwnerRows,
                 floor: float) -> list[Unit]:
    """The extra candidates (notes, facts) as units, by the rows they cite; an episode below the
    decay floor has faded."""
    units = []
    for j, c in enumerate(extras):
        cited = tuple(rows.position[r] for r in c.cited_rows if r in rows.position)
        units.append(Unit(-1 - j, scores[j], cited, -1,
                          faded=c.kind == EPISODE and c.recency < floor))
    return units


class Recall:
    """Turn-zero recall over one owner's memory; implements `strata.core.ports.Recaller`."""

    def __init__(
        self,
        reads: RecallReads,
        embedder: Embedder,
        clock: Clock,
        tuning: RecallTuning | None = None,
        sources: Sequence[CandidateSource] | None = None,
    ) -> None:
        # The episode (vector, keyword) searches and the row index read through `reads`, on
        # connections of their own.
        self.reads = reads
        self.embedder = embedder
        self.clock = clock
        self.tuning = tuning or RecallTuning()
        self.index = RowIndex(reads)
        self.leaves = LeafIndex(reads, OWNERS_KEPT)
        self.profiles = ProfileCache(OWNERS_KEPT)  # what each owner's memory ties to a name
        self.sources: list[CandidateSource] = (
            list(sources) if sources is not None else [EpisodeSource(reads, self.leaves)]
        )

    async def close(self) -> None:
        await self.index.drain()
        await self.reads.close()

    def add_source(self, source: CandidateSource) -> None:
        """Add a candidate source (e.g. facts); its `kind` must be new."""
        if any(s.kind == source.kind for s in self.sources) or source.kind == "window":
            raise ValueError(f"a candidate source of kind {source.kind!r} is already there")
        self.sources.append(source)

    async def embed_query(self, text: str, also: Sequence[str] = ()
                          ) -> npt.NDArray[np.float32] | None:
        """The query's vector, or None (keyword search only) when the embedder fails. With
        `also` (hints, `strata.memory.recall.hint`): the mean of the query's vector and
        theirs, embedded in one call."""
        if not text.strip():
            return None
        texts = [truncate_to_tokens(t, QUERY_TOKENS) for t in (text, *clean_hints(also))]
        try:
            async with asyncio.timeout(self.tuning.query_embed_seconds):
                first, *rest = await self.embedder.embed(texts)
                hints = [v for v in rest if v is not None]
                return mean_vector([first, *hints]) if first is not None and hints else first
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
        also: Sequence[str] = (),
    ) -> RecallResult:
        """Search `owner_id`'s memory for `query` (read only: nothing is touched).

        `vector`: the query's embedding if the caller already has it (else it is computed);
        rows of `skip_channel_id` after `skip_after_row_id` are left out (already in the
        prompt). `also`: lines in the words the answer may have been said in (a hypothetical
        turn); they widen the search, not the gate's words (`strata.memory.recall.hint`).
        """
        also = clean_hints(also)
        now = now or self.clock.now()
        budget = self.tuning.budget_tokens if budget is None else budget
        loading: asyncio.Future[tuple[OwnerRows, RowTable]] | None = None
        if vector is None:
            # A person's first search loads their rows while the query is being embedded.
            loading = asyncio.ensure_future(self.index.table(owner_id)) if budget > 0 else None
            try:
                vector = await self.embed_query(query, also)
            except BaseException:  # cancelled (the turn's deadline): the load goes too
                _drop(loading)
                raise
        started = time.perf_counter()
        q = self._query(owner_id, query, hinted_text(query, also), vector, now,
                        skip_channel_id, skip_after_row_id)
        items: list[RecallItem] = []
        considered = 0
        asked = query_stems(query)
        bridges = bridges_for(asked) if self.tuning.fact_bridges else {}
        stems = bridged_stems(hinted_stems(asked, also), bridges)
        if budget > 0 and (stems or vector is not None):
            items, considered = await self._search(
                q, stems, budget, loading,
                gate_words(asked, also, bridges, self.tuning.hint_coverage))
        else:
            _drop(loading)
        elapsed = (time.perf_counter() - started) * 1000
        return RecallResult(tuple(items), considered, round(elapsed, 3))

    def _query(self, owner_id: int, query: str, words: str,
               vector: npt.NDArray[np.float32] | None, now: datetime,
               skip_channel_id: int | None, skip_after_row_id: int) -> RecallQuery:
        """One search as the candidate sources see it: `words` are the query's and the hints'."""
        return RecallQuery(
            owner_id=owner_id,
            text=query,
            terms=tuple(terms(words)),
            match=self.reads.keyword_query(words),
            vector=vector,
            now=now,
            k=self.tuning.candidates,
            scan=self.tuning.keyword_scan,
            skip_channel_id=skip_channel_id,
            skip_after_row_id=skip_after_row_id,
        )

    async def _search(self, q: RecallQuery, stems: list[str], budget: int,
                      loading: Awaitable[tuple[OwnerRows, RowTable]] | None = None,
                      gate: GateWords | None = None) -> tuple[list[RecallItem], int]:
        """`loading`: the owner's rows, being loaded already; `gate`: see `gate_words`."""
        rank = self.tuning.rank
        floor = self.tuning.decay_floor
        (rows, table), found, leaves = await asyncio.gather(
            self.index.table(q.owner_id) if loading is None else loading,
            asyncio.gather(*(source.candidates(q) for source in self.sources)),
            self.leaves.citations(q.owner_id) if floor > 0 or rank.w_salience
            else no_leaves(),
        )
        mask = np.ones(table.n, dtype=bool)
        if q.skip_channel_id is not None:
            mask &= ~((table.channel == q.skip_channel_id) & (table.ids > q.skip_after_row_id))
        leaf_weight, salience = leaf_signals(leaves, table.ids, q.now)
        # A row whose citing live leaves have all faded has faded with them; a row no leaf
        # cites yet (a conversation still open) is new and has not.
        faded = leaf_weight < floor
        recency = recency_of(table.minutes, q.now, EPISODE_TAU_DAYS[LEAF])
        ws = window_scores(table, stems, q.vector, mask, recency, rank,
                           np.nan_to_num(salience) if rank.w_salience else None,
                           self._scored(table, mask))
        # Extra candidates: left out when every row they cite is a live row that may be
        # quoted (a window); notes about rows left out as already shown still compete.
        every = [c for batch in found for c in batch]
        extras = [focus(c, ws.idf) for c, covered in
                  zip(every, quotable(table, mask, [c.cited_rows for c in every]), strict=True)
                  if not covered]
        order = best_first(ws.score, rank.pool)
        top = [int(i) for i in order if ws.valid[i]]
        if not top and not extras:
            return [], 0
        extra_scores = [self._extra_score(c, ws, rank) for c in extras]
        scope = GateScope(gate, mask, recency)
        if not gate_opens(q, stems, rows, table, ws, extras, scope, self.tuning, self.profiles):
            return [], len(top) + len(extras)
        wanted = sorted({int(m) for i in top for m in ws.members[i] if m >= 0})
        fresh_rows = await self.index.texts(q.owner_id, [int(table.ids[i]) for i in wanted])
        fresh = {i: fresh_rows[int(table.ids[i])] for i in wanted
                 if int(table.ids[i]) in fresh_rows}
        said = {i: str(row["content"]) for i, row in fresh.items()}
        units = mark_faded(window_units(table, ws, top, said,
                                        *shares_for(table, ws, top, stems, q.vector,
                                                    self.tuning)), faded)
        units += _extra_units(extras, extra_scores, rows, floor)
        return pack(table, fresh, units, extras, extra_scores, budget,
                    self.tuning), len(top) + len(extras)

    def _scored(self, table: RowTable, mask: npt.NDArray[np.bool_]
                ) -> npt.NDArray[np.bool_] | None:
        """The rows whose words count (None: all of `mask`). The bot's replies, and the
        person's questions about themselves that they answered, are no evidence about the
        person; a question of the bot's that the person answered next is context, and counts
        for the answer's window."""
        if self.tuning.assistant_as_evidence:
            return None
        return mask & ~table.asked_bot & (~table.bot | table.lead_in)

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
        covering = await self.reads.episodes.live_citing(quoted) if quoted else []
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
        value = await self.reads.transcript.nth_newest_message(channel_id, n)
        return value if value is not None else 0

    async def recall(
        self, *, channel: Channel, person: Person, query: str,
        shown_from_row_id: int | None = None, also: Sequence[str] = (),
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
            also=also,
        )
        if result.items:
            await self.touch(result, now)
            log.debug("recall: %d items, %d tokens, %.1f ms", len(result.items),
                      result.tokens, result.elapsed_ms)
        return result.render()


