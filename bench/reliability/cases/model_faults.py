"""`model_faults`: `strata run` on the Telegram fake while the model server misbehaves.

Each fault gets its own chat and runs on its own: the model server down (nothing listening),
429 with Retry-After, 500, a hang, a slow stream, malformed JSON, and embedding vectors that
are all zero, NaN or of the wrong size. The model client keeps its default timeout and
retries (only the per-turn deadline, when the app has one, is set short, to keep the run
short). After each fault is cleared, the same chat sends one more message.

Must hold: the process never dies and no turn ends in the adapter's "something went wrong"
(an exception escaped the turn: a crash); every inbound message has its user row; every
message under a fault gets an honest reply (the model's answer, or the short "your message is
saved" message) within the turn deadline; and the chat's next message is answered by the
model.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.reliability import harness
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from tests.fakes.openai_server import FakeOpenAI, hashed_embedding
from tests.fakes.telegram_api import FakeTelegramAPI

ANSWER = "ANSWER: " + " ".join(f"word{i}" for i in range(16))
DEADLINE_SET = 10.0  # seconds, when the app has a per-turn deadline setting
NO_DEADLINE_WAIT = 30.0  # how long a turn may take when it has none (the figure says so)
MARGIN = 5.0  # delivery after the deadline: the honest message still has to be sent


def zeros(text: str, dim: int) -> np.ndarray:
    return np.zeros(dim, dtype=np.float32)


def nans(text: str, dim: int) -> np.ndarray:
    return np.full(dim, np.nan, dtype=np.float32)


def too_long(text: str, dim: int) -> np.ndarray:
    return hashed_embedding(text, dim + 3)


@dataclass(frozen=True)
class Fault:
    name: str
    arm: Callable[[FakeOpenAI], None]


FAULTS = [
    Fault("429", lambda m: m.fail_next("status", status=429, retry_after=1, times=30,
                                       path="chat")),
    Fault("500", lambda m: m.fail_next("status", status=500, times=30, path="chat")),
    Fault("hang", lambda m: m.fail_next("slow", seconds=600, times=30, path="chat")),
    Fault("slow stream", lambda m: setattr(m, "chunk_delay", 0.4)),
    Fault("malformed JSON", lambda m: m.fail_next("malformed", times=30, path="chat")),
    Fault("zero vectors", lambda m: setattr(m, "embed_fn", zeros)),
    Fault("NaN vectors", lambda m: setattr(m, "embed_fn", nans)),
    Fault("wrong-size vectors", lambda m: setattr(m, "embed_fn", too_long)),
]
# The "model down" fault runs in a process of its own whose model URLs point at a closed port.


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Chat:
    """One Telegram private chat and what came back in it."""

    def __init__(self, fake: FakeTelegramAPI, user: int) -> None:
        self.fake = fake
        self.user = user
        self.pushed: list[str] = []  # platform message ids

    def say(self, text: str) -> None:
        msg = self.fake.push_private_message(self.user, text, first_name=f"U{self.user}")
        self.pushed.append(str(msg["message_id"]))

    def settled(self) -> list[str]:
        """The bot's messages here, once none is a half-streamed answer."""
        texts = self.fake.bot_texts(self.user)
        if any(t.startswith("ANSWER") and t != ANSWER for t in texts):
            return []
        return texts

    async def reply(self, count: int, timeout: float) -> tuple[list[str], float]:
        """Wait for the `count`-th settled reply; (replies, seconds waited)."""
        started = time.monotonic()
        got = await harness.wait_async(
            lambda: (r := self.settled()) and len(r) >= count and r, timeout, poll=0.1)
        return (list(got) if got else self.settled()), time.monotonic() - started


async def run_fault(fake: FakeTelegramAPI, model: FakeOpenAI, chat: Chat, fault: Fault | None,
                    per_fault: int, limit: float) -> dict[str, Any]:
    """`per_fault` messages under the fault (one at a time), then one after it is cleared."""
    out: dict[str, Any] = {"kinds": [], "slowest": 0.0, "late": 0}
    for i in range(per_fault):
        model.clear()
        if fault is not None:
            fault.arm(model)
        chat.say(f"message {i} under a fault: are you there?")
        replies, waited = await chat.reply(len(chat.pushed), limit)
        out["slowest"] = max(out["slowest"], waited)
        if len(replies) < len(chat.pushed):
            out["late"] += 1
            out["kinds"].append("none")
        else:
            out["kinds"].append(harness.kind_of_reply(replies[len(chat.pushed) - 1]))
    model.clear()
    chat.say("and now, after the fault, how are you?")
    replies, _ = await chat.reply(len(chat.pushed), limit)
    out["after"] = (harness.kind_of_reply(replies[len(chat.pushed) - 1])
                    if len(replies) >= len(chat.pushed) else "none")
    return out


@SUITE.case("model_faults", "down, 429, 500, hang, slow stream, malformed JSON, "
            "zero/NaN/wrong-size vectors",
            "0 crashes; every inbound row kept; an honest reply within the turn deadline")
async def model_faults(ctx: Context) -> CaseResult:
    per_fault = 1 if ctx.quick else 3
    deadline_env = harness.deadline_setting()
    limit = (DEADLINE_SET if deadline_env else NO_DEADLINE_WAIT) + MARGIN
    extra = {"STRATA_LLM_MAX_RETRIES": "2", "STRATA_LLM_RETRY_BACKOFF": "0.5",
             "STRATA_EMBED_MAX_RETRIES": "2"}
    if deadline_env:
        extra[deadline_env] = str(DEADLINE_SET)
    model = harness.model_server()
    model.responder = lambda body: ANSWER
    fake = FakeTelegramAPI().start()
    db = ctx.workdir / "strata.db"
    results: dict[str, dict[str, Any]] = {}
    died: list[str] = []
    chats: list[Chat] = []
    try:
        # The model server down: a process whose model and embedder URLs refuse connections.
        port = closed_port()
        down_env = harness.telegram_env(model, fake, db, **extra,
                                        STRATA_LLM_BASE_URL=f"http://127.0.0.1:{port}/v1",
                                        STRATA_EMBED_BASE_URL=f"http://127.0.0.1:{port}/v1")
        proc = harness.StrataProcess(down_env, ctx.workdir, "down")
        proc.start()
        if not await asyncio.to_thread(harness.wait_polling, fake, proc):
            raise RuntimeError("strata run did not start: " + proc.stderr()[-500:])
        chat = Chat(fake, 5000)
        chats.append(chat)
        down = await run_fault(fake, model, chat, None, per_fault, limit)
        down.pop("after")  # the server stays down in this process
        results["down"] = down
        if not proc.alive():
            died.append("down")
        proc.stop()

        proc = harness.StrataProcess(harness.telegram_env(model, fake, db, **extra),
                                     ctx.workdir, "faults")
        proc.start()
        if not await asyncio.to_thread(harness.wait_polling, fake, proc):
            raise RuntimeError("strata run did not start: " + proc.stderr()[-500:])
        for n, fault in enumerate(FAULTS, start=1):
            chat = Chat(fake, 5000 + n)
            chats.append(chat)
            results[fault.name] = await run_fault(fake, model, chat, fault, per_fault, limit)
            if not proc.alive():
                died.append(fault.name)
                break
        code = await asyncio.to_thread(proc.stop)
        if code not in (0, None):
            died.append(f"exit {code}")
    finally:
        model.stop()
        fake.stop()
    stored = harness.user_rows(db, "telegram")
    pushed = [(str(c.user), mid) for c in chats for mid in c.pushed]
    missing = [p for p in pushed if stored.get(p, 0) < 1]
    crashes = {name: r["kinds"].count("sorry") + (r.get("after") == "sorry")
               for name, r in results.items()}
    not_honest = {name: sum(1 for k in r["kinds"] if k not in ("honest", "answer"))
                  for name, r in results.items()}
    after_bad = [name for name, r in results.items() if r.get("after", "answer") != "answer"]
    failing = sorted({n for n, c in crashes.items() if c} | {n for n, c in not_honest.items()
                                                             if c} | set(after_bad))
    total_crashes = sum(crashes.values()) + len(died)
    slowest = max(r["slowest"] for r in results.values())
    deadline = f"{DEADLINE_SET:.0f} s deadline" if deadline_env else (
        f"no turn deadline setting, waited {NO_DEADLINE_WAIT:.0f} s")
    figure = (f"{total_crashes} crashes, {len(missing)}/{len(pushed)} inbound rows missing, "
              f"{sum(not_honest.values())} turns without an honest reply in time "
              f"({deadline}; slowest {slowest:.1f} s)")
    if failing:
        figure += "; failing: " + ", ".join(failing)
    ok = total_crashes == 0 and not missing and not failing
    return CaseResult("model_faults", figure, ok, details={
        "faults": results, "process_died": died, "missing_rows": missing,
        "deadline_setting": deadline_env})
