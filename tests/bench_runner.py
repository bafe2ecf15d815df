"""Benchmark of the cognition runner's steady state: how long one job check (every 5 minutes
in production) takes over many idle persons when nothing is new (no model calls), and how long
a first pass with every job doing work takes per person.

Run: `python -m tests.bench_runner [PERSONS]` (starts the fake model server itself).
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.core.types import InboundMessage, Location
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI


def answer(body: dict[str, Any]) -> str:
    return json.dumps({"facts": [], "patterns": [], "places": [], "queries": [],
                       "findings": []})


async def main(persons: int) -> None:
    with FakeOpenAI(dim=256) as fake, tempfile.TemporaryDirectory() as tmp:
        fake.responder = answer
        env = strata_env(fake, Path(tmp) / "bench.db")
        settings = load_settings(None, env=env)
        settings = settings.model_copy(update={
            "episodes": settings.episodes.model_copy(update={"use_model": False})})
        clock = ManualClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
        app = await App.create(settings, clock=clock)
        assert app.runner is not None
        try:
            for p in range(persons):
                for i in range(6):
                    await app.processor.handle(InboundMessage(
                        "console", f"u{p}/d", f"u{p}", f"message {i} about climbing and tea",
                        clock.now(), sender_name=f"u{p}",
                        location=Location(45.76, 4.84) if i % 2 else None))
            await app.processor.drain()
            clock.advance(hours=1)
            t0 = time.perf_counter()
            first = await app.runner.check_jobs()
            t1 = time.perf_counter()
            ran = sum(r.ran for r in first)
            # The first pass makes new input for a second (the DMN's rows become an episode,
            # which extraction reads and consolidation counts); then it settles.
            passes = 1
            while any(r.ran for r in await app.runner.check_jobs()) and passes < 5:
                passes += 1
                clock.advance(minutes=5)
            await app.processor.drain()
            clock.advance(minutes=5)
            t2 = time.perf_counter()
            steady = await app.runner.check_jobs()
            t3 = time.perf_counter()
            assert not any(r.ran for r in steady), [r for r in steady if r.ran][:3]
            clock.advance(timedelta(minutes=5))
        finally:
            await app.close()
    print(f"{persons} persons, 9 jobs each")
    print(f"first pass (every job with input does work, fake model): {t1 - t0:.2f} s, "
          f"{ran} runs, {(t1 - t0) / persons * 1000:.0f} ms per person; settled after "
          f"{passes + 1} checks")
    print(f"steady check (nothing new, no model call): {(t3 - t2) * 1000:.0f} ms, "
          f"{(t3 - t2) / persons * 1000:.1f} ms per person")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100))
