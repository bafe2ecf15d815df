"""Facts at turn zero: the data graph as a candidate source of recall
(`strata.memory.recall.search`).

`FactCandidates` finds the owner's live facts for a query — vector kNN over the owner's
partition of `fact_vec` and FTS5 over text and attribute key (`FactRepo.search`) — and hands
them to recall with their raw signals (cosine, bm25), so they are scored, gated, deduplicated
and budgeted with the same blend as episodes and rows: recency is the fact's per-kind decay
weight, salience its confidence. Each is rendered with its provenance: `fact #id (kind)`,
since when, and where it came from; the id lets the model correct it with the
`correct_memory` tool. A superseded or retracted fact has no vector and is filtered from the
keyword search, so it never comes back. A live fact whose kind's decay weight has fallen below
the floor (`strata.memory.rules.decay.fact_visible`: a discovery unused for about two weeks) is
left out too; the decay job deletes it after its kind's grace. Facts belong to the channel's owner,
so a shared room (owned by its own scope) never sees a person's facts. Imports `bot` leaf
modules and `memory`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

from strata.core.types import Channel
from strata.memory.recall.types import Candidate, RecallQuery, channel_where
from strata.memory.rules.decay import fact_visible, fact_weight
from strata.memory.rules.fact_types import Fact, index_text
from strata.memory.store.facts import FactRepo
from strata.memory.store.persons import ChannelRepo

CHANNELS_KEPT = 1024


class FactCandidates:
    """A `strata.memory.recall.types.CandidateSource` of kind "fact"."""

    kind = "fact"

    def __init__(self, repo: FactRepo, channels: ChannelRepo) -> None:
        self.repo = repo
        self.channels = channels
        # The channels facts came from, as found: what a fact's provenance shows of one (kind,
        # platform, name, source) is never updated, ids are never reused and a fact whose
        # channel is deleted loses its `channel_id`, so a warm search reads no channel (a
        # server database pays a round trip each).
        self._known: OrderedDict[int, Channel] = OrderedDict()

    async def where(self, fact: Fact, seen: dict[int, Channel | None] | None = None) -> str:
        """Where the fact came from, in words. `seen`: channels already looked up, by id (a
        search's facts mostly share one or two)."""
        if fact.source == "dmn":
            return "my own reflections"
        if fact.source.startswith("external-agent:"):
            return f"what {fact.source.partition(':')[2]} told me"
        seen = {} if seen is None else seen
        if fact.channel_id and fact.channel_id not in seen:
            seen[fact.channel_id] = await self._channel(fact.channel_id)
        channel = seen.get(fact.channel_id) if fact.channel_id else None
        if channel is None:
            return f"what came in as {fact.source}"
        return channel_where(channel.kind.value, channel.platform, channel.name,
                             channel.source)

    async def _channel(self, channel_id: int) -> Channel | None:
        """The channel, from those known or read (one that is gone is read again)."""
        channel = self._known.get(channel_id)
        if channel is not None:
            self._known.move_to_end(channel_id)
            return channel
        channel = await self.channels.get(channel_id)
        if channel is not None:
            self._known[channel_id] = channel
            if len(self._known) > CHANNELS_KEPT:
                self._known.popitem(last=False)
        return channel

    async def candidates(self, query: RecallQuery) -> list[Candidate]:
        hits = await self.repo.search(query.owner_id, query.text, query.vector, limit=query.k,
                                      match=query.match)
        out = []
        seen: dict[int, Channel | None] = {}
        for hit in hits:
            fact = hit.fact
            if not fact_visible(fact.kind, fact.last_relevant_at, query.now):
                continue  # faded out (its kind's decay): no longer recalled
            url = f" <{fact.url}>" if fact.url else ""
            out.append(Candidate(
                kind=self.kind,
                id=fact.id,
                # With its key in words ("… (home city)"), as it was embedded and indexed.
                text=index_text(fact.text, fact.attribute) + url,
                label=f"fact #{fact.id} ({fact.kind})",
                when=f"since {fact.valid_from.date().isoformat()}",
                where=await self.where(fact, seen),
                recency=fact_weight(fact.kind, fact.last_relevant_at, query.now),
                salience=fact.confidence,
                # No cited rows: a fact is never dropped as "covered" by an episode about the
                # same talk (its id is what the model corrects it by).
                cited_rows=(),
                cosine=hit.cosine,
                bm25=hit.bm25,
            ))
        return out

    async def touch(self, ids: Sequence[int], now: datetime) -> None:
        await self.repo.touch(ids, now)
