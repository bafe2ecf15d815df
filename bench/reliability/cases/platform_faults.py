"""`platform_faults`: the real platform adapters of each platform, in front of the real turn
processor, while the platform misbehaves.

- Telegram (the Bot API fake): 429 with `retry_after` on the answer, a 502 on the answer, the
  long poll failing twice and an edit failing while a reply streams (the connection to the
  Bot API cut mid-stream), and HTML entities the API rejects.
- Discord (the REST + gateway fake, the real discord.py client): 429 with `retry_after`, a
  502 on the answer, and the gateway WebSocket closed by the server while a reply streams.
- Matrix (a real Synapse behind a fault-injecting proxy, the real matrix-nio client): 429
  `M_LIMIT_EXCEEDED` with `retry_after_ms`, a 502 on the answer, and the `/sync` connection
  cut mid-stream twice.

"Rejected entities" is Telegram's own failure (it parses HTML into entities); Discord and
Matrix take the text as sent, so they have no such case. After every connection cut the
same chat sends another message, which must be answered: the adapter reconnected.
Must hold: every message gets its full answer (0 lost replies) and every cut is followed by
a working connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.reliability import harness
from bench.reliability.fault_proxy import FaultProxy
from bench.reliability.registry import CaseResult, Context
from bench.reliability.suite import SUITE
from strata.app.compose import App
from tests.fakes.openai_server import FakeOpenAI, last_user_text

TAG = re.compile(r"\[([\w-]+)\]")
WAIT = 40.0


def expected(tag: str) -> str:
    if tag.endswith("-cut"):
        # Several sentences: a reply streams a finished sentence at a time
        # (reply_checks.Settled), so a one-sentence answer is sent once, never edited, and
        # no fault could land mid-stream. The other faults hit a reply's only send.
        return (f"Answer for {tag}: everything is fine. Here are a few more words to stream. "
                "And a few more, so the reply is edited while it streams.")
    return f"Answer for {tag}: everything is fine, and here are a few more words to stream."


def answer(body: dict[str, Any]) -> str:
    found = TAG.search(last_user_text(body))
    return expected(found.group(1)) if found else "ok"


@dataclass
class Outcome:
    platform: str
    fault: str
    delivered: bool
    reconnected: bool | None = None  # for connection cuts
    injected: bool = True  # the fault did happen (else the outcome proves nothing)

    def line(self) -> str:
        tail = "" if self.reconnected is None else (
            ", reconnected" if self.reconnected else ", NOT reconnected")
        hit = "" if self.injected else " (fault NOT injected)"
        return (f"{self.platform} {self.fault}: {'delivered' if self.delivered else 'LOST'}"
                f"{tail}{hit}")


def reset(model: FakeOpenAI, chunk_delay: float = 0.0) -> None:
    model.clear()
    model.responder = answer
    model.chunk_delay = chunk_delay


async def telegram(app: App, model: FakeOpenAI) -> list[Outcome]:
    from strata.adapters.telegram.adapter import TelegramAdapter
    from tests.fakes.telegram_api import FakeTelegramAPI

    fake = FakeTelegramAPI().start()
    adapter = TelegramAdapter(fake.token, base_url=fake.base_url,
                              base_file_url=fake.base_file_url, poll_timeout=1,
                              edit_interval=0.3, shutdown_grace=5)
    group, out = -100777, []

    async def delivered(chat: int, tag: str) -> bool:
        return bool(await harness.wait_async(lambda: expected(tag) in fake.bot_texts(chat),
                                             WAIT, poll=0.1))

    try:
        await adapter.connect(app.turns())
        cases: list[tuple[str, int, Callable[[], None]]] = [
            ("429 retry_after", 429, lambda: fake.fail_next("sendMessage", 429, retry_after=1)),
            ("5xx", 502, lambda: fake.fail_next("sendMessage", 502)),
            ("rejected entities", 400, lambda: fake.fail_next(
                "sendMessage", 400, "Bad Request: can't parse entities: Unsupported start tag "
                "\"x\" at byte offset 3")),
        ]
        for n, (name, status, arm) in enumerate(cases):
            reset(model)
            before = len(fake.calls("sendMessage"))
            arm()
            tag = f"tg-{n}"
            fake.push_group_message(group, 4100 + n, f"[{tag}] a question", mention_bot=True)
            ok = await delivered(group, tag)
            hit = status in [c["status"] for c in fake.calls("sendMessage")[before:]]
            out.append(Outcome("telegram", name, ok, injected=hit))
        # The Bot API connection cut: two failed long polls, and an edit failing mid-stream.
        reset(model, chunk_delay=0.1)
        user = 4200
        fake.fail_next("getUpdates", 502, times=2)
        fake.fail_next("editMessageText", 502)
        fake.push_private_message(user, "[tg-cut] tell me something long")
        first = await delivered(user, "tg-cut")
        reset(model)
        fake.push_private_message(user, "[tg-after] and again")
        again = await delivered(user, "tg-after")
        polls = [c["status"] for c in fake.calls("getUpdates")]
        edits = [c["status"] for c in fake.calls("editMessageText")]
        out.append(Outcome("telegram", "disconnect mid-stream", first, again,
                           injected=502 in polls and 502 in edits))
    finally:
        with contextlib.suppress(Exception):
            await adapter.stop()
        fake.stop()
    return out


async def discord(app: App, model: FakeOpenAI) -> list[Outcome]:
    from strata.adapters.discord.adapter import DiscordAdapter
    from tests.fakes.discord_api import running_fake_discord

    out = []
    with running_fake_discord() as fake:
        adapter = DiscordAdapter(fake.token, commands=app.commands.menu(),
                                 guild_ready_timeout=0.05, ready_timeout=WAIT,
                                 edit_interval=0.3)

        async def ask(user: int, tag: str, text: str) -> bool:
            pushed = await asyncio.to_thread(fake.push_dm, user, f"user{user}", f"[{tag}] {text}")
            channel = int(pushed["channel_id"])
            return bool(await harness.wait_async(
                lambda: any(m.content == expected(tag) for m in fake.bot_messages(channel)),
                WAIT, poll=0.1))

        try:
            await adapter.connect(app.turns())
            route = "POST /channels/{id}/messages"
            cases: list[tuple[str, int, Callable[[], None]]] = [
                ("429 retry_after", 429,
                 lambda: fake.fail_next(route, status=429, retry_after=0.5)),
                ("5xx", 502, lambda: fake.fail_next(route, status=502)),
            ]
            posts = "/channels/{channel_id}/messages"
            for n, (name, status, arm) in enumerate(cases):
                reset(model)
                before = len(fake.requests_to("POST", posts))
                arm()
                ok = await ask(900_000 + n, f"dc-{n}", "a question")
                hit = status in [r.status for r in fake.requests_to("POST", posts)[before:]]
                out.append(Outcome("discord", name, ok, injected=hit))
            # The gateway closed by the server while a reply streams.
            reset(model, chunk_delay=0.1)
            user = 900_100
            sessions_before = fake.connected_sessions
            asking = asyncio.create_task(ask(user, "dc-cut", "tell me something long"))
            await asyncio.sleep(0.8)
            await asyncio.to_thread(fake.drop_connections, 4000)
            first = await asking
            back = await harness.wait_async(lambda: fake.connected_sessions >= sessions_before,
                                            WAIT, poll=0.1)
            reset(model)
            again = await ask(user, "dc-after", "and again")
            out.append(Outcome("discord", "disconnect mid-stream", first, bool(back) and again,
                               injected=fake.resumes + len(fake.identifies) > 1))
        finally:
            with contextlib.suppress(Exception):
                await adapter.stop()
    return out


async def matrix(app: App, model: FakeOpenAI, workdir: Path) -> list[Outcome]:
    from strata.adapters.matrix.adapter import MatrixAdapter
    from strata.core.config import AccessSettings, MatrixSettings
    from tests.fakes.synapse import Synapse
    from tests.integration.test_matrix_adapter import Human, open_room

    out = []
    server = await asyncio.to_thread(lambda: Synapse().start())
    proxy = FaultProxy(server.base_url).start()
    human: Any = None
    adapter: Any = None
    try:
        bot_user = server.register("strata-bot", displayname="Strata")
        adapter = MatrixAdapter(
            MatrixSettings(homeserver=proxy.url, user=bot_user.user_id,
                           access_token=bot_user.access_token, device_id=bot_user.device_id,
                           store_path=str(workdir / "matrix-store"), encryption=False,
                           request_timeout=10, max_timeouts=3),
            access=AccessSettings(), bot_name="Strata", poll_timeout_ms=500, edit_interval=0.3)
        await adapter.connect(app.turns())
        human = Human(server, "Alice")
        room = await open_room(human, adapter)
        bot_id = adapter.bot.user_id

        async def ask(tag: str, text: str) -> bool:
            await human.say(room, f"[{tag}] {text}")
            try:
                await human.sync_until(lambda: expected(tag) in human.bot_texts(room, bot_id),
                                       deadline=WAIT)
            except AssertionError:
                return False
            return True

        send = r"/rooms/.*/send/m\.room\.message/"
        cases: list[tuple[str, Callable[[], None]]] = [
            ("429 retry_after", lambda: proxy.fail_next("PUT", send, status=429,
                                                         retry_after_ms=700)),
            ("5xx", lambda: proxy.fail_next("PUT", send, status=502)),
        ]
        for n, (name, arm) in enumerate(cases):
            reset(model)
            before = len(proxy.injected)
            arm()
            ok = await ask(f"mx-{n}", "a question")
            out.append(Outcome("matrix", name, ok, injected=len(proxy.injected) > before))
        reset(model, chunk_delay=0.1)
        proxy.fail_next("GET", r"/sync", "drop", after=0.3, times=2)
        first = await ask("mx-cut", "tell me something long")
        reset(model)
        again = await ask("mx-after", "and again")
        cut = sum(1 for _, path, kind in proxy.injected if kind == "drop" and "sync" in path)
        out.append(Outcome("matrix", "disconnect mid-stream", first, again, injected=cut > 0))
    finally:
        if adapter is not None:
            with contextlib.suppress(Exception):
                await adapter.stop()
        if human is not None:
            await human.close()
        proxy.stop()
        await asyncio.to_thread(server.stop)
    return out


@SUITE.case("platform_faults", "429 with retry_after, 5xx, disconnect mid-stream, rejected "
            "entities, on Telegram, Discord and Matrix", "0 lost replies; reconnects")
async def platform_faults(ctx: Context) -> CaseResult:
    model = harness.model_server()
    model.responder = answer
    outcomes: list[Outcome] = []
    errors: list[str] = []
    try:
        settings = harness.settings_for(model, ctx.workdir / "strata.db",
                                        STRATA_EPISODES_USE_MODEL="false",
                                        STRATA_LIFECYCLE_COMPACT_AFTER_TURN="false")
        async with harness.app_for(settings) as app:
            for name, run in (("telegram", lambda: telegram(app, model)),
                              ("discord", lambda: discord(app, model)),
                              ("matrix", lambda: matrix(app, model, ctx.workdir))):
                try:
                    outcomes += await asyncio.wait_for(run(), 300)
                except Exception as exc:  # noqa: BLE001 - a platform's harness failing fails the figure
                    errors.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
            await app.processor.drain()
    finally:
        model.stop()
    lost = [o for o in outcomes if not o.delivered]
    cuts = [o for o in outcomes if o.reconnected is not None]
    reconnected = sum(1 for o in cuts if o.reconnected)
    platforms = sorted({o.platform for o in outcomes})
    figure = (f"{len(lost)} lost replies of {len(outcomes)} faults on {', '.join(platforms)}; "
              f"{reconnected}/{len(cuts)} reconnected")
    if lost:
        figure += "; lost: " + ", ".join(f"{o.platform} {o.fault}" for o in lost)
    if errors:
        figure += "; harness errors: " + "; ".join(errors)
    missed = [o for o in outcomes if not o.injected]
    if missed:
        figure += "; faults not injected: " + ", ".join(f"{o.platform} {o.fault}" for o in missed)
    ok = (not lost and not errors and not missed and reconnected == len(cuts) == 3
          and len(platforms) == 3)
    return CaseResult("platform_faults", figure, ok, details={
        "outcomes": [o.line() for o in outcomes], "errors": errors})
