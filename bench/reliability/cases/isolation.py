"""`isolation`: many persons whose messages share most of their words, random traffic in
private chats (two platforms per human, some joined with `/link`), shared rooms, and
`/forget`.

Every message carries one marker word that says whose it is: `kx<h>s<n>` for human h's
private chats, `rx<g>s<n>` for shared room g. The other words come from a small common pool,
so without scoping every person's memory would match every query. Each turn's prompt (as the
model received it) is searched for markers. Must hold: no marker of another human in a
private turn (nor of a room the human is not in), no private marker in a shared room, no
marker of another room, and no marker the human has since `/forget`-ed.
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta
from typing import Any

from bench.reliability import harness
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.clock import ManualClock

START = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
MARKER = re.compile(r"\b(kx|rx)(\d+)s(\d+)\b")
LINK_CODE = re.compile(r"`/link ([^`]+)`")
POOL = [
    "my dog likes the long walk in the park on sunday",
    "I cooked pasta with tomatoes and garlic for dinner tonight",
    "the train to work was late again this morning",
    "my sister visits next week and we plan a trip to the lake",
    "I started reading a book about the history of maps",
    "the garden needs water and the roses need pruning",
    "my doctor said I should sleep more and drink less coffee",
    "we bought a new blue bicycle for the kids",
]


def tg_id(human: int) -> str:
    return str(7000 + human)


class World:
    """Who is who, which room has whom, what each human has forgotten."""

    def __init__(self, rng: random.Random, humans: int, rooms: int) -> None:
        self.rng = rng
        self.humans = humans
        self.members = {g: set(rng.sample(range(humans), k=max(2, humans // 2)))
                        for g in range(rooms)}
        self.counter = 0
        self.forgotten: dict[int, set[str]] = {h: set() for h in range(humans)}
        self.linked: set[int] = set()

    def marker(self, prefix: str, who: int) -> str:
        self.counter += 1
        return f"{prefix}{who}s{self.counter}"

    def sentence(self) -> str:
        return self.rng.choice(POOL)


def violations(prompt: str, world: World, human: int, room: int | None) -> list[str]:
    found = []
    for prefix, who, n in MARKER.findall(prompt):
        token, owner = f"{prefix}{who}s{n}", int(who)
        if room is None:
            if prefix == "kx" and owner != human:
                found.append(f"private turn of h{human} saw {token} (h{owner})")
            if prefix == "rx" and human not in world.members[owner]:
                found.append(f"private turn of h{human} saw {token} (room {owner})")
        else:
            if prefix == "kx":
                found.append(f"room {room} saw private {token}")
            if prefix == "rx" and owner != room:
                found.append(f"room {room} saw {token} of room {owner}")
        if room is None and token in world.forgotten[human]:
            found.append(f"h{human} saw forgotten {token}")
    return found


def prompt_of(requests: list[dict[str, Any]], text: str) -> tuple[str, str]:
    """The whole prompt of the turn whose message has `text`, and its recalled-memory part."""
    for body in reversed(requests):
        messages = body.get("messages") or [{}]
        if text in str(messages[-1].get("content") or ""):
            recalled = "\n".join(str(m.get("content") or "") for m in messages
                                 if m.get("role") == "system"
                                 and MEMORY_PREAMBLE in str(m.get("content") or ""))
            return json.dumps(messages, ensure_ascii=False), recalled
    return "", ""


@SUITE.case("isolation",
            "many persons with overlapping words, random traffic, `/link`, `/forget`, "
            "shared rooms",
            "0 items recalled across persons; 0 private items in a shared room")
async def isolation(ctx: Context) -> CaseResult:
    humans, rooms, turns = (8, 2, 160) if ctx.quick else (24, 4, 1200)
    rng = random.Random(ctx.seed)
    world = World(rng, humans, rooms)
    clock = ManualClock(START)
    model = harness.model_server()
    bad: list[str] = []
    stats = {"private_turns": 0, "room_turns": 0, "links": 0, "forgets": 0,
             "markers_seen": 0, "markers_recalled": 0}
    try:
        settings = harness.settings_for(model, ctx.workdir / "strata.db",
                                        STRATA_EPISODES_USE_MODEL="false",
                                        STRATA_LIFECYCLE_COMPACT_AFTER_TURN="false",
                                        STRATA_ACCESS_MODEL_CALLS_PER_MINUTE="1000")
        async with harness.app_for(settings, clock) as app:

            async def say(platform: str, user: str, text: str, *, room: str | None = None,
                          private: bool = True, addressed: bool = True) -> str:
                model.clear()
                msg = harness.inbound(platform, user, text, clock.now(), room=room,
                                      private=private, addressed=addressed)
                result = await app.processor.handle(msg)
                clock.advance(timedelta(seconds=rng.randint(20, 400)))
                return result.reply if result is not None else ""

            for step in range(turns):
                human = rng.randrange(humans)
                roll = rng.random()
                if roll < 0.03 and human not in world.linked:
                    answer = await say("console", f"h{human}", "/link")
                    code = LINK_CODE.search(answer)
                    if code:
                        await say("telegram", tg_id(human), f"/link {code.group(1)}")
                        world.linked.add(human)
                        stats["links"] += 1
                    continue
                if roll < 0.06:
                    token = world.marker("kx", human)
                    await say("console", f"h{human}", f"{world.sentence()} {token}")
                    reply = await say("console", f"h{human}", f"/forget {token}")
                    if "/forget yes" in reply:
                        await say("console", f"h{human}", "/forget yes")
                    world.forgotten[human].add(token)
                    stats["forgets"] += 1
                    continue
                text_room: int | None = None
                if roll < 0.35:
                    candidates = [g for g, who in world.members.items() if human in who]
                    if candidates:
                        text_room = rng.choice(candidates)
                if text_room is None:
                    token = world.marker("kx", human)
                    text = f"{world.sentence()} {token}"
                    platform, user = rng.choice([("console", f"h{human}"),
                                                 ("telegram", tg_id(human))])
                    await say(platform, user, text)
                    stats["private_turns"] += 1
                else:
                    token = world.marker("rx", text_room)
                    text = f"{world.sentence()} {token}"
                    await say("telegram", tg_id(human), text, room=f"-100{text_room}",
                              private=False, addressed=rng.random() < 0.7)
                    stats["room_turns"] += 1
                prompt, recalled = prompt_of(model.chat_requests(), token)
                stats["markers_seen"] += len(MARKER.findall(prompt))
                stats["markers_recalled"] += len(MARKER.findall(recalled))
                bad += violations(prompt, world, human, text_room)
                if step % 50 == 49:
                    await app.processor.drain()
            await app.processor.drain()
    finally:
        model.stop()
    leaks_private = [v for v in bad if v.startswith("private turn") or "forgotten" in v]
    leaks_room = [v for v in bad if v.startswith("room")]
    ok = not bad and stats["markers_recalled"] > 0  # else recall never ran: proves nothing
    figure = (f"{len(leaks_private)} items across persons, {len(leaks_room)} private/other "
              f"items in shared rooms over {stats['private_turns']} private + "
              f"{stats['room_turns']} room turns ({humans} humans, {stats['links']} /link, "
              f"{stats['forgets']} /forget, {stats['markers_recalled']} markers recalled)")
    return CaseResult("isolation", figure, ok,
                      details={**stats, "violations": bad[:20], "humans": humans,
                               "rooms": rooms})
