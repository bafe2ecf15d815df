"""Small helpers the jobs share: the fact graph or a clear error, watermarks, local times."""

from __future__ import annotations

from datetime import datetime

from cognition.graph import DependencyMissingError, FactGraph
from cognition.registry import JobContext
from cognition.reminders import local


def graph(ctx: JobContext) -> FactGraph:
    if ctx.services.facts is None:
        raise DependencyMissingError(
            f"job {ctx.job} writes facts, but this build has no data graph (memory.facts)"
        )
    return ctx.services.facts


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
