"""Episode roll-up (docs/lifecycle.md §2): when a channel has ≥ 50 apex leaves (or ≥ 25 level-1
apexes) their embeddings are clustered (strata.memory.lifecycle.clustering) and each cluster gets a
parent episode one level up: a model-written summary of its children, salience and emotion from the
children, its own embedding (of its summary). The parent does NOT inherit the children's row
citations: its provenance is the link to its children (their `parent_id`, its `child_count`)
and the span and channel it covers (`started_at`/`ended_at`, `channel_id`), which survive
when the children are deleted. Only live leaves cite rows, so once a leaf is rolled up its rows
below the watermark can be pruned (strata.memory.store.prune): the parent, the continuity summary
and the facts carry the meaning forward. The children are tombstoned in the same transaction (kept
for provenance, hidden from recall, deleted by the janitor after 30 days). Noise points are
never forced into a cluster: they stay apexes for the next round. Rounds are triggered by
counts only, never by a similarity score. `consolidate_owner` runs a person's whole
consolidate pass: compaction of each channel, then the rounds.

Summaries: with `use_model` off, or when the model answers something that does not fit the
summary schema (strata.memory.domain.prompts.rollup), or fails for good (a refused request or a
malformed response: asking again will not help), the parent is extractive: the children's most
distinct sentences within the word budget. A retryable failure (endpoint down, rate limited) or a
failed embedding skips that cluster (its children stay apexes for the next pass); the other
clusters go on. Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from strata.core.clock import to_iso
from strata.core.errors import ModelBadResponseError, ModelError, StrataError
from strata.core.ports import ChatModel, Embedder
from strata.core.tokens import count_tokens, share_budget, truncate_to_tokens
from strata.memory.checks import grounding
from strata.memory.domain.prompts import rollup as prompt
from strata.memory.engines.db import Database, placeholders
from strata.memory.lifecycle.clustering import ClusterParams, cluster_labels
from strata.memory.lifecycle.compaction import (
    CompactionPolicy,
    CompactionResult,
    compact_until_under_budget,
)
from strata.memory.rules.profiles import profile_for
from strata.memory.store.episodes import (
    ERA,
    LEAF,
    TOPIC,
    Episode,
    EpisodeRepo,
    NewEpisode,
    insert_episode,
)
from strata.memory.store.refusals import RefusalRepo

log = logging.getLogger(__name__)


class RollupConflictError(StrataError):
    """A child was tombstoned or re-parented by someone else while its parent was written."""


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


async def _model_summary(db: Database, chat: ChatModel, children: Sequence[Episode], level: int,
                         policy: RollupPolicy, now: datetime) -> tuple[str, str] | None:
    """The model's (summary, key terms), or None when its answer does not fit the schema or
    the request was refused for good (the caller then writes the extractive parent)."""
    dates = [f"{c.started_at:%Y-%m-%d} – {c.ended_at:%Y-%m-%d}" for c in children]
    room = policy.input_tokens - sum(count_tokens(f"{i}. ({d}) ") for i, d in enumerate(dates, 1))
    texts = share_budget([truncate_to_tokens(c.summary, policy.child_tokens) for c in children],
                         room)
    lines = list(zip(dates, texts, strict=True))
    try:
        completion = await chat.complete(
            prompt.build_messages(lines, level, words=policy.summary_words),
            max_tokens=policy.summary_tokens,
            schema=prompt.RollupAnswer,
        )
    except ModelError as exc:
        if exc.retryable and not isinstance(exc, ModelBadResponseError):
            raise
        log.warning("roll-up summary unusable (%s); writing an extractive parent", exc)
        return None
    parsed = prompt.parse_answer(completion.text)
    # What the model wrote may quote a person's words: only DEBUG logs may carry it (a
    # forget cannot reach a log file).
    if parsed is None:
        log.warning("roll-up summary does not fit the schema; writing an extractive parent")
        log.debug("the roll-up answer: %r", completion.text[:200])
        return None
    # A model that ignores max_tokens must not store a huge summary either.
    summary, terms = parsed
    refusal = grounding.check_summary(summary, [f"({d}) {t}" for d, t in lines],
                                      layer=grounding.ROLLUP, prompt=[prompt.SYSTEM])
    if refusal is not None:
        log.warning("roll-up summary refused (%s); writing an extractive parent", refusal.reason)
        await RefusalRepo(db).record(children[0].owner_id, [refusal], now)
        return None
    return truncate_to_tokens(summary, policy.summary_tokens), terms


def extractive_words(child_words: int, policy: RollupPolicy) -> int:
    """The word budget of an extractive parent of children with `child_words` words."""
    share = round(policy.extractive_share * child_words)
    return max(policy.summary_words * 2, min(policy.extractive_max_words, share))


async def write_parent(
    db: Database,
    chat: ChatModel,
    embedder: Embedder,
    children: Sequence[Episode],
    now: datetime,
    policy: RollupPolicy = RollupPolicy(),
) -> int:
    """Summarise `children` into a parent one level up and tombstone them; return its id.

    Raises `ModelError` when a retryable summary call or the embedding fails (nothing is
    written then); an unusable answer or a refused request gives an extractive parent.
    """
    children = sorted(children, key=lambda e: (e.started_at, e.id))
    if len(children) > policy.max_children:
        raise ValueError(f"{len(children)} children for one parent; at most "
                         f"{policy.max_children} fit in input_tokens={policy.input_tokens}")
    level = children[0].level + 1
    parsed = (await _model_summary(db, chat, children, level, policy, now)
              if policy.use_model else None)
    if parsed is not None:
        (summary, terms), method = parsed, "llm"
    else:
        summary, terms = prompt.extractive(
            [c.summary for c in children], [c.key_terms for c in children],
            words=extractive_words(sum(len(c.summary.split()) for c in children), policy))
        method = "extractive"
    embedding = (await embedder.embed([summary]))[0]
    ids = [c.id for c in children]
    emotion, intensity = _emotion(children)
    new = NewEpisode(
        owner_id=children[0].owner_id,
        channel_id=children[0].channel_id,
        summary=summary,
        source=children[0].source,
        started_at=min(c.started_at for c in children),
        ended_at=max(c.ended_at for c in children),
        row_ids=(),  # provenance is the children and the span, not their rows
        level=level,
        key_terms=terms,
        salience=_salience(children),
        emotion=emotion,
        emotion_intensity=intensity,
        method=method,
        child_count=len(children),
    )
    marks = placeholders(ids)
    async with db.write() as conn:
        parent_id = await insert_episode(conn, new, np.asarray(embedding), now, db.dim)
        cur = await conn.execute(
            f"UPDATE episodes SET parent_id = ?, tombstoned_at = ? WHERE id IN ({marks})"
            " AND parent_id IS NULL AND tombstoned_at IS NULL",
            (parent_id, to_iso(now), *ids),
        )
        if cur.rowcount != len(ids):
            # Someone else (a /forget, a concurrent round) changed a child meanwhile.
            raise RollupConflictError("the children changed while their parent was written")
    return parent_id


async def rollup_channel(
    db: Database,
    chat: ChatModel,
    embedder: Embedder,
    channel_id: int,
    level: int,
    now: datetime,
    policy: RollupPolicy = RollupPolicy(),
) -> RollupResult:
    """One roll-up round over the channel's apexes of `level`, if there are enough of them."""
    repo = EpisodeRepo(db)
    apexes = await repo.apexes(channel_id, level)
    threshold = policy.threshold(level)
    if threshold is None or level >= ERA or len(apexes) < threshold:
        return RollupResult(channel_id, level, len(apexes))
    started = time.perf_counter()
    vectors = await repo.embeddings([e.id for e in apexes])
    # CPU-bound (UMAP, HDBSCAN): off the event loop so turns keep flowing meanwhile.
    labels = await asyncio.to_thread(cluster_labels, vectors, policy.cluster)
    groups: dict[int, list[Episode]] = {}
    for episode, label in zip(apexes, labels.tolist(), strict=True):
        if label >= 0:
            groups.setdefault(label, []).append(episode)
    parents: list[int] = []
    errors: list[str] = []
    tombstoned = 0
    # A cluster too big for one summary call becomes several parents (time-ordered chunks).
    chunks = [ordered[i:i + policy.max_children]
              for label in sorted(groups)
              for ordered in [sorted(groups[label], key=lambda e: (e.started_at, e.id))]
              for i in range(0, len(ordered), policy.max_children)]
    for children in chunks:
        try:
            parents.append(await write_parent(db, chat, embedder, children, now, policy))
        except (ModelError, RollupConflictError) as exc:
            log.warning("channel %s: roll-up of %d episodes skipped: %s",
                        channel_id, len(children), exc)
            errors.append(str(exc) or type(exc).__name__)
            continue
        tombstoned += len(children)
    noise = int((labels < 0).sum())
    log.info("channel %s: level-%d round: %d clusters, %d noise", channel_id, level,
             len(groups), noise)
    return RollupResult(channel_id, level, len(apexes), True, len(groups), tuple(parents),
                        tombstoned, noise, tuple(errors), time.perf_counter() - started)


@dataclass(frozen=True, slots=True)
class LifecyclePolicy:
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)
    rollup: RollupPolicy = field(default_factory=RollupPolicy)


@dataclass(frozen=True, slots=True)
class ConsolidateResult:
    """What one consolidate pass over one person did."""

    owner_id: int
    compactions: tuple[CompactionResult, ...] = ()
    rounds: tuple[RollupResult, ...] = ()

    @property
    def clusters(self) -> int:
        return sum(r.clusters for r in self.rounds)

    @property
    def parents(self) -> int:
        return sum(len(r.parents) for r in self.rounds)

    @property
    def tombstoned(self) -> int:
        return sum(r.tombstoned for r in self.rounds)

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(e for r in self.rounds for e in r.errors) + tuple(
            c.error for c in self.compactions if c.error
        )

    def summary(self) -> str:
        compacted = sum(1 for c in self.compactions if c.compacted)
        text = (f"{self.clusters} clusters, {self.parents} parents, {self.tombstoned} episodes "
                f"tombstoned, {compacted} compactions")
        return text + (f", {len(self.errors)} errors" if self.errors else "")

    def __str__(self) -> str:
        return self.summary()

    def lines(self) -> list[str]:
        out = [c.line() for c in self.compactions if c.compacted or c.error]
        out += [r.line() for r in self.rounds]
        out.append(f"clusters formed: {self.clusters}, parents written: {self.parents}, "
                   f"episodes tombstoned: {self.tombstoned}")
        return out


async def consolidate_owner(
    db: Database,
    chat: ChatModel,
    embedder: Embedder,
    owner_id: int,
    now: datetime,
    policy: LifecyclePolicy = LifecyclePolicy(),
) -> ConsolidateResult:
    """Compact each of the owner's channels, then run the roll-up rounds where due."""
    channels = await db.fetchall(
        "SELECT id, source FROM channels WHERE owner_id = ? ORDER BY id", (owner_id,)
    )
    compactions: list[CompactionResult] = []
    rounds: list[RollupResult] = []
    for channel_id, source in channels:
        compactions += await compact_until_under_budget(
            db, chat, channel_id, now, policy.compaction
        )
        if not profile_for(source).episodes:
            continue
        for level in (LEAF, TOPIC):  # leaf first: its parents may complete an era round
            rounds.append(
                await rollup_channel(db, chat, embedder, channel_id, level, now, policy.rollup)
            )
    return ConsolidateResult(owner_id, tuple(compactions), tuple(rounds))




# The name the background runner's consolidate job calls.
rollup_owner = consolidate_owner
