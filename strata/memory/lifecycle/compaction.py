"""Compaction: when a channel's un-compacted transcript grows past a token budget, the model
writes a continuity summary that folds in the previous one; it is stored as a compaction row
that becomes the channel's history watermark (docs/memory.md).

The summary covers the oldest rows after the current watermark, up to a turn boundary, and
leaves a recent tail verbatim. Without a model (`use_model` off), or when the model answers
with nothing usable (an empty or malformed answer) or refuses the request for good, the
summary is extractive: the most distinct sentences of the previous summary and the new rows
(strata.memory.rules.extractive), so the watermark still advances and pruning can follow. A
retryable failure (endpoint down, rate limited) stores nothing and is tried again later, so the
watermark never moves without a summary behind it. Compaction rows are never deleted and are never
recall candidates (they are `kind = 'compaction'` with the muted source `compaction`).
Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from strata.core.clock import to_iso
from strata.core.errors import ModelBadResponseError, ModelError
from strata.core.ports import ChatModel, Clock
from strata.core.tokens import count_tokens
from strata.core.types import Channel, Person, Role, RowKind, TranscriptRow
from strata.memory.checks import grounding
from strata.memory.domain.prompts import compaction as prompt
from strata.memory.engines.db import Database
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import row_from_db, watermark

log = logging.getLogger(__name__)

# The source of compaction rows: not in the source-profile allowlist, so nothing (episodes,
# facts, patterns) is ever derived from a summary.
COMPACTION_SOURCE = "compaction"


@dataclass(frozen=True, slots=True)
class CompactionPolicy:
    """When and how much to compact (tokens counted as in `strata.core.tokens`)."""

    trigger_tokens: int = 2400  # compact when the rows after the watermark exceed this
    keep_tokens: int = 800  # ... leaving about this much of the newest talk verbatim
    input_tokens: int = 6000  # at most this much transcript per summary call
    summary_words: int = 250
    summary_tokens: int = 600  # max_tokens of the summary call
    use_model: bool = True  # False: extractive summaries, no model call


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What one compaction check did on one channel."""

    channel_id: int
    pending_tokens: int  # un-compacted tokens before the check
    compacted: bool = False
    row_id: int | None = None  # the new compaction row
    covers_to: int | None = None  # the new watermark
    rows_covered: int = 0
    error: str | None = None

    def line(self) -> str:
        if self.error:
            return f"channel {self.channel_id}: compaction failed ({self.error}); watermark kept"
        if not self.compacted:
            return f"channel {self.channel_id}: {self.pending_tokens} tokens pending, no compaction"
        return (f"channel {self.channel_id}: compacted {self.rows_covered} rows up to row "
                f"{self.covers_to}")


def _tokens(row: TranscriptRow) -> int:
    return count_tokens(row.content) if row.kind is RowKind.MESSAGE else 0


def choose_rows(rows: list[TranscriptRow], policy: CompactionPolicy) -> list[TranscriptRow]:
    """The oldest rows to fold into the summary: up to `input_tokens`, leaving at least
    `keep_tokens` of the newest talk, always ending on a whole turn."""
    total = sum(_tokens(r) for r in rows)
    taken = 0
    end = 0
    while (end < len(rows) and taken < policy.input_tokens
           and total - taken - _tokens(rows[end]) >= policy.keep_tokens):
        taken += _tokens(rows[end])
        end += 1
    # Never split a turn (a reply without its question misleads the model): back off to the
    # start of the turn, so at least `keep_tokens` stay verbatim; a single turn that is over
    # the budget on its own is taken whole.
    cut = end
    while 0 < cut < len(rows) and rows[cut].turn_id == rows[cut - 1].turn_id:
        cut -= 1
    if cut == 0:
        cut = max(end, 1)
        while 0 < cut < len(rows) and rows[cut].turn_id == rows[cut - 1].turn_id:
            cut += 1
    return rows[:cut]


async def pending_rows(db: Database, channel_id: int, after_id: int) -> list[TranscriptRow]:
    rows = await db.fetchall(
        "SELECT * FROM transcript WHERE channel_id = ? AND id > ? AND kind != 'compaction'"
        " ORDER BY id",
        (channel_id, after_id),
    )
    return [row_from_db(r) for r in rows]


async def _model_summary(db: Database, chat: ChatModel, channel_id: int, previous: str | None,
                         chosen: list[TranscriptRow], policy: CompactionPolicy,
                         now: datetime) -> str:
    """The model's summary, or "" when its answer is unusable (empty, malformed, refused by the
    grounding rule) or the request was refused for good: the caller then writes the extractive
    one. A retryable failure
    raises `ModelError` (nothing is stored; the next check tries again)."""
    messages = prompt.build_messages(previous, chosen, words=policy.summary_words,
                                     budget_tokens=policy.input_tokens)
    try:
        completion = await chat.complete(messages, max_tokens=policy.summary_tokens)
    except ModelError as exc:
        if exc.retryable and not isinstance(exc, ModelBadResponseError):
            raise
        log.warning("channel %s: compaction summary unusable (%s); extractive summary",
                    channel_id, exc)
        return ""
    summary = completion.text.strip()
    if not summary:
        log.warning("channel %s: the model wrote an empty compaction summary; extractive "
                    "summary", channel_id)
        return ""
    # The summary replaces the rows in every later prompt: it must not say what the text it
    # was shown (the previous summary and the rows, as cut to the budget) lacks.
    shown = [m.content or "" for m in messages]
    refusal = grounding.check_summary(summary, shown[1:], layer=grounding.CONTINUITY,
                                      prompt=shown[:1])
    if refusal is not None:
        log.warning("channel %s: compaction summary refused (%s); extractive summary",
                    channel_id, refusal.reason)
        await RefusalRepo(db).record(chosen[0].owner_id, [refusal], now)
        return ""
    return summary


async def compact_channel(
    db: Database,
    chat: ChatModel,
    channel_id: int,
    now: datetime,
    policy: CompactionPolicy = CompactionPolicy(),
) -> CompactionResult:
    """Compact the channel if its un-compacted transcript is over budget (one summary call)."""
    mark = await watermark(db, channel_id)
    previous, after = (mark[0].content, mark[1]) if mark else (None, 0)
    rows = await pending_rows(db, channel_id, after)
    pending = sum(_tokens(r) for r in rows)
    if pending <= policy.trigger_tokens:
        return CompactionResult(channel_id, pending)
    chosen = choose_rows(rows, policy)
    if not any(r.kind is RowKind.MESSAGE for r in chosen):
        return CompactionResult(channel_id, pending)
    summary = ""
    if policy.use_model:
        try:
            summary = await _model_summary(db, chat, channel_id, previous, chosen, policy, now)
        except ModelError as exc:
            log.warning("channel %s: compaction summary failed: %s", channel_id, exc)
            return CompactionResult(channel_id, pending, error=str(exc) or type(exc).__name__)
    if not summary:
        summary = prompt.extractive(previous, chosen, words=policy.summary_words)
    if not summary:
        return CompactionResult(channel_id, pending, error="nothing to summarise")
    covers_to = chosen[-1].id
    async with db.write() as conn:
        cur = await conn.execute(
            "INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role, kind,"
            " content, turn_id, covers_to) SELECT id, owner_id, NULL, ?, ?, ?, ?, ?, ?, ?"
            " FROM channels WHERE id = ?",
            (to_iso(now), COMPACTION_SOURCE, Role.SYSTEM.value, RowKind.COMPACTION.value,
             summary, uuid.uuid4().hex, covers_to, channel_id),
        )
        row_id = cur.lastrowid
    log.info("channel %s: compacted %d rows up to %d", channel_id, len(chosen), covers_to)
    return CompactionResult(channel_id, pending, True, row_id, covers_to, len(chosen))


async def compact_until_under_budget(
    db: Database,
    chat: ChatModel,
    channel_id: int,
    now: datetime,
    policy: CompactionPolicy = CompactionPolicy(),
    *,
    max_rounds: int = 20,
) -> list[CompactionResult]:
    """Repeat `compact_channel` (a long imported backlog needs several summaries), stopping at
    the first round that did not compact."""
    results: list[CompactionResult] = []
    for _ in range(max_rounds):
        result = await compact_channel(db, chat, channel_id, now, policy)
        results.append(result)
        if not result.compacted:
            break
    return results


class CompactionHook:
    """The after-turn compaction check (an `AfterTurn`): one at a time per channel, so two
    quick turns never summarise the same rows twice; after a failed summary the channel waits
    `retry_after` before the next try, so a model that is down is not asked on every turn."""

    def __init__(self, db: Database, chat: ChatModel, clock: Clock,
                 policy: CompactionPolicy = CompactionPolicy(),
                 retry_after: timedelta = timedelta(minutes=10),
                 chat_for: Callable[[int], ChatModel] | None = None) -> None:
        self.db = db
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
            result = await compact_channel(self.db, chat, channel.id, now, self.policy)
            if result.error:
                self._failed_at[channel.id] = now
            else:
                self._failed_at.pop(channel.id, None)
