"""`load`: 100 persons write to `strata run` on the Telegram fake at once.

The fake model answers each chat request in 200 ms and, like a local server with one GPU,
one at a time: the model is the bottleneck, and the model-bound ideal is the number of model
calls times 200 ms. Every person sends a burst of messages at the same moment.

Must hold: every message gets its full reply (0 dropped), the replies of each chat come in
the order of its messages (0 reordered), throughput ≥ 80 % of the model-bound ideal. The
turn overhead is the time a turn spends outside the model and its queue: from the moment it
can start (its push, or its chat's previous reply, since a chat's turns run in order) to its
model request, plus from the model's last byte to the reply's final text on Telegram; its
p95 is printed.
"""

from __future__ import annotations

import asyncio
import re
import time
from itertools import pairwise
from typing import Any

import numpy as np

from bench.reliability import harness
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from tests.fakes.openai_server import last_user_text
from tests.fakes.telegram_api import FakeTelegramAPI

PERSONS = 100
LATENCY = 0.2
TAG = re.compile(r"\[(p\d+m\d+)\]")
REPLY = re.compile(r"Re-(p(\d+)m(\d+)):")


def full_reply(tag: str) -> str:
    return f"Re-{tag}: got it, thanks."


def answer(body: dict[str, Any]) -> str:
    found = TAG.search(last_user_text(body))
    return full_reply(found.group(1)) if found else "ok."


@SUITE.case("load", "100 persons at once on the Telegram fake; the fake model answers in "
            "200 ms", "0 dropped; 0 reordered within a chat; throughput ≥ 80 % of the "
            "model-bound ideal; turn overhead p95 printed")
async def load(ctx: Context) -> CaseResult:
    per_person = 1 if ctx.quick else 4
    model = harness.model_server()
    model.responder = answer
    fake = FakeTelegramAPI().start()
    db = ctx.workdir / "strata.db"
    proc = harness.StrataProcess(
        harness.telegram_env(model, fake, db, STRATA_ACCESS_MODEL_CALLS_PER_MINUTE="1000"),
        ctx.workdir, "load")
    users = [8000 + p for p in range(PERSONS)]
    expected = PERSONS * per_person
    pushed_at: dict[str, float] = {}
    try:
        proc.start()
        if not await asyncio.to_thread(harness.wait_polling, fake, proc):
            raise RuntimeError("strata run did not start: " + proc.stderr()[-500:])
        model.clear()
        model.responder = answer
        model.latency, model.slots = LATENCY, 1

        def complete() -> int:
            return sum(1 for u in users for t in fake.bot_texts(u)
                       if (m := REPLY.match(t)) and t == full_reply(m.group(1)))

        started = time.monotonic()
        for k in range(per_person):
            for p, user in enumerate(users):
                tag = f"p{p}m{k}"
                pushed_at[tag] = time.monotonic()
                fake.push_private_message(user, f"[{tag}] hello, this is message {k}")
        budget = expected * LATENCY * 3 + 60
        await harness.wait_async(lambda: complete() >= expected, budget, poll=0.2)
        finished = time.monotonic()
        alive = proc.alive()
        code = await asyncio.to_thread(proc.stop)
    finally:
        model.stop()
        fake.stop()
    elapsed = finished - started
    served = list(model.served)
    ideal = len(served) * LATENCY
    throughput = ideal / elapsed if elapsed > 0 else 0.0
    # Dropped and reordered, per chat.
    dropped = reordered = 0
    for user in users:
        got = [int(m.group(3)) for t in fake.bot_texts(user) if (m := REPLY.match(t))
               and t == full_reply(m.group(1))]
        dropped += per_person - len(set(got))
        reordered += sum(1 for a, b in pairwise(got) if b < a)
    # Turn overhead: outside the model and its queue.
    final_at: dict[str, float] = {}
    wall = time.time() - time.monotonic()  # the Telegram fake stamps with time.time()
    for rec in fake.sent:
        text = str(rec.get("plain_text") or rec.get("text") or "")
        if (m := REPLY.match(text)) and text == full_reply(m.group(1)):
            final_at.setdefault(m.group(1), float(rec["time"]) - wall)
    model_at = {}
    for text, arrived, _start, done in served:
        if (m := TAG.search(text)):
            model_at[m.group(1)] = (arrived, done)
    overheads = []
    for p in range(PERSONS):
        # A chat's turns run in order: a message waits for its chat's previous reply, which
        # waited for the model. That wait is the model's queue, so the turn starts later.
        previous_final = 0.0
        for k in range(per_person):
            tag = f"p{p}m{k}"
            if tag in final_at and tag in model_at:
                arrived, done = model_at[tag]
                start = max(pushed_at[tag], previous_final)
                overheads.append(max(0.0, arrived - start) + max(0.0, final_at[tag] - done))
                previous_final = final_at[tag]
    p95 = float(np.percentile(overheads, 95)) * 1000 if overheads else float("nan")
    ok = (alive and dropped == 0 and reordered == 0 and throughput >= 0.8 and code == 0)
    figure = (f"{dropped} dropped, {reordered} reordered of {expected} turns; throughput "
              f"{throughput:.0%} of the model-bound ideal ({len(served)} model calls x 200 ms "
              f"= {ideal:.0f} s, took {elapsed:.1f} s); turn overhead p95 {p95:.0f} ms")
    return CaseResult("load", figure, ok, details={
        "turns": expected, "model_calls": len(served), "elapsed_s": round(elapsed, 2),
        "ideal_s": round(ideal, 2), "throughput": round(throughput, 3),
        "overhead_p95_ms": round(p95, 1), "overhead_samples": len(overheads),
        "exit": code})
