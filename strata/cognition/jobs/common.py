"""Small helpers the jobs share: writing and reading facts, watermarks, local times, and the
small Protocols jobs build their own ports from."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from strata.cognition.registry import JobContext
from strata.core.recurrence import local
from strata.memory.checks.grounding import Refusal
from strata.memory.facts.fact_store import FactStore
from strata.memory.rules.fact_types import Fact, NewFact
from strata.memory.rules.profiles import sources_with
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import RowFilter, TranscriptRepo


class FactPorts(Protocol):
    """A job that reads or writes the person's facts (and counts what grounding refused)."""

    @property
    def facts(self) -> FactStore: ...

    @property
    def refusals(self) -> RefusalRepo: ...


class TranscriptPorts(Protocol):
    """A job that reads the person's transcript."""

    @property
    def transcript(self) -> TranscriptRepo: ...


F = TypeVar("F", bound=FactPorts)
T = TypeVar("T", bound=TranscriptPorts)


async def add_fact(
    ctx: JobContext[F],
    kind: str,
    text: str,
    source: str,
    *,
    row_ids: Sequence[int] = (),
    url: str | None = None,
) -> bool:
    """Store a fact about the job's person through the data graph's write API; False when the
    person already has it (the graph folds duplicates)."""
    result = await ctx.services.facts.add(
        NewFact(owner_id=ctx.person.id, kind=kind, text=text, source=source,
                row_ids=tuple(row_ids), url=url),
        ctx.now,
    )
    return result.fact_id is not None


async def add_grounded(
    ctx: JobContext[F],
    kind: str,
    text: str,
    source: str,
    refusal: Refusal | None,
    *,
    row_ids: Sequence[int] = (),
    url: str | None = None,
) -> bool:
    """`add_fact` for an item the grounding rule passed (`refusal` is None); a refused item is
    counted and logged instead, and nothing is stored."""
    if refusal is not None:
        await refuse(ctx, [refusal])
        return False
    return await add_fact(ctx, kind, text, source, row_ids=row_ids, url=url)


async def refuse(ctx: JobContext[F], refusals: Sequence[Refusal]) -> None:
    """Count (and log at DEBUG) what the grounding rule refused for the job's person."""
    await ctx.services.refusals.record(ctx.person.id, refusals, ctx.now)


async def live_facts(ctx: JobContext[F], kinds: Sequence[str]) -> list[Fact]:
    return await ctx.services.facts.repo.for_owner(ctx.person.id, kinds=kinds)


def sources_for(switch: str) -> tuple[str, ...]:
    """The sources whose profile has `switch` on."""
    return tuple(sources_with(switch))


async def newest_row(ctx: JobContext[T], where: RowFilter) -> str | None:
    """`row:<id>` of the person's newest transcript row matching `where` (a job's watermark)."""
    newest = await ctx.services.transcript.newest_id(ctx.person.id, where)
    return f"row:{newest}" if newest else None


def row_cursor(value: str) -> int:
    """`row:123` → 123 (0 for no cursor yet)."""
    prefix, _, number = value.partition(":")
    return int(number) if prefix == "row" and number.isdigit() else 0


def when(ts: datetime, tz: str) -> str:
    """`Tue 18:40` in the person's zone: habits are about local days and hours."""
    return f"{local(ts, tz):%a %H:%M}"


def part_of_day(ts: datetime, tz: str) -> str:
    hour = local(ts, tz).hour
    if hour < 6:
        return "night"
    if hour < 12:
        return "morning"
    if hour < 17:
        return "afternoon"
    if hour < 22:
        return "evening"
    return "night"
