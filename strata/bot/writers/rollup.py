"""Roll-up's model work: the parent summary of each cluster a due round found
(`strata.memory.lifecycle.rollup.rollup_round`), asked here and stored by
`strata.memory.lifecycle.rollup.store_parent`, which validates and grounds it or writes the
extractive parent instead.

A retryable failure (endpoint down, rate limited, the run's budget spent) or a failed embedding
skips that cluster (its children stay apexes for the next pass); the other clusters go on. A
request refused for good (or a malformed response: asking again will not help) gives the
extractive parent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from strata.bot.writers.prompts import rollup as prompt
from strata.core.errors import ModelBadResponseError, ModelError
from strata.core.ports import ChatModel
from strata.memory.lifecycle.passes import MemoryLifecycle
from strata.memory.lifecycle.rollup import RollupPolicy, RollupResult, parent_children
from strata.memory.store.episodes import Episode
from strata.memory.store.lifecycle import RollupConflictError

log = logging.getLogger(__name__)

ROLLUP = RollupPolicy()  # the defaults


async def _ask(chat: ChatModel, children: Sequence[Episode],
               policy: RollupPolicy) -> tuple[str | None, list[str]]:
    """The model's answer and the children's lines it was shown; None when the request was
    refused for good. A retryable failure raises `ModelError`."""
    lines = prompt.child_lines(children, input_tokens=policy.input_tokens,
                               child_tokens=policy.child_tokens)
    sources = [f"({d}) {t}" for d, t in lines]
    try:
        completion = await chat.complete(
            prompt.build_messages(lines, children[0].level + 1, words=policy.summary_words),
            max_tokens=policy.summary_tokens,
            schema=prompt.RollupAnswer,
        )
    except ModelError as exc:
        if exc.retryable and not isinstance(exc, ModelBadResponseError):
            raise
        log.warning("roll-up summary unusable (%s); writing an extractive parent", exc)
        return None, sources
    return completion.text, sources


async def write_parent(
    memory: MemoryLifecycle,
    chat: ChatModel,
    children: Sequence[Episode],
    now: datetime,
    policy: RollupPolicy = ROLLUP,
) -> int:
    """Summarise `children` into a parent one level up and tombstone them; return its id.

    Raises `ModelError` when a retryable summary call or the embedding fails (nothing is
    written then); an unusable answer or a refused request gives an extractive parent.
    """
    children = parent_children(children, policy)
    answer, sources = (await _ask(chat, children, policy) if policy.use_model else (None, []))
    return await memory.store_parent(children, now, policy, answer, sources, [prompt.SYSTEM])


async def rollup_channel(
    memory: MemoryLifecycle,
    chat: ChatModel,
    channel_id: int,
    level: int,
    now: datetime,
    policy: RollupPolicy = ROLLUP,
) -> RollupResult:
    """One roll-up round over the channel's apexes of `level`, if there are enough of them."""
    due = await memory.rollup_round(channel_id, level, policy)
    if isinstance(due, RollupResult):
        return due
    parents: list[int] = []
    errors: list[str] = []
    tombstoned = 0
    for children in due.chunks:
        try:
            parents.append(await write_parent(memory, chat, children, now, policy))
        except (ModelError, RollupConflictError) as exc:
            log.warning("channel %s: roll-up of %d episodes skipped: %s",
                        channel_id, len(children), exc)
            errors.append(str(exc) or type(exc).__name__)
            continue
        tombstoned += len(children)
    log.info("channel %s: level-%d round: %d clusters, %d noise", channel_id, level,
             due.clusters, due.noise)
    return due.result(parents, tombstoned, errors)
