"""`load`: 100 persons write to `strata run` on the Telegram fake at once.

The fake model answers each chat request in 200 ms and, like a local server with one GPU,
one at a time: the model is the bottleneck, and the model-bound ideal is the number of model
calls times 200 ms. Every person sends a burst of messages at the same moment.

Must hold: every message gets its full reply (0 dropped), the replies of each chat come in
the order of its messages (0 reordered), throughput ≥ 80 % of the model-bound ideal. The
turn overhead is the time a turn spends outside the model and its queue: from the moment it
can start (its push, or its chat's previous reply, since a chat's turns run in order) to its
model request, plus from the model's last byte to the reply's final text on Telegram; its
p95 is printed. It is split in three, from what `strata run --log-level info` logs: waiting for
a turn slot (`bot.max_turns` chats are answered at once; with the model as the bottleneck
every slot holds a turn waiting for it, so this is the model's queue spilled into Strata's),
the platform's waits (the time PTB's flood-control limiter held the chat's requests after the
model's last byte: `strata.adapters.telegram.flood.TimedRateLimiter`) and Strata's own work (the
rest: from the turn's start to its model request, and from the model's last byte to the final
text, less flood control); beside them the floor, a bare HTTP round trip to the same fake.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
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


HELD = re.compile(r"flood control held \S+ to chat (-?\d+) for ([\d.]+) ms \(until ([\d.]+)\)")


def flood_holds(log: str) -> dict[int, list[tuple[float, float]]]:
    """Per chat, (released at, seconds held) of every request flood control held back."""
    out: dict[int, list[tuple[float, float]]] = {}
    for m in HELD.finditer(log):
        out.setdefault(int(m.group(1)), []).append((float(m.group(3)), float(m.group(2)) / 1000))
    return out


STARTS = re.compile(r"turn for chat (-?\d+) starts \(at ([\d.]+)\)")


def turn_starts(log: str) -> dict[int, list[float]]:
    """Per chat, when each of its turns left Strata's queue (wall clock), in order."""
    out: dict[int, list[float]] = {}
    for m in STARTS.finditer(log):
        out.setdefault(int(m.group(1)), []).append(float(m.group(2)))
    return out


def http_floor(url: str, token: str, n: int = 30) -> float:
    """p95 of a bare HTTP round trip to the Telegram fake (getMe), in ms."""
    ms = []
    for _ in range(n):
        start = time.perf_counter()
        with urllib.request.urlopen(f"{url}/bot{token}/getMe", timeout=10) as r:
            r.read()
        ms.append((time.perf_counter() - start) * 1000)
    return pct(ms, scale=1.0)


def pct(values: list[float], scale: float = 1000.0) -> float:
    return float(np.percentile(values, 95)) * scale if values else float("nan")


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
        ctx.workdir, "load", options=["--log-level", "info"])
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
        floor_ms = await asyncio.to_thread(http_floor, fake.url, fake.token)
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
    logged = proc.stderr_path.read_text(encoding="utf-8", errors="replace")
    holds, starts = flood_holds(logged), turn_starts(logged)
    overheads: list[float] = []
    before: list[float] = []  # from the message (or the chat's previous reply) to the request
    after: list[float] = []  # from the model's last byte to the final text on Telegram
    waits: list[float] = []
    queued: list[float] = []  # waiting for a turn slot (`bot.max_turns`)
    for p in range(PERSONS):
        # A chat's turns run in order: a message waits for its chat's previous reply, which
        # waited for the model. That wait is the model's queue, so the turn starts later.
        previous_final = 0.0
        for k in range(per_person):
            tag = f"p{p}m{k}"
            if tag in final_at and tag in model_at:
                arrived, done = model_at[tag]
                start = max(pushed_at[tag], previous_final)
                # Waiting for one of the `max_turns` turn slots, all held by turns waiting for
                # the model: the model's queue, spilled into Strata's.
                began = starts.get(users[p], [])
                slot = max(start, began[k] - wall) if k < len(began) else start
                queued.append(slot - start)
                start = slot
                before.append(max(0.0, arrived - start))
                after.append(max(0.0, final_at[tag] - done))
                overheads.append(queued[-1] + before[-1] + after[-1])
                # The chat's requests that flood control released between the model's last
                # byte and the final text: their holds were the platform's, not Strata's.
                waits.append(min(before[-1] + after[-1], sum(
                    held for until, held in holds.get(users[p], ())
                    if done + wall < until <= final_at[tag] + wall)))
                previous_final = final_at[tag]
    p95 = pct(overheads)
    own = [b + a - w for b, a, w in zip(before, after, waits, strict=True)]
    ok = (alive and dropped == 0 and reordered == 0 and throughput >= 0.8 and code == 0)
    figure = (f"{dropped} dropped, {reordered} reordered of {expected} turns; throughput "
              f"{throughput:.0%} of the model-bound ideal ({len(served)} model calls x 200 ms "
              f"= {ideal:.0f} s, took {elapsed:.1f} s); turn overhead p95 {p95:.0f} ms"
              f" (waiting for a turn slot p95 {pct(queued):.0f} ms, flood-control waits p95"
              f" {pct(waits):.0f} ms, Strata's own work p95 {pct(own):.0f} ms)")
    return CaseResult("load", figure, ok, details={
        "turns": expected, "model_calls": len(served), "elapsed_s": round(elapsed, 2),
        "ideal_s": round(ideal, 2), "throughput": round(throughput, 3),
        "overhead_p95_ms": round(p95, 1), "overhead_samples": len(overheads),
        "before_model_p95_ms": round(pct(before), 1), "after_model_p95_ms": round(pct(after), 1),
        "slot_wait_p95_ms": round(pct(queued), 1), "own_p95_ms": round(pct(own), 1),
        "platform_wait_p95_ms": round(pct(waits), 1),
        "http_floor_p95_ms": round(floor_ms, 2),
        "exit": code})
