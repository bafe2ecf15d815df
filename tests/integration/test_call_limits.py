"""The per-person model-call cap, counted in the database on both engines: a sliding window
on the injected clock, and one cap for a person however many processes answer them.

The two-process case runs this module as a script (`python -m
tests.integration.test_call_limits`): each process builds its own app on the one database
with the clock stopped at the same instant and makes the person write until it is told to
wait; together they answer the person `model_calls_per_minute` times, not twice that.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from strata.app.compose import App
from strata.bot.limits import CallLimiter
from strata.core.clock import ManualClock, from_iso, to_iso
from strata.core.config import load_settings
from strata.memory.coordination.model_calls import ModelCalls
from strata.memory.engines.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import person

from .test_link_and_limits import console

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ROOT = Path(__file__).parents[2]
CAP = 4


async def test_call_limiter_frees_a_call_when_the_oldest_leaves_the_window(
        db: Database) -> None:
    clock = ManualClock(T0)
    alice, bob = await person(db, "alice", clock), await person(db, "bob", clock)
    limiter = CallLimiter(ModelCalls(db), 2, clock)
    assert await limiter.acquire(alice.id) is None
    clock.advance(seconds=20)
    assert await limiter.acquire(alice.id) is None
    clock.advance(seconds=10)
    # Two calls in the last minute: the next is free when the first is 60 s old (30 s on).
    assert await limiter.acquire(alice.id) == pytest.approx(30.0)
    assert await limiter.acquire(bob.id) is None  # another person has calls of their own
    clock.advance(timedelta(seconds=30))
    assert await limiter.acquire(alice.id) is None
    assert await limiter.acquire(alice.id) == pytest.approx(20.0)
    # Only the calls still in the window are kept.
    assert await db.fetchval(
        "SELECT count(*) FROM model_calls WHERE person_id = ?", (alice.id,)) == 2


async def test_two_processes_hold_a_person_to_one_cap(
        subprocess_env: dict[str, str], fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    fake_openai.responder = lambda body: "answer"
    env = dict(subprocess_env, STRATA_ACCESS_MODEL_CALLS_PER_MINUTE=str(CAP),
               STRATA_COGNITION_ENABLED="false", STRATA_RECALL_ENABLED="false",
               STRATA_EPISODES_USE_MODEL="false", STRATA_LIFECYCLE_COMPACT_AFTER_TURN="false")
    now = to_iso(clock.now())
    workers = [subprocess.Popen(
        [sys.executable, "-m", "tests.integration.test_call_limits", now, str(CAP + 2)],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)]
    answered = []
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
        answered.append(int(out.split()[-1]))
    # Each process alone would answer CAP times; together they answer CAP, and the rest of
    # their 2 × (CAP + 2) messages were told to wait, the model not asked.
    assert sum(answered) == CAP
    asked = [b for b in fake_openai.chat_requests() if "message" in str(b["messages"][-1])]
    assert len(asked) == CAP


async def _write_until_refused(at: str, messages: int) -> int:
    """One process's part: `messages` messages from alice at the instant `at`; prints and
    returns how many the model answered."""
    clock = ManualClock(from_iso(at))
    app = await App.create(load_settings(None), clock=clock)
    try:
        answered = 0
        for i in range(messages):
            result = await app.processor.handle(console(f"message {i}", clock))
            assert result is not None
            answered += not result.failed
        print(answered)
        return answered
    finally:
        await app.close()


if __name__ == "__main__":
    asyncio.run(_write_until_refused(sys.argv[1], int(sys.argv[2])))
