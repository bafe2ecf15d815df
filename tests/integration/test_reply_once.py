"""A reply is shown once even if its process dies after sending it and before its queue entry
is deleted: Matrix (a real Synapse) dedupes the re-run's sends by txnId, Discord (the fake,
which follows Discord's `enforce_nonce` rule) by nonce.

Each test has two lives of the bot on one database file and one bot account. In the first,
the reply side is `DiesAfterSending`: the platform takes the whole reply, then the turn hangs
where the entry would be deleted, and the "process" is killed there (its turns cancelled, the
adapter stopped, the app closed). The second life starts a fresh app and adapter, which run
the still-queued turn again: the reply comes from the transcript, its sends carry the same keys
and get the first life's messages back. The person sees one message with the whole answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from strata.adapters.discord.adapter import DiscordAdapter
from strata.adapters.matrix.adapter import MatrixAdapter
from strata.adapters.runtime import ReplyOps
from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import AccessSettings, MatrixSettings, Settings
from strata.core.types import InboundMessage, ReplyKey
from tests.fakes.discord_api import FakeDiscord, running_fake_discord
from tests.fakes.openai_server import FakeOpenAI, last_user_text
from tests.fakes.synapse import Synapse

from .test_matrix_adapter import Human, open_room

QUESTION = "what should I pack for the trip?"
ANSWER = "Boots, a rain jacket and a map: the forecast says showers all weekend."
ALICE = 111_111_111_111_111_111
WAIT = 30.0  # generous: a loaded machine is slow; a passing wait returns at once


class DiesAfterSending:
    """The reply side of a process that dies once the platform has the whole answer: the send
    or edit that shows it goes through, then the turn hangs before its entry is deleted."""

    def __init__(self, real: MatrixAdapter | DiscordAdapter) -> None:
        self.real = real
        self.platform = real.platform
        self.shown = asyncio.Event()

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> ReplyOps:
        ops = self.real.room(msg, reply_to, once)
        send, edit = ops.send, ops.edit

        async def hang_once_shown(text: str) -> None:
            if text == ANSWER:
                self.shown.set()
                await asyncio.Event().wait()  # killed here, never deleted from the queue

        async def send_then_die(text: str) -> str:
            msg_id = await send(text)
            await hang_once_shown(text)
            return msg_id

        async def edit_then_die(msg_id: str, text: str) -> None:
            assert edit is not None
            await edit(msg_id, text)
            await hang_once_shown(text)

        ops.send, ops.edit = send_then_die, edit_then_die if edit is not None else None
        return ops


def answering(body: dict[str, object]) -> str | None:
    return ANSWER if last_user_text(body) == QUESTION else None


async def queued_attempts(app: App) -> list[int]:
    return [int(r["attempts"]) for r in await app.db.fetchall("SELECT attempts FROM turn_queue")]


async def die_after_sending(settings: Settings, clock: ManualClock,
                            start: Callable[[App], Awaitable[MatrixAdapter | DiscordAdapter]],
                            write: Callable[[MatrixAdapter | DiscordAdapter], Awaitable[None]],
                            ) -> None:
    """The first life: the whole reply reaches the platform, then the process is killed."""
    app = await App.create(settings, clock=clock)
    try:
        adapter = await start(app)
        dying = DiesAfterSending(adapter)
        app.turns().attach(dying)  # this life's turns are shown through it
        await write(adapter)
        async with asyncio.timeout(WAIT):
            await dying.shown.wait()
        await app.turns().detach(dying, 0)  # the kill: the hanging turn is cancelled
        await adapter.stop()
        assert await queued_attempts(app) == [1]  # still queued, one run started
    finally:
        await app.close()


async def restart(settings: Settings, clock: ManualClock,
                  start: Callable[[App], Awaitable[MatrixAdapter | DiscordAdapter]]) -> None:
    """The second life: a fresh app and adapter run the queued turn again, to the end."""
    app = await App.create(settings, clock=clock)
    try:
        adapter = await start(app)
        try:
            async with asyncio.timeout(WAIT):
                await app.turns().idle(adapter.platform)
            assert await queued_attempts(app) == []
        finally:
            await adapter.stop()
    finally:
        await app.close()


async def test_matrix_reply_is_shown_once_after_a_crash_before_dequeuing(
    settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI, synapse: Synapse,
    tmp_path: Path,
) -> None:
    fake_openai.responder = answering
    bot = synapse.register(displayname="Strata")
    matrix = MatrixSettings(homeserver=synapse.base_url, user=bot.user_id,
                            access_token=bot.access_token, device_id=bot.device_id,
                            store_path=str(tmp_path / "store"), encryption=False,
                            request_timeout=10, max_timeouts=1)
    alice = Human(synapse, "Alice")
    room: list[str] = []

    async def start(app: App) -> MatrixAdapter:
        adapter = MatrixAdapter(matrix, access=AccessSettings(), bot_name="Strata",
                                poll_timeout_ms=500, edit_interval=0.0)
        await adapter.connect(app.turns())
        return adapter

    async def write(adapter: MatrixAdapter | DiscordAdapter) -> None:
        assert isinstance(adapter, MatrixAdapter)
        room.append(await open_room(alice, adapter))
        await alice.say(room[0], QUESTION)

    try:
        await die_after_sending(settings, clock, start, write)
        await alice.sync_until(lambda: alice.bot_texts(room[0], bot.user_id) == [ANSWER])
        before = alice.from_bot(room[0], bot.user_id)
        await restart(settings, clock, start)
        # The second life's last event is its edit of the first message (a retry makes sure the
        # message it got back shows this run's text): once that is seen, so is everything sent.
        await alice.sync_until(lambda: len(alice.from_bot(room[0], bot.user_id)) > len(before))
        events = alice.from_bot(room[0], bot.user_id)
        originals = [e for e in events if "m.new_content" not in e["content"]]
        assert len(originals) == 1, [e["content"]["body"] for e in originals]
        assert alice.bot_texts(room[0], bot.user_id) == [ANSWER]
        assert events[-1]["content"]["m.relates_to"]["event_id"] == originals[0]["event_id"]
    finally:
        await alice.close()
    # The reply was stored before the crash: the second life showed it without the model.
    asked = [r for r in fake_openai.chat_requests() if last_user_text(r) == QUESTION]
    assert len(asked) == 1


@pytest.fixture
def fake_discord() -> Iterator[FakeDiscord]:
    with running_fake_discord() as server:
        yield server


@pytest.fixture
async def discord_lives(fake_discord: FakeDiscord) -> AsyncIterator[
        Callable[[App], Awaitable[DiscordAdapter]]]:
    started: list[DiscordAdapter] = []

    async def start(app: App) -> DiscordAdapter:
        adapter = DiscordAdapter(fake_discord.token, guild_ready_timeout=0.05, ready_timeout=WAIT,
                                 edit_interval=0.0)
        started.append(adapter)
        await adapter.connect(app.turns())
        return adapter

    yield start
    for adapter in started:  # stopping twice is harmless; a failed test may leave one running
        with contextlib.suppress(Exception):
            await adapter.stop()


async def test_discord_reply_is_shown_once_after_a_crash_before_dequeuing(
    settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI, fake_discord: FakeDiscord,
    discord_lives: Callable[[App], Awaitable[DiscordAdapter]],
) -> None:
    fake_openai.responder = answering
    dm: list[int] = []

    async def write(adapter: MatrixAdapter | DiscordAdapter) -> None:
        dm.append(int(fake_discord.push_dm(ALICE, "alice", QUESTION)["channel_id"]))

    await die_after_sending(settings, clock, discord_lives, write)
    [first] = fake_discord.bot_messages(dm[0])
    assert first.content == ANSWER
    await restart(settings, clock, discord_lives)
    [shown] = fake_discord.bot_messages(dm[0])  # the same message, no second one
    assert shown.id == first.id and shown.content == ANSWER
    creates = fake_discord.requests_to("POST", "/channels/{channel_id}/messages")
    nonces = [r.json["nonce"] for r in creates if r.json and r.json.get("nonce")]
    assert len(nonces) == 2 and nonces[0] == nonces[1]  # the re-run's send, with the same key
    asked = [r for r in fake_openai.chat_requests() if last_user_text(r) == QUESTION]
    assert len(asked) == 1
