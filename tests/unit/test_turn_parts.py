"""Parts of the turn that stand alone: the after-turn tasks (a failing hook is logged and
skipped, the others still run, and `drain` waits for them all). The per-person model-call
limiter counts in the database: tests/integration/test_call_limits.py."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

import pytest

from strata.bot.after_turn import AfterTurnTasks
from strata.core.errors import ModelUnavailableError
from strata.core.types import Channel, ChannelKind, OwnerKind, Person

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ALICE = Person(1, OwnerKind.PERSON, "Alice", T0)
DM = Channel(7, 1, "console", "alice", ChannelKind.PRIVATE, "user", True)


class Recording:
    """An after-turn hook that notes each turn it saw, after `gate` opens (if given)."""

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.seen: list[tuple[int, int, str]] = []

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        if self.gate is not None:
            await self.gate.wait()
        self.seen.append((channel.id, person.id, turn_id))


class Failing:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        raise self.exc


class Opener:
    """A hook that opens another hook's gate: `drain` must wait for both."""

    def __init__(self, gate: asyncio.Event) -> None:
        self.gate = gate

    async def __call__(self, channel: Channel, person: Person, turn_id: str) -> None:
        await asyncio.sleep(0)
        self.gate.set()


async def test_a_failing_hook_is_logged_and_the_others_still_run(
        caplog: pytest.LogCaptureFixture) -> None:
    gate = asyncio.Event()
    late, early = Recording(gate), Recording()
    tasks = AfterTurnTasks([Failing(ModelUnavailableError("embedder down")), late,
                            Failing(RuntimeError("bug")), early, Opener(gate)])
    with caplog.at_level(logging.WARNING, logger="strata.bot.after_turn"):
        tasks.start(DM, ALICE, "t1")
        await tasks.drain()
    assert late.seen == early.seen == [(7, 1, "t1")]
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    # A model that is down is one warning line; any other failure is logged with its traceback.
    assert (logging.WARNING,
            "after-turn step Failing skipped for turn t1: embedder down") in lines
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info is not None
    assert "bug" in str(errors[0].exc_info[1])


async def test_drain_returns_at_once_with_nothing_started() -> None:
    hook = Recording()
    tasks = AfterTurnTasks([hook])
    await tasks.drain()
    assert hook.seen == []
