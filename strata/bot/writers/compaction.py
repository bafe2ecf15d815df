"""Compaction's model work: the continuity summary of a channel whose un-compacted transcript
is over budget (`strata.memory.lifecycle.compaction.compaction_due`), asked here and stored by
`strata.memory.lifecycle.compaction.store_compaction` (both through `MemoryLifecycle`), which
grounds it or writes the extractive summary instead.

A retryable failure (endpoint down, rate limited, the run's budget spent) stores nothing and is
tried again later, so the watermark never moves without a summary behind it; a request refused
for good (or a malformed response: asking again will not help) gives the extractive summary.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from strata.bot.writers.prompts import compaction as prompt
from strata.core.errors import ModelBadResponseError, ModelError
from strata.core.ports import ChatModel, Clock
from strata.core.types import Channel, Person
from strata.memory.lifecycle.compaction import CompactionPolicy, CompactionResult, CompactionWork
from strata.memory.lifecycle.passes import MemoryLifecycle

log = logging.getLogger(__name__)

COMPACTION = CompactionPolicy()  # the defaults


async def _ask(chat: ChatModel, work: CompactionWork,
               policy: CompactionPolicy) -> tuple[str, list[str]]:
    """The model's summary and the texts it was shown (system prompt first); "" when the
    request was refused for good. A retryable failure raises `ModelError`."""
    messages = prompt.build_messages(work.previous, work.rows, words=policy.summary_words,
                                     budget_tokens=policy.input_tokens)
    shown = [m.content or "" for m in messages]
    try:
        completion = await chat.complete(messages, max_tokens=policy.summary_tokens)
    except ModelError as exc:
        if exc.retryable and not isinstance(exc, ModelBadResponseError):
            raise
        log.warning("channel %s: compaction summary unusable (%s); extractive summary",
                    work.channel_id, exc)
        return "", shown
    summary = completion.text.strip()
    if not summary:
        log.warning("channel %s: the model wrote an empty compaction summary; extractive "
                    "summary", work.channel_id)
    return summary, shown


async def compact_channel(
    memory: MemoryLifecycle,
    chat: ChatModel,
    channel_id: int,
    now: datetime,
    policy: CompactionPolicy = COMPACTION,
) -> CompactionResult:
    """Compact the channel if its un-compacted transcript is over budget (one summary call)."""
    work = await memory.compaction_due(channel_id, policy)
    if isinstance(work, CompactionResult):
        return work
    summary, shown = "", list[str]()
    if policy.use_model:
        try:
            summary, shown = await _ask(chat, work, policy)
        except ModelError as exc:
            log.warning("channel %s: compaction summary failed: %s", channel_id, exc)
            return CompactionResult(channel_id, work.pending_tokens,
                                    error=str(exc) or type(exc).__name__)
    return await memory.store_compaction(work, now, policy, summary, shown)


async def compact_until_under_budget(
    memory: MemoryLifecycle,
    chat: ChatModel,
    channel_id: int,
    now: datetime,
    policy: CompactionPolicy = COMPACTION,
    *,
    max_rounds: int = 20,
) -> list[CompactionResult]:
    """Repeat `compact_channel` (a long imported backlog needs several summaries), stopping at
    the first round that did not compact."""
    results: list[CompactionResult] = []
    for _ in range(max_rounds):
        result = await compact_channel(memory, chat, channel_id, now, policy)
        results.append(result)
        if not result.compacted:
            break
    return results


class CompactionHook:
    """The after-turn compaction check (an `AfterTurn`): one at a time per channel, so two
    quick turns never summarise the same rows twice; after a failed summary the channel waits
    `retry_after` before the next try, so a model that is down is not asked on every turn."""

    def __init__(self, memory: MemoryLifecycle, chat: ChatModel, clock: Clock,
                 policy: CompactionPolicy = COMPACTION,
                 retry_after: timedelta = timedelta(minutes=10),
                 chat_for: Callable[[int], ChatModel] | None = None) -> None:
        self.memory = memory
        self.chat = chat
        # The model as used for one memory owner (the composition root meters it per owner).
        self.chat_for = chat_for
        self.clock = clock
        self.policy = policy
        self.retry_after = retry_after
        self._locks: dict[int, asyncio.Lock] = {}
        self._failed_at: dict[int, datetime] = {}

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        lock = self._locks.setdefault(channel.id, asyncio.Lock())
        async with lock:
            now = self.clock.now()
            failed = self._failed_at.get(channel.id)
            if failed is not None and now - failed < self.retry_after:
                return
            chat = self.chat_for(channel.owner_id) if self.chat_for else self.chat
            result = await compact_channel(self.memory, chat, channel.id, now, self.policy)
            if result.error:
                self._failed_at[channel.id] = now
            else:
                self._failed_at.pop(channel.id, None)
