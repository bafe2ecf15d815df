"""`sigkill`: `strata run` on the Telegram fake and the fake model, SIGKILLed at random moments.

Each round starts the process on the same database, lets four people write to it at random
intervals (the model takes 150 ms and streams), and kills it with SIGKILL at a random moment
between 0.2 s and 3 s into the traffic; `PRAGMA integrity_check` must then be ok. After the
last round the process runs once more until Telegram has nothing pending, and stops cleanly.

A message is acknowledged when Telegram considers it delivered (the bot confirmed it with a
later `getUpdates` offset, so it will never come again) or when the person saw any reply to
it. Must hold: every acknowledged message has its user row, and every reply the person saw
in full has its assistant row: 0 acknowledged turns lost, integrity ok every round.
"""

from __future__ import annotations

import asyncio
import random
import re
import threading
import time
from typing import Any

from bench.reliability import harness
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from tests.fakes.openai_server import last_user_text
from tests.fakes.telegram_api import FakeTelegramAPI

USERS = [6001, 6002, 6003, 6004]
TAG = re.compile(r"\[(r\d+m\d+)\]")
REPLY_TAG = re.compile(r"Re-(r\d+m\d+):")


def full_reply(tag: str) -> str:
    return f"Re-{tag}: noted, thank you for telling me about it."


def answer(body: dict[str, Any]) -> str:
    found = TAG.search(last_user_text(body))
    return full_reply(found.group(1)) if found else "noted."


def traffic(fake: FakeTelegramAPI, round_no: int, rng: random.Random, stop: threading.Event,
            pushed: list[tuple[int, str]]) -> None:
    n = 0
    while not stop.is_set():
        user = rng.choice(USERS)
        tag = f"r{round_no}m{n}"
        fake.push_private_message(user, f"[{tag}] a note for round {round_no}, number {n}")
        pushed.append((user, tag))
        n += 1
        stop.wait(rng.uniform(0.05, 0.3))


def stored(db: Any) -> tuple[dict[str, int], set[str]]:
    """Tag -> user rows stored; tags whose full reply is stored as an assistant row."""
    users: dict[str, int] = {}
    replies: set[str] = set()
    with harness.sqlite(db) as conn:
        for role, content in conn.execute(
                "SELECT role, content FROM transcript WHERE kind = 'message'"):
            if role == "user" and (m := TAG.search(content)):
                users[m.group(1)] = users.get(m.group(1), 0) + 1
            elif role == "assistant" and (m := REPLY_TAG.match(content)) and \
                    content == full_reply(m.group(1)):
                replies.add(m.group(1))
    return users, replies


@SUITE.case("sigkill", "`strata run` with the Telegram fake and the fake model; SIGKILL at "
            "random moments, 50 rounds (`--quick`: 5)",
            "0 acknowledged turns lost; `integrity_check` ok every round")
async def sigkill(ctx: Context) -> CaseResult:
    rounds = 5 if ctx.quick else 50
    rng = random.Random(ctx.seed)
    model = harness.model_server()
    model.responder = answer
    model.latency = 0.15
    fake = FakeTelegramAPI().start()
    db = ctx.workdir / "strata.db"
    proc = harness.StrataProcess(harness.telegram_env(model, fake, db), ctx.workdir, "sigkill")
    pushed: list[tuple[int, str]] = []
    integrity: list[str] = []
    kills_in_turn = 0
    confirmed: set[str] = set()  # confirmed to Telegram by a process that was then killed
    try:
        for round_no in range(rounds):
            proc.start()
            if not await asyncio.to_thread(harness.wait_polling, fake, proc):
                raise RuntimeError("strata run did not start: " + proc.stderr()[-500:])
            stop = threading.Event()
            pusher = threading.Thread(target=traffic, args=(fake, round_no, rng, stop, pushed))
            pusher.start()
            await asyncio.sleep(rng.uniform(0.2, 3.0))
            in_flight = len(model.chat_requests())
            proc.kill()
            stop.set()
            pusher.join(5)
            kills_in_turn += bool(in_flight)
            # Nothing runs now: what Telegram still holds was not confirmed by the dead process.
            pending = fake.pending_update_count
            confirmed.update(tag for _, tag in pushed[:len(pushed) - pending])
            integrity.append(await asyncio.to_thread(harness.integrity, db))
            model.clear()
            model.latency = 0.15
        # Recovery: run until Telegram has nothing pending and every turn is answered.
        proc.start()
        if not await asyncio.to_thread(harness.wait_polling, fake, proc):
            raise RuntimeError("strata run did not restart: " + proc.stderr()[-500:])
        await asyncio.to_thread(harness.wait_sync, lambda: fake.pending_update_count == 0, 60)
        await asyncio.sleep(3)
        last = -1
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(fake.bot_messages()) != last:
            last = len(fake.bot_messages())
            await asyncio.sleep(2)
        code = await asyncio.to_thread(proc.stop)
        integrity.append(await asyncio.to_thread(harness.integrity, db))
    finally:
        model.stop()
        fake.stop()
    users, replies = stored(db)
    seen_any: set[str] = set()
    seen_full: set[str] = set()
    for user in USERS:
        for text in fake.bot_texts(user):
            if m := REPLY_TAG.match(text):
                seen_any.add(m.group(1))
                if text == full_reply(m.group(1)):
                    seen_full.add(m.group(1))
    tags = [tag for _, tag in pushed]
    # After the recovery run nothing is pending, so every message was acknowledged to Telegram.
    lost_rows = [t for t in tags if users.get(t, 0) == 0]
    lost_replies = sorted(seen_full - replies)
    duplicates = sum(1 for t in tags if users.get(t, 0) > 1)
    bad_rounds = [i for i, r in enumerate(integrity) if r != "ok"]
    lost = len(lost_rows) + len(lost_replies)
    confirmed_unstored = sum(1 for t in lost_rows if t in confirmed)
    figure = (f"{lost} acknowledged turns lost of {len(tags)} messages over {rounds} SIGKILLs "
              f"({len(lost_rows)} user rows missing, {confirmed_unstored} of them confirmed to "
              f"Telegram by the killed process before being stored; {len(lost_replies)} shown "
              f"replies missing; {duplicates} stored twice); integrity_check ok "
              f"{len(integrity) - len(bad_rounds)}/{len(integrity)}")
    ok = lost == 0 and not bad_rounds and code == 0 and len(tags) > 0
    return CaseResult("sigkill", figure, ok, details={
        "rounds": rounds, "messages": len(tags), "rounds_with_model_calls": kills_in_turn,
        "confirmed_then_killed": len(confirmed), "lost_confirmed_unstored": confirmed_unstored,
        "lost_user_rows": lost_rows[:20], "lost_replies": lost_replies[:20],
        "replies_seen": len(seen_any), "replies_seen_in_full": len(seen_full),
        "integrity": integrity, "final_exit": code})
