"""Benchmark of the data graph and forgetting: fact writes, fact search, and `/forget` over a
large transcript (with the check that the word is gone from the file's bytes).

Run: `python -m tests.bench_facts` (starts the fake model server itself; dimension 768).
"""

from __future__ import annotations

import asyncio
import os
import random
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.core.types import ChannelKind, NewRow, Role
from strata.memory.rules.fact_types import NewFact
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI

WORDS = ["apple", "river", "stone", "cloud", "piano", "garden", "letter", "window", "market",
         "forest", "candle", "bridge"]


async def main(n_rows: int, n_facts: int) -> None:
    with FakeOpenAI(dim=768) as fake, tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "bench.db"
        settings = load_settings(None, env=strata_env(fake, db_path))
        clock = ManualClock(datetime(2026, 1, 5, tzinfo=UTC))
        app = await App.create(settings, clock=clock)
        p = await app.persons.get_or_create("console:alice", "alice", clock.now())
        ch = await app.channels.get_or_create(platform="console", room_ref="a", owner_id=p.id,
                                              kind=ChannelKind.PRIVATE, source="user",
                                              now=clock.now())
        rng = random.Random(1)
        rows = []
        for i in range(n_rows):
            text = " ".join(rng.choice(WORDS) for _ in range(12))
            if i % (n_rows // 5) == 0:
                text += " Zorblaxqq"
            rows.append(NewRow(ch.id, p.id, clock.now(), "user", Role.USER, text,
                               uuid.uuid4().hex))
        for i in range(0, n_rows, 1000):
            await app.transcript.append(rows[i:i + 1000])
        t = time.perf_counter()
        for i in range(n_facts):
            text = f"fact {i} about {rng.choice(WORDS)} {rng.choice(WORDS)}"
            await app.facts.add(NewFact(p.id, "user_specific", text, "user"), clock.now())
        add_ms = (time.perf_counter() - t) * 1000 / n_facts
        t = time.perf_counter()
        for _ in range(20):
            await app.facts.search(p.id, "piano garden")
        search_ms = (time.perf_counter() - t) * 1000 / 20
        t = time.perf_counter()
        plan = await app.forgetter.plan_words(p.id, "Zorblaxqq")
        plan_ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        await app.forgetter.forget(plan)
        forget_ms = (time.perf_counter() - t) * 1000
        left = b"zorblaxqq" in db_path.read_bytes().lower()
        print(f"rows={n_rows} facts={n_facts} db={os.path.getsize(db_path) / 1e6:.1f}MB: "
              f"add {add_ms:.1f} ms/fact, search {search_ms:.1f} ms (incl. query embedding), "
              f"forget plan {plan_ms:.0f} ms + delete/scrub {forget_ms:.0f} ms "
              f"({len(plan.turn_ids)} turns); word left in file: {left}")
        await app.close()


if __name__ == "__main__":
    for n, f in ((10_000, 200), (100_000, 1000)):
        asyncio.run(main(n, f))
