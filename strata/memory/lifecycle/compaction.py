"""Compaction: when a channel's un-compacted transcript grows past a token budget, a
continuity summary that folds in the previous one is stored as a compaction row that becomes
the channel's history watermark (docs/memory.md).

The summary covers the oldest rows after the current watermark, up to a turn boundary, and
leaves a recent tail verbatim (`compaction_due`). The model's summary is written in cognition
(`strata.bot.writers.compaction`) and reaches the store only through `store_compaction`,
which passes it through the grounding rule; without a model, or when the model's summary is
empty or refused, the summary is extractive: the most distinct sentences of the previous
summary and the new rows (strata.memory.rules.extractive), so the watermark still advances
and pruning can follow. Compaction rows are never deleted and are never recall candidates
(they are `kind = 'compaction'` with the muted source `compaction`). Imports no model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.core.tokens import count_tokens
from strata.core.types import Role, RowKind, TranscriptRow
from strata.memory.checks import grounding
from strata.memory.rules.extractive import summarise
from strata.memory.store.lifecycle import LifecycleStore

log = logging.getLogger(__name__)


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


@dataclass(frozen=True, slots=True)
class CompactionWork:
    """A channel whose un-compacted transcript is over budget: the rows the next summary
    folds in (`rows`) after the previous summary (`previous`)."""

    channel_id: int
    owner_id: int
    pending_tokens: int
    previous: str | None
    rows: tuple[TranscriptRow, ...]


async def compaction_due(store: LifecycleStore, channel_id: int,
                         policy: CompactionPolicy) -> CompactionWork | CompactionResult:
    """The work of the channel's next compaction, or a result saying none is due."""
    mark = await store.watermark(channel_id)
    previous, after = (mark[0].content, mark[1]) if mark else (None, 0)
    rows = await store.pending_rows(channel_id, after)
    pending = sum(_tokens(r) for r in rows)
    if pending <= policy.trigger_tokens:
        return CompactionResult(channel_id, pending)
    chosen = choose_rows(rows, policy)
    if not any(r.kind is RowKind.MESSAGE for r in chosen):
        return CompactionResult(channel_id, pending)
    return CompactionWork(channel_id, chosen[0].owner_id, pending, previous, tuple(chosen))


def extractive(previous: str | None, rows: Sequence[TranscriptRow], *, words: int = 250) -> str:
    """A continuity summary without a model: the most distinct sentences of the previous
    summary and the new messages (each dated and attributed), within about `words` words."""
    lines = [f"{'person' if r.role is Role.USER else r.role.value} ({r.ts:%Y-%m-%d}): {r.content}"
             for r in rows if r.kind is RowKind.MESSAGE]
    return summarise([previous or "", *lines], words)


async def _grounded(store: LifecycleStore, work: CompactionWork, summary: str, shown: Sequence[str],
                    now: datetime) -> str:
    """The model's summary when the grounding rule passes it, else "" (the refusal counted).
    The summary replaces the rows in every later prompt: it must not say what the text it
    was shown (`shown`: the prompt, then the previous summary and the rows as cut to the
    budget) lacks."""
    summary = summary.strip()
    if not summary:
        return ""
    refusal = grounding.check_summary(summary, shown[1:], layer=grounding.CONTINUITY,
                                      prompt=shown[:1])
    if refusal is not None:
        log.warning("channel %s: compaction summary refused (%s); extractive summary",
                    work.channel_id, refusal.reason)
        await store.record_refusals(work.owner_id, [refusal], now)
        return ""
    return summary


async def store_compaction(store: LifecycleStore, work: CompactionWork, now: datetime,
                           policy: CompactionPolicy, summary: str = "",
                           shown: Sequence[str] = ()) -> CompactionResult:
    """Store the channel's next continuity summary: the model's `summary` (written from
    `shown`) only through the grounding rule; without one, or when it is refused, the
    extractive summary. The compaction row becomes the channel's watermark."""
    if summary:
        summary = await _grounded(store, work, summary, shown, now)
    if not summary:
        summary = extractive(work.previous, work.rows, words=policy.summary_words)
    if not summary:
        return CompactionResult(work.channel_id, work.pending_tokens, error="nothing to summarise")
    covers_to = work.rows[-1].id
    row_id = await store.add_compaction(work.channel_id, now, summary, covers_to)
    log.info("channel %s: compacted %d rows up to %d", work.channel_id, len(work.rows), covers_to)
    return CompactionResult(work.channel_id, work.pending_tokens, True, row_id, covers_to,
                            len(work.rows))
