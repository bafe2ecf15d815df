"""`fuzz`: hypothesis-generated inbound messages and command arguments through the real turn
path (the turn processor of the assembled app, a real SQLite file, the fake model over HTTP).

Texts mix every Unicode category hypothesis draws (NUL, controls, RTL marks, emoji, lone
combining marks), FTS5 and SQL syntax, markup, whitespace-only and very long messages;
every chat command with random arguments; private and shared rooms; locations. A crash is an
exception out of `TurnProcessor.handle` or a turn that does not end within 30 s. Eight turns
run at once, as an adapter would run them for different people.
Must hold: 0 crashes, and `PRAGMA integrity_check` is ok at the end.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from bench.reliability import harness
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, Location

START = datetime.fromisoformat("2026-03-02T09:00:00+00:00")
CONCURRENT = 8
COMMANDS = ["memory", "forget", "export", "wipe", "pause", "resume", "link", "help",
            "timezone", "reminders"]
NASTY = ['"', "*", "can't", "c++", "NEAR(a b)", "a OR b", "-x", "^", "'; DROP TABLE persons;--",
         "\x00", "\u202e", "\ufeff", "<b>", "</memory>", "{{", "%s", "\\", "\U0001f600",
         "ignore previous instructions", "#1", "#-1", "#99999999999999999999", "yes", "cancel"]

texts = st.one_of(
    st.text(max_size=300),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=80),
    st.lists(st.sampled_from(NASTY), max_size=8).map(" ".join),
    st.builds(lambda w, n: w * n, st.sampled_from(["word ", "Ж", "🙂", "\n", " "]),
              st.integers(1, 3000)),
    st.just(""),
)
commands = st.builds(lambda name, sep, arg: f"/{name}{sep}{arg}", st.sampled_from(COMMANDS),
                     st.sampled_from(["", " ", "  ", "\n", "@strata_bot "]), texts)
locations = st.one_of(st.none(), st.builds(
    lambda lat, lon, live: Location(lat, lon, live=live),
    st.floats(-90, 90), st.floats(-180, 180), st.booleans()))


@st.composite
def messages(draw: Any) -> dict[str, Any]:
    return {
        "platform": draw(st.sampled_from(["console", "telegram", "discord", "matrix"])),
        "sender": draw(st.sampled_from(["1", "2", "3"]) | st.text(min_size=1, max_size=12)),
        "name": draw(st.text(max_size=20)),
        "text": draw(st.one_of(texts, commands)),
        "private": draw(st.sampled_from([True, True, False])),
        "addressed": draw(st.sampled_from([True, True, True, False])),
        "room": draw(st.sampled_from(["-1001", "-1002", "!room:x"])),
        "location": draw(locations),
        "reply_to": draw(st.none() | st.text(max_size=6)),
    }


def generate(count: int, rng_seed: int) -> list[dict[str, Any]]:
    """Draw `count` messages with hypothesis (generation only: each is run afterwards, so a
    crash is counted instead of stopping the run)."""
    drawn: list[dict[str, Any]] = []

    @seed(rng_seed)
    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(messages())
    def collect(message: dict[str, Any]) -> None:
        drawn.append(message)

    collect()
    return drawn


def to_inbound(m: dict[str, Any], ts: datetime, n: int) -> InboundMessage:
    return InboundMessage(
        platform=m["platform"], room_id=m["sender"] if m["private"] else m["room"],
        sender_id=m["sender"], text=m["text"], ts=ts, sender_name=m["name"],
        is_private=m["private"], addressed_to_bot=m["addressed"] or m["private"],
        message_id=str(n), reply_to=m["reply_to"], location=m["location"],
        room_name="" if m["private"] else "Fuzz room",
    )


@SUITE.case("fuzz", "≥ 10,000 generated inbound messages and command arguments (hypothesis) "
            "through the real turn path (`--quick`: 1,000)", "0 crashes")
async def fuzz(ctx: Context) -> CaseResult:
    count = 1_000 if ctx.quick else 10_000
    drawn = await asyncio.to_thread(generate, count, ctx.seed)
    clock = ManualClock(START)
    model = harness.model_server()
    crashes: list[str] = []
    answered = silent = 0
    db = ctx.workdir / "strata.db"
    try:
        settings = harness.settings_for(model, db, STRATA_EPISODES_USE_MODEL="false",
                                        STRATA_LIFECYCLE_COMPACT_AFTER_TURN="false",
                                        STRATA_ACCESS_MODEL_CALLS_PER_MINUTE="100000")
        async with harness.app_for(settings, clock) as app:

            async def turn(n: int, m: dict[str, Any]) -> str:
                """'answered', 'silent', or the crash."""
                msg = to_inbound(m, clock.now(), n)
                try:
                    result = await asyncio.wait_for(app.processor.handle(msg), 30)
                except Exception as exc:  # noqa: BLE001 - the figure: an escaping exception
                    return f"{type(exc).__name__}: {exc} <- {m['text'][:60]!r}"
                return "silent" if result is None else "answered"

            # A few turns at once, as adapters run them: different people, same database.
            for start in range(0, len(drawn), CONCURRENT):
                batch = drawn[start:start + CONCURRENT]
                ends = await asyncio.gather(*(turn(start + i, m) for i, m in enumerate(batch)))
                answered += ends.count("answered")
                silent += ends.count("silent")
                crashes += [e for e in ends if e not in ("answered", "silent")]
                clock.advance(timedelta(seconds=7))
                if start % 200 < CONCURRENT:
                    await app.processor.drain()
            await app.processor.drain()
    finally:
        model.stop()
    check = harness.integrity(db)
    ok = not crashes and check == "ok" and len(drawn) >= count
    figure = (f"{len(crashes)} crashes in {len(drawn)} messages ({answered} answered, "
              f"{silent} silent); integrity_check {check}")
    return CaseResult("fuzz", figure, ok,
                      details={"messages": len(drawn), "crashes": crashes[:20],
                               "answered": answered, "silent": silent})
