"""Episode roll-up (docs/lifecycle.md §2): when a channel has ≥ 50 apex leaves (or ≥ 25 level-1
apexes) their embeddings are clustered (strata.memory.lifecycle.clustering) and each cluster gets a
parent episode one level up: a summary of its children, salience and emotion from the
children, its own embedding (of its summary). The parent does NOT inherit the children's row
citations: its provenance is the link to its children (their `parent_id`, its `child_count`) and
the span and channel it covers (`started_at`/`ended_at`, `channel_id`), which survive when the
children are deleted. Only live leaves cite rows, so once a leaf is rolled up its rows below the
watermark can be pruned (strata.memory.store.forgetting.prune): the parent, the continuity summary
and the facts carry the meaning forward. The children are tombstoned in the same transaction (kept
for provenance, hidden from recall, deleted by the janitor after 30 days). Noise points are never
forced into a cluster: they stay apexes for the next round. Rounds are triggered by
counts only, never by a similarity score (`rollup_round`).

Summaries: the model's is asked by its writer (`strata.bot.writers.rollup`) and reaches the
store only through `store_parent`: it must validate as `RollupAnswer` and pass the grounding
rule. Without one (`use_model` off, an unusable or refused answer) the parent is extractive: the
children's most distinct sentences within the word budget. Imports no model.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from strata.core.model_json import read_model_json
from strata.core.ports import Embedder
from strata.core.tokens import truncate_to_tokens
from strata.memory.checks import grounding
from strata.memory.lifecycle.clustering import ClusterParams, cluster_labels
from strata.memory.lifecycle.compaction import CompactionPolicy
from strata.memory.rules.extractive import summarise
from strata.memory.rules.text import is_markup
from strata.memory.store.episodes import ERA, LEAF, TOPIC, Episode, NewEpisode
from strata.memory.store.lifecycle import LifecycleStore

log = logging.getLogger(__name__)


# A child's line in the roll-up prompt at its shortest: number, date range and a few words.
LINE_TOKENS_MIN = 24


@dataclass(frozen=True, slots=True)
class RollupPolicy:
    leaf_round_at: int = 50  # apex leaves in a channel that start a leaf round
    era_round_at: int = 25  # level-1 apexes in a channel that start an era round
    cluster: ClusterParams = field(default_factory=ClusterParams)
    summary_words: int = 180
    # Without a model a parent keeps this share of its children's words, their most distinct
    # sentences (at least 2 × summary_words, at most extractive_max_words): what it drops is
    # gone once the children's rows are pruned. A long parent costs recall no budget: recall
    # shows it by its sentences that hold the query's words (strata.memory.recall.focus).
    extractive_share: float = 0.5
    extractive_max_words: int = 1500
    summary_tokens: int = 500  # max_tokens of one parent summary
    child_tokens: int = 200  # each child's summary is cut to this in the prompt
    input_tokens: int = 6000  # ... and all of them together to about this (one call's input)

    @property
    def max_children(self) -> int:
        """The most children one parent summary call can take within `input_tokens` (each
        line costs its date range and a few words at least); a larger cluster is split."""
        return max(self.input_tokens // LINE_TOKENS_MIN, 2)
    use_model: bool = True  # False: extractive parents (the children's summaries, cut), no model

    def threshold(self, level: int) -> int | None:
        """How many apexes of `level` start a round (None: that level never rolls up)."""
        return {LEAF: self.leaf_round_at, TOPIC: self.era_round_at}.get(level)


@dataclass(frozen=True, slots=True)
class RollupResult:
    """What one roll-up round (one channel, one level) did."""

    channel_id: int
    level: int  # the children's level
    apexes: int  # apexes of that level before the round
    ran: bool = False  # False: below the threshold, nothing clustered
    clusters: int = 0  # clusters found
    parents: tuple[int, ...] = ()  # parent episodes written (level + 1)
    tombstoned: int = 0  # children tombstoned
    noise: int = 0  # apexes left as noise
    errors: tuple[str, ...] = ()  # clusters skipped because the model failed
    seconds: float = 0.0

    def line(self) -> str:
        name = {LEAF: "leaf", TOPIC: "era"}.get(self.level, str(self.level))
        if not self.ran:
            return (f"channel {self.channel_id}: {self.apexes} level-{self.level} apexes,"
                    f" no {name} round")
        text = (f"channel {self.channel_id}: {name} round over {self.apexes} apexes: "
                f"{self.clusters} clusters, {len(self.parents)} parents written, "
                f"{self.tombstoned} children tombstoned, {self.noise} noise kept as apexes")
        if self.errors:
            text += f", {len(self.errors)} clusters skipped ({self.errors[0]})"
        return text + f" [{self.seconds:.1f}s]"


def _emotion(children: Sequence[Episode]) -> tuple[str, float]:
    """The emotion carrying the most intensity across the children, and its mean intensity."""
    weight: dict[str, float] = {}
    for c in children:
        weight[c.emotion] = weight.get(c.emotion, 0.0) + c.emotion_intensity
    emotion, total = max(weight.items(), key=lambda kv: kv[1])
    count = sum(1 for c in children if c.emotion == emotion)
    return emotion, total / count if count else 0.0


def _salience(children: Sequence[Episode]) -> float:
    """A parent is as salient as its most salient child, nudged up by how much it gathers."""
    top = max(c.salience for c in children)
    mean = sum(c.salience for c in children) / len(children)
    return min(1.0, 0.7 * top + 0.3 * mean + 0.01 * len(children))


class RollupAnswer(BaseModel):
    """The shape of the model's parent summary (requested as its JSON schema)."""

    model_config = ConfigDict(extra="ignore")

    summary: str = Field(min_length=1)
    key_terms: list[str] = []


def parse_answer(text: str) -> tuple[str, str] | None:
    """(summary, key terms as one space-separated string), or None when the answer does not
    fit the schema (not JSON, another shape, an empty summary): never store that as memory."""
    answer = read_model_json(text, RollupAnswer).value
    if answer is None:
        return None
    summary = " ".join(answer.summary.split())
    if not summary or is_markup(summary):
        return None
    terms = " ".join(t.strip() for t in answer.key_terms[:8] if t.strip())
    return summary, terms


def extractive(summaries: Sequence[str], key_terms: Sequence[str], *,
               words: int = 360) -> tuple[str, str]:
    """A parent summary without a model: the children's most distinct sentences (MMR, see
    `strata.memory.rules.extractive`) within about `words` words, in time order; key terms are the
    children's most frequent ones."""
    counts: dict[str, int] = {}
    for terms in key_terms:
        for term in terms.split():
            counts[term] = counts.get(term, 0) + 1
    top = sorted(counts, key=lambda t: (-counts[t], t))[:8]
    return summarise(summaries, words), " ".join(top)


def extractive_words(child_words: int, policy: RollupPolicy) -> int:
    """The word budget of an extractive parent of children with `child_words` words."""
    share = round(policy.extractive_share * child_words)
    return max(policy.summary_words * 2, min(policy.extractive_max_words, share))


def parent_children(children: Sequence[Episode], policy: RollupPolicy) -> list[Episode]:
    """`children` in time order, checked to fit one parent summary call."""
    ordered = sorted(children, key=lambda e: (e.started_at, e.id))
    if len(ordered) > policy.max_children:
        raise ValueError(f"{len(ordered)} children for one parent; at most "
                         f"{policy.max_children} fit in input_tokens={policy.input_tokens}")
    return ordered


async def _grounded(store: LifecycleStore, children: Sequence[Episode], answer: str,
                    sources: Sequence[str], prompt: Sequence[str], policy: RollupPolicy,
                    now: datetime) -> tuple[str, str] | None:
    """The model's (summary, key terms) when its answer fits the schema and the grounding rule
    passes it against the children's lines it was shown (`sources`); else None."""
    parsed = parse_answer(answer)
    # What the model wrote may quote a person's words: only DEBUG logs may carry it (a
    # forget cannot reach a log file).
    if parsed is None:
        log.warning("roll-up summary does not fit the schema; writing an extractive parent")
        log.debug("the roll-up answer: %r", answer[:200])
        return None
    summary, terms = parsed
    refusal = grounding.check_summary(summary, sources, layer=grounding.ROLLUP, prompt=prompt)
    if refusal is not None:
        log.warning("roll-up summary refused (%s); writing an extractive parent", refusal.reason)
        await store.record_refusals(children[0].owner_id, [refusal], now)
        return None
    # A model that ignores max_tokens must not store a huge summary either.
    return truncate_to_tokens(summary, policy.summary_tokens), terms


def _parent(children: Sequence[Episode], summary: str, terms: str, method: str) -> NewEpisode:
    emotion, intensity = _emotion(children)
    return NewEpisode(
        owner_id=children[0].owner_id,
        channel_id=children[0].channel_id,
        summary=summary,
        source=children[0].source,
        started_at=min(c.started_at for c in children),
        ended_at=max(c.ended_at for c in children),
        row_ids=(),  # provenance is the children and the span, not their rows
        level=children[0].level + 1,
        key_terms=terms,
        salience=_salience(children),
        emotion=emotion,
        emotion_intensity=intensity,
        method=method,
        child_count=len(children),
    )


async def store_parent(
    store: LifecycleStore,
    embedder: Embedder,
    children: Sequence[Episode],
    now: datetime,
    policy: RollupPolicy = RollupPolicy(),
    answer: str | None = None,
    sources: Sequence[str] = (),
    prompt: Sequence[str] = (),
) -> int:
    """Write the parent of `children` one level up and tombstone them; return its id.

    `answer` is the model's (written from `sources` under `prompt`): it is stored only
    through the schema and the grounding rule, else (or without one) the parent is
    extractive. Raises `ModelError` when the embedding fails (nothing is written then), and
    `RollupConflictError` when a child changed meanwhile.
    """
    children = parent_children(children, policy)
    parsed = (await _grounded(store, children, answer, sources, prompt, policy, now)
              if answer is not None else None)
    if parsed is not None:
        (summary, terms), method = parsed, "llm"
    else:
        summary, terms = extractive(
            [c.summary for c in children], [c.key_terms for c in children],
            words=extractive_words(sum(len(c.summary.split()) for c in children), policy))
        method = "extractive"
    embedding = (await embedder.embed([summary]))[0]
    return await store.add_parent(_parent(children, summary, terms, method),
                                  np.asarray(embedding), [c.id for c in children], now)


@dataclass(frozen=True, slots=True)
class RollupRound:
    """A round that is due: the clusters found, as the children of each parent to write
    (a cluster too big for one summary call is several, time-ordered)."""

    channel_id: int
    level: int
    apexes: int
    clusters: int
    noise: int
    chunks: tuple[tuple[Episode, ...], ...]
    started: float  # perf_counter() when the round began

    def result(self, parents: Sequence[int], tombstoned: int,
               errors: Sequence[str]) -> RollupResult:
        """What the round did once its parents were written."""
        return RollupResult(self.channel_id, self.level, self.apexes, True, self.clusters,
                            tuple(parents), tombstoned, self.noise, tuple(errors),
                            time.perf_counter() - self.started)


async def rollup_round(store: LifecycleStore, channel_id: int, level: int,
                       policy: RollupPolicy = RollupPolicy()) -> RollupRound | RollupResult:
    """Cluster the channel's apexes of `level` if there are enough of them (a `RollupRound`),
    else the result of a round that did not run."""
    apexes = await store.apexes(channel_id, level)
    threshold = policy.threshold(level)
    if threshold is None or level >= ERA or len(apexes) < threshold:
        return RollupResult(channel_id, level, len(apexes))
    started = time.perf_counter()
    vectors = await store.embeddings([e.id for e in apexes])
    # CPU-bound (UMAP, HDBSCAN): off the event loop so turns keep flowing meanwhile.
    labels = await asyncio.to_thread(cluster_labels, vectors, policy.cluster)
    groups: dict[int, list[Episode]] = {}
    for episode, label in zip(apexes, labels.tolist(), strict=True):
        if label >= 0:
            groups.setdefault(label, []).append(episode)
    chunks = tuple(tuple(ordered[i:i + policy.max_children])
                   for label in sorted(groups)
                   for ordered in [sorted(groups[label], key=lambda e: (e.started_at, e.id))]
                   for i in range(0, len(ordered), policy.max_children))
    return RollupRound(channel_id, level, len(apexes), len(groups), int((labels < 0).sum()),
                       chunks, started)


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    rollup: RollupPolicy = field(default_factory=RollupPolicy)
