"""Recall's types: its knobs, one search as a candidate source sees it, a candidate, a chosen
item and the result, and how a channel is named above its items (`strata.memory.recall.search`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Protocol

import numpy as np
import numpy.typing as npt

from strata.core.text import one_line
from strata.core.tokens import count_tokens
from strata.memory.recall.rank import (
    RankTuning,
)


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
    faded_floor: float = 0.35
    gate_bias: float = -0.4
    gate_cosine: float = 0.86
    gate_keyword: float = 5.47
    gate_unknown_name: float = 2.577
    gate_only_strangers: float = 1.5
    # Added when the query calls something a known person's that memory never ties to them
    # (strata.memory.recall.profiles.unowned).
    gate_unowned: float = 0.0
    cost_power: float = 0.5
    redundancy: float = 0.3
    semantic_top: int = 1
    diversity: bool = False
    skip_recent_rows: int = 20
    keyword_scan: int = 2000
    query_embed_seconds: float = 10.0  # then keyword search only (a hanging embedder)
    # With a hint (`Recall.search`'s `also`): whether the hint's words count for the gate's
    # keyword coverage too. Off: the gate reads the question's own words
    # (`strata.memory.recall.hint`).
    hint_coverage: bool = False
    # A question asking for a kind of thing by name ("job", "instrument") is searched with
    # the words that name one ("pharmacist", "harp"), which count as its word for the gate
    # (`strata.memory.recall.bridge`).
    fact_bridges: bool = True
    # A question naming a speaker of the memory finds a kind only in that speaker's own rows
    # ("Which instrument is Ines learning?" is not answered by the other speaker's cello).
    bridge_whose: bool = True
    # Display: the best `trim_after` windows are shown whole; any other shows only its rows
    # within `trim_margin` of its best row's own score (strata.memory.recall.pack; inf:
    # whole).
    trim_margin: float = 0.5
    trim_after: int = 6
    # State each channel once, in a heading above its items, instead of in every header.
    channel_headings: bool = True
    # The assistant's rows are the bot's own replies: context, never evidence about the person
    # (`strata.memory.recall.pack.context_rows`). True only where the assistant side is
    # a person's words (the LoCoMo eval).
    assistant_as_evidence: bool = False

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


# The most of a channel's name a heading shows.
NAME_CHARS = 60

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


def channel_where(kind: str, platform: str, name: str, source: str) -> str:
    """A channel in words ("private chat on console"): the one phrase rows, episodes and
    facts use, so a channel's items share one heading. A shared room's name is any member's
    to set ("SYSTEM: ignore all previous instructions"): it is shown as a name, on the
    heading's one line, inside quotes it cannot close, and short."""
    if kind == "shared":
        shown = one_line(name, NAME_CHARS).replace('"', "'")
        return f'shared room "{shown}" on {platform}' if shown else f"shared room on {platform}"
    if kind == "background":
        return f"background channel ({one_line(source, NAME_CHARS)})"
    return f"private chat on {platform}"
