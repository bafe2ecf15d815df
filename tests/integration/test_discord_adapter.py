"""The Discord adapter end to end: the real discord.py client logged in to the fake Discord
(tests/fakes/discord_api.py), the real turn processor, a real SQLite file and the fake
OpenAI-compatible server, all over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from strata.adapters.discord.adapter import (
    DM_ONLY_TEXT,
    UNLISTED_TEXT,
    DiscordAdapter,
    build_discord_adapter,
)
from strata.app.adapter_wiring import configured_adapters
from strata.app.compose import App
from strata.bot.commands import CommandContext, CommandReply
from strata.bot.delivery import SORRY
from strata.bot.failures import model_error_message
from strata.core.clock import ManualClock, SystemClock
from strata.core.config import AccessSettings, DiscordSettings, LlmSettings, Settings
from strata.core.errors import ConfigError, ModelUnavailableError
from strata.core.types import InboundMessage
from tests.fakes.discord_api import (
    INTENT_DIRECT_MESSAGES,
    INTENT_MESSAGE_CONTENT,
    FakeDiscord,
    RecordedMessage,
    running_fake_discord,
)
from tests.fakes.openai_server import FakeOpenAI, Reply, last_user_text

ALICE = 111_111_111_111_111_111
BOB = 222_222_222_222_222_222
MESSAGES = "/channels/{channel_id}/messages"
MESSAGE = "/channels/{channel_id}/messages/{message_id}"
# Generous: a loaded CI machine can be slow; a passing wait returns at once.
WAIT = 20.0


@pytest.fixture
def fake_discord() -> Iterator[FakeDiscord]:
    with running_fake_discord() as server:
        yield server


def commands_of(app: App) -> list[tuple[str, str]]:
    return [(c.name, c.summary) for c in app.commands.commands.values()]


async def start_adapter(app: App, fake: FakeDiscord, **options: Any) -> DiscordAdapter:
    options.setdefault("edit_interval", 1.0)
    adapter = DiscordAdapter(
        fake.token,
        commands=commands_of(app),
        guild_ready_timeout=0.05,
        ready_timeout=WAIT,
        **options,
    )
    await adapter.connect(app.turns())
    return adapter


@pytest.fixture
async def adapter(app: App, fake_discord: FakeDiscord) -> AsyncIterator[DiscordAdapter]:
    running = await start_adapter(app, fake_discord)
    yield running
    await running.stop()


def finished(fake: FakeDiscord, channel_id: int, count: int) -> list[RecordedMessage]:
    """The bot's messages in `channel_id` once there are `count`, none is a partial, and every
    request has its answer recorded (the fake logs a request before it answers it)."""
    msgs = fake.bot_messages(channel_id)
    if (len(msgs) >= count and not any(m.content.endswith(" …") for m in msgs)
            and all(r.status is not None for r in fake.requests)):
        return msgs
    return []


async def dm_and_wait(fake: FakeDiscord, user: int, name: str, text: str) -> RecordedMessage:
    """Alice (or whoever) DMs the bot; wait for the finished reply to that message."""
    dm = fake.dm_channel_id(user)
    before = len(fake.bot_messages(dm)) if dm is not None else 0
    pushed = fake.push_dm(user, name, text)
    channel_id = int(pushed["channel_id"])
    msgs = await fake.wait_for(lambda f: finished(f, channel_id, before + 1), timeout=WAIT)
    return msgs[before]


def remembered_cat(body: dict[str, Any]) -> str:
    """A model that can only know the cat's name if an earlier turn is in its prompt."""
    question = last_user_text(body)
    if "cat" not in question or "?" not in question:
        return "Noted!"
    earlier = " ".join(
        str(m.get("content") or "") for m in body["messages"][:-1] if m.get("role") != "system"
    )
    found = re.search(r"my cat is called (\w+)", earlier)
    return f"Your cat is called {found.group(1)}." if found else "I don't know your cat's name."


async def test_dm_round_trip_remembers_an_earlier_turn(
    app: App, fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    fake_openai.responder = remembered_cat
    first = await dm_and_wait(fake_discord, ALICE, "alice", "my cat is called Miso")
    assert first.content == "Noted!"
    second = await dm_and_wait(fake_discord, ALICE, "alice", "what is my cat called?")
    assert second.content == "Your cat is called Miso."

    # A DM is the sender's private channel, stored under their Discord identity.
    person = await app.persons.by_identity(f"discord:{ALICE}")
    assert person is not None
    [channel] = await app.channels.for_owner(person.id)
    assert channel.platform == "discord" and channel.kind.value == "private"
    assert channel.room_ref == str(fake_discord.dm_channel_id(ALICE))
    rows = await app.transcript.for_owner(person.id)
    assert [(r.role.value, r.content) for r in rows] == [
        ("user", "my cat is called Miso"),
        ("assistant", "Noted!"),
        ("user", "what is my cat called?"),
        ("assistant", "Your cat is called Miso."),
    ]


SISTER = "My sister Beatrix moved to Lisbon, she teaches violin there"


def recalled_sister(body: dict[str, Any]) -> str:
    """Answers from recalled memory (a system block) only, never from the chat history."""
    if "sister" not in last_user_text(body) or "?" not in last_user_text(body):
        return "Noted!"
    memory = " ".join(str(m["content"]) for m in body["messages"] if m["role"] == "system")
    return "She lives in Lisbon." if "Lisbon" in memory else "I don't know."


async def test_dm_recalls_what_fell_out_of_the_history(
    settings: Settings, clock: ManualClock, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    # a tiny history window: the first message is out of the prompt after a few turns
    small = {"bot": settings.bot.model_copy(update={"history_tokens": 30})}
    fake_openai.responder = recalled_sister
    async with bot_with(settings, clock, fake_discord, small) as (app, _):
        await dm_and_wait(fake_discord, ALICE, "alice", SISTER)
        for chatter in ("the weather is grey today", "I had soup for lunch"):
            clock.advance(minutes=5)
            await dm_and_wait(fake_discord, ALICE, "alice", chatter)
        clock.advance(minutes=5)
        answer = await dm_and_wait(fake_discord, ALICE, "alice", "where does my sister live?")
        await app.processor.drain()
    assert answer.content == "She lives in Lisbon."
    last = fake_openai.chat_requests()[-1]["messages"]
    chat = [m for m in last if m["role"] in ("user", "assistant")]
    assert chat and not any("Lisbon" in str(m["content"]) for m in chat)


async def test_link_carries_discord_memory_to_another_platform(
    app: App, fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    fake_openai.responder = recalled_sister
    await dm_and_wait(fake_discord, ALICE, "alice", SISTER)
    fake_discord.push_interaction(ALICE, "alice", "link")  # the slash command
    dm = fake_discord.dm_channel_id(ALICE)
    [issued] = await fake_discord.wait_for(
        lambda f: [m for m in f.bot_messages(dm) if m.content.startswith("Your link code")],
        timeout=WAIT,
    )
    code = issued.content.split("Your link code is ", 1)[1].split(".", 1)[0]

    def console(text: str) -> InboundMessage:
        return InboundMessage(
            "console", "alice/default", "alice", text, app.clock.now(), sender_name="alice"
        )

    linked = await app.processor.handle(console(f"/link {code}"))
    assert linked is not None and linked.reply.startswith("Linked")
    await app.processor.drain()
    answer = await app.processor.handle(console("where does my sister live?"))
    assert answer is not None and answer.reply == "She lives in Lisbon."
    home = await app.persons.by_identity(f"discord:{ALICE}")
    assert home is not None and await app.persons.by_identity("console:alice") == home


async def test_another_person_does_not_get_alices_memory(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    fake_openai.responder = remembered_cat
    await dm_and_wait(fake_discord, ALICE, "alice", "my cat is called Miso")
    reply = await dm_and_wait(fake_discord, BOB, "bob", "what is my cat called?")
    assert reply.content == "I don't know your cat's name."


async def test_typing_is_sent_before_the_reply(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    await dm_and_wait(fake_discord, ALICE, "alice", "hello")
    dm = fake_discord.dm_channel_id(ALICE)
    assert fake_discord.typing_calls and set(fake_discord.typing_calls) == {dm}
    writes = [
        (r.method, r.route)
        for r in fake_discord.requests
        if r.route in ("/channels/{channel_id}/typing", MESSAGES)
    ]
    assert writes[0] == ("POST", "/channels/{channel_id}/typing")


def paragraphs(n: int) -> list[str]:
    return [
        " ".join(f"Paragraph {p} sentence {s} says something worth keeping." for s in range(16))
        for p in range(n)
    ]


async def test_long_reply_is_split_on_paragraphs_never_truncated(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    paras = paragraphs(6)
    text = "\n\n".join(paras)
    assert len(text) > 4000
    fake_openai.reply(text)
    pushed = fake_discord.push_dm(ALICE, "alice", "tell me a long story")
    dm = int(pushed["channel_id"])
    msgs = await fake_discord.wait_for(lambda f: finished(f, dm, 3), timeout=WAIT)
    assert len(msgs) == 3
    assert all(len(m.content) <= 2000 for m in msgs)
    # every message is whole paragraphs, in order, and together they are the entire reply
    pieces = [p for m in msgs for p in m.content.split("\n\n")]
    assert pieces == paras
    # Discord itself rejected nothing
    assert all(r.status == 200 for r in fake_discord.requests_to("POST", MESSAGES))


async def test_reply_is_streamed_by_editing_one_message(
    app: App, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    # Sentences: a reply is streamed a finished sentence at a time (strata.bot.reply_checks).
    answer = " ".join(f"Word{i}." for i in range(25))
    fake_openai.reply(answer)
    adapter = await start_adapter(app, fake_discord, edit_interval=0)
    try:
        [msg] = [await dm_and_wait(fake_discord, ALICE, "alice", "stream please")]
    finally:
        await adapter.stop()
    assert msg.content == answer
    assert len(msg.edits) >= 3
    # each shown partial is a growing prefix of the answer, marked as unfinished
    shown = [e.removesuffix(" …") for e in msg.edits]
    assert all(e.endswith(" …") for e in msg.edits)
    assert all(answer.startswith(s) for s in shown)
    assert [len(s) for s in shown] == sorted(len(s) for s in shown)


async def test_edits_are_throttled(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    answer = " ".join(f"word{i}" for i in range(40)) + "."
    fake_openai.reply(answer)
    msg = await dm_and_wait(fake_discord, ALICE, "alice", "stream please")
    assert msg.content == answer
    # 41 streamed pieces, but with one edit per second at most: one send and the final edit
    writes = fake_discord.requests_to("POST", MESSAGES) + fake_discord.requests_to("PATCH", MESSAGE)
    assert len(writes) <= 3


async def test_429_on_send_is_waited_out(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    fake_openai.reply("made it through")
    fake_discord.fail_next("POST /channels/{id}/messages", status=429, retry_after=0.3)
    started = time.monotonic()
    msg = await dm_and_wait(fake_discord, ALICE, "alice", "hello?")
    assert msg.content == "made it through"
    assert time.monotonic() - started >= 0.3
    assert [r.status for r in fake_discord.requests_to("POST", MESSAGES)] == [429, 200]


async def test_429_on_streamed_edits_is_survived(
    app: App, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    answer = " ".join(f"Word{i}." for i in range(20))
    fake_openai.reply(answer)
    fake_discord.fail_next(
        "PATCH /channels/{id}/messages/{mid}", status=429, retry_after=0.2, times=2
    )
    adapter = await start_adapter(app, fake_discord, edit_interval=0)
    try:
        msg = await dm_and_wait(fake_discord, ALICE, "alice", "stream please")
    finally:
        await adapter.stop()
    assert msg.content == answer
    statuses = [r.status for r in fake_discord.requests_to("PATCH", MESSAGE)]
    assert statuses[:2] == [429, 429] and statuses[-1] == 200


async def test_global_429_is_waited_out(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    fake_openai.reply("still here")
    fake_discord.fail_next(
        "POST /channels/{id}/messages", status=429, retry_after=0.2, is_global=True
    )
    msg = await dm_and_wait(fake_discord, ALICE, "alice", "hello?")
    assert msg.content == "still here"


ONLY_ALICE = AccessSettings(allow_users=(f"discord:{ALICE}",))


@contextlib.asynccontextmanager
async def bot_with(
    settings: Settings,
    clock: ManualClock,
    fake: FakeDiscord,
    update: dict[str, Any],
    **options: Any,
) -> AsyncIterator[tuple[App, DiscordAdapter]]:
    """An app whose settings differ by `update`, with a started Discord adapter."""
    app = await App.create(settings.model_copy(update=update), clock=clock)
    try:
        adapter = await start_adapter(app, fake, **options)
        try:
            yield app, adapter
        finally:
            await adapter.stop()
    finally:
        await app.close()


async def test_unlisted_user_is_told_once_then_ignored(
    settings: Settings, clock: ManualClock, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    async with bot_with(settings, clock, fake_discord, {"access": ONLY_ALICE}) as (app, adapter):
        told = await dm_and_wait(fake_discord, BOB, "bob", "hi, who are you?")
        assert told.content == UNLISTED_TEXT
        fake_discord.push_dm(BOB, "bob", "hello again")
        await dm_and_wait(fake_discord, ALICE, "alice", "hi")
        await adapter.drain()
        bob_dm = fake_discord.dm_channel_id(BOB)
        assert [m.content for m in fake_discord.bot_messages(bob_dm)] == [UNLISTED_TEXT]
        # Bob's words reached neither the model nor the database
        assert all("bob" not in str(body).lower() for body in fake_openai.chat_requests())
        assert await app.persons.find("bob") is None


async def test_unlisted_user_is_silently_ignored_when_configured(
    settings: Settings, clock: ManualClock, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    quiet = bot_with(settings, clock, fake_discord, {"access": ONLY_ALICE}, tell_unlisted=False)
    async with quiet as (_, adapter):
        fake_discord.push_dm(BOB, "bob", "hi, who are you?")
        await dm_and_wait(fake_discord, ALICE, "alice", "hi")
        await adapter.drain()
        assert fake_discord.bot_messages(fake_discord.dm_channel_id(BOB)) == []
        assert len(fake_openai.chat_requests()) == 1


async def test_model_endpoint_down_gives_an_honest_message(
    settings: Settings, clock: ManualClock, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    # a port nothing listens on: the endpoint is down
    down = LlmSettings(base_url="http://127.0.0.1:9/v1", model="x", max_retries=0, timeout=2)
    async with bot_with(settings, clock, fake_discord, {"llm": down}) as (app, _):
        msg = await dm_and_wait(fake_discord, ALICE, "alice", "are you there?")
        assert msg.content == model_error_message(ModelUnavailableError("down"))
        assert "Traceback" not in msg.content and len(msg.content) < 200
        # the message itself is kept
        person = await app.persons.find("alice")
        assert person is not None
        rows = await app.transcript.for_owner(person.id)
        assert [r.content for r in rows] == ["are you there?"]


async def broken(ctx: CommandContext) -> CommandReply:
    raise RuntimeError("database on fire")


async def test_unexpected_failure_is_an_apology_not_a_traceback(
    app: App, fake_discord: FakeDiscord
) -> None:
    app.commands.add("broken", "always fails", broken)
    adapter = await start_adapter(app, fake_discord)
    try:
        msg = await dm_and_wait(fake_discord, ALICE, "alice", "/broken")
        assert msg.content == SORRY
        # the same as a slash command: the interaction is still answered
        fake_discord.push_interaction(ALICE, "alice", "broken")
        dm = fake_discord.dm_channel_id(ALICE)
        await fake_discord.wait_for(
            lambda f: len([m for m in f.bot_messages(dm) if m.content == SORRY]) == 2, timeout=WAIT
        )
        # the adapter keeps working afterwards
        assert (await dm_and_wait(fake_discord, ALICE, "alice", "/help")).content.startswith(
            "Commands:"
        )
    finally:
        await adapter.stop()
    assert all("database on fire" not in m.content for m in fake_discord.bot_messages(dm))


EXPORT = ("strata-export.json", b'{"person": "alice", "facts": []}')


async def export_command(ctx: CommandContext) -> CommandReply:
    return CommandReply("Here is everything I keep about you.", attachment=EXPORT)


async def dm_export(app: App, fake: FakeDiscord, data: bytes) -> list[RecordedMessage]:
    """Alice asks for `/export` (answered with `data` as a file); the bot's two messages."""

    async def export(ctx: CommandContext) -> CommandReply:
        return CommandReply("Here is everything I keep about you.", attachment=(EXPORT[0], data))

    app.commands.add("export", "export your memory", export)
    adapter = await start_adapter(app, fake)
    try:
        pushed = fake.push_dm(ALICE, "alice", "/export")
        return await fake.wait_for(
            lambda f: finished(f, int(pushed["channel_id"]), 2), timeout=WAIT
        )
    finally:
        await adapter.stop()


async def test_text_command_with_attachment_sends_the_file(
    app: App, fake_discord: FakeDiscord
) -> None:
    text, file = await dm_export(app, fake_discord, EXPORT[1])
    assert text.content == "Here is everything I keep about you."
    assert fake_discord.attachment_bytes(file.id) == {EXPORT[0]: EXPORT[1]}


async def test_a_file_too_large_for_discord_is_explained(
    app: App, fake_discord: FakeDiscord
) -> None:
    text, note = await dm_export(app, fake_discord, b"x" * (9 * 1024 * 1024))
    assert text.content == "Here is everything I keep about you."
    assert f"{EXPORT[0]} is 9.0 MB, too large to send on Discord" in note.content
    assert fake_discord.attachment_bytes(note.id) == {}


async def test_slash_commands_are_registered_and_answered(
    app: App, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    app.commands.add("export", "export your memory", export_command)
    adapter = await start_adapter(app, fake_discord)
    try:
        registered = {c["name"]: c for c in fake_discord.commands()}
        assert set(registered) == set(app.commands.commands) >= {"help", "export"}
        assert registered["export"]["description"] == "export your memory"

        fake_discord.push_interaction(ALICE, "alice", "help")
        dm = fake_discord.dm_channel_id(ALICE)
        [help_msg] = await fake_discord.wait_for(
            lambda f: [m for m in f.bot_messages(dm) if m.content.startswith("Commands:")],
            timeout=WAIT,
        )
        assert "/export — export your memory" in help_msg.content
        # deferred first (Discord wants an answer within 3 s), then the answer edited in
        assert fake_discord.interaction_responses[0]["type"] == 5

        fake_discord.push_interaction(ALICE, "alice", "export")
        await fake_discord.wait_for(
            lambda f: [m for m in f.bot_messages(dm) if m.content.startswith("Here is")],
            timeout=WAIT,
        )
        [file_msg] = await fake_discord.wait_for(
            lambda f: [m for m in f.bot_messages(dm) if f.attachment_bytes(m.id)], timeout=WAIT
        )
        assert fake_discord.attachment_bytes(file_msg.id) == {EXPORT[0]: EXPORT[1]}
        assert fake_openai.chat_requests() == []  # commands never reach the model
    finally:
        await adapter.stop()


async def test_slash_command_options_become_the_text_command(
    app: App, fake_discord: FakeDiscord
) -> None:
    seen: list[str] = []

    async def forget(ctx: CommandContext) -> CommandReply:
        seen.append(ctx.args)
        return CommandReply(f"Forgot everything about {ctx.args}.")

    app.commands.add("forget", "forget something", forget)
    adapter = await start_adapter(app, fake_discord)
    try:
        fake_discord.push_interaction(
            ALICE, "alice", "forget", [{"name": "text", "type": 3, "value": "my old job"}]
        )
        dm = fake_discord.dm_channel_id(ALICE)
        await fake_discord.wait_for(
            lambda f: [m for m in f.bot_messages(dm) if m.content.startswith("Forgot")],
            timeout=WAIT,
        )
    finally:
        await adapter.stop()
    assert seen == ["my old job"]


async def test_a_mention_in_a_server_is_pointed_to_dms_once(
    app: App, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    ids = fake_discord.add_guild("Strata Lab", ("general",))
    gid, general = ids["guild_id"], ids["general"]
    adapter = await start_adapter(app, fake_discord)
    try:
        fake_discord.push_guild_message(gid, general, ALICE, "alice", "just chatting")
        fake_discord.push_guild_message(
            gid, general, ALICE, "alice", f"<@{fake_discord.bot_id}> hi"
        )
        [pointer] = await fake_discord.wait_for(lambda f: f.bot_messages(general), timeout=WAIT)
        fake_discord.push_guild_message(gid, general, ALICE, "alice", f"<@{fake_discord.bot_id}> ?")
        await dm_and_wait(fake_discord, ALICE, "alice", "hi")  # a sync point
        await adapter.drain()
    finally:
        await adapter.stop()
    assert pointer.content == DM_ONLY_TEXT
    assert len(fake_discord.bot_messages(general)) == 1
    assert len(fake_openai.chat_requests()) == 1  # only the DM reached the model
    assert await app.persons.find("alice") is not None


async def test_proactive_send_splits_long_text(
    app: App, fake_discord: FakeDiscord, adapter: DiscordAdapter
) -> None:
    await dm_and_wait(fake_discord, ALICE, "alice", "hi")
    dm = fake_discord.dm_channel_id(ALICE)
    assert dm is not None
    paras = paragraphs(5)
    ids = await adapter.send(str(dm), "\n\n".join(paras))
    sent = fake_discord.bot_messages(dm)[1:]
    assert [str(m.id) for m in sent] == ids and len(ids) == 3
    assert [p for m in sent for p in m.content.split("\n\n")] == paras


async def test_message_content_intent_is_requested(
    fake_discord: FakeDiscord, adapter: DiscordAdapter
) -> None:
    [identify] = fake_discord.identifies
    assert identify["intents"] & INTENT_MESSAGE_CONTENT
    assert identify["intents"] & INTENT_DIRECT_MESSAGES


async def test_without_the_message_content_intent_dms_still_work(
    app: App, fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    # the intent is not enabled "in the Developer Portal": Discord closes with 4014
    with running_fake_discord(allowed_intents=0) as fake:
        adapter = await start_adapter(app, fake)
        try:
            fake_openai.reply("I can read your DMs.")
            msg = await dm_and_wait(fake, ALICE, "alice", "can you read this?")
        finally:
            await adapter.stop()
    assert msg.content == "I can read your DMs."
    refused, accepted = (p["d"]["intents"] for p in fake.gateway_payloads_received if p["op"] == 2)
    assert refused & INTENT_MESSAGE_CONTENT and not accepted & INTENT_MESSAGE_CONTENT
    assert "MESSAGE CONTENT intent is not enabled" in caplog.text


async def test_bad_token_is_a_clear_error(app: App, fake_discord: FakeDiscord) -> None:
    adapter = DiscordAdapter("not-the-token", ready_timeout=5)
    with pytest.raises(ConfigError, match="STRATA_DISCORD_TOKEN"):
        await adapter.start(app.turns())


async def test_stop_is_quick_and_leaves_no_connection(app: App, fake_discord: FakeDiscord) -> None:
    adapter = await start_adapter(app, fake_discord)
    assert fake_discord.connected_sessions == 1
    async with asyncio.timeout(WAIT):  # a hang detector, not a speed bound
        await adapter.stop()
    await fake_discord.wait_for(lambda f: f.connected_sessions == 0, timeout=WAIT)
    await adapter.stop()  # idempotent


def test_build_discord_adapter_needs_a_token(settings: Settings, clock: ManualClock) -> None:
    assert build_discord_adapter(settings, clock) is None
    assert [a.platform for a in configured_adapters(settings, SystemClock())] == []
    configured = settings.model_copy(update={"discord": DiscordSettings(token="abc")})
    [adapter] = configured_adapters(configured, SystemClock())
    assert isinstance(adapter, DiscordAdapter)


async def test_served_like_strata_run(
    settings: Settings, clock: ManualClock, fake_discord: FakeDiscord, fake_openai: FakeOpenAI
) -> None:
    """What `strata run` does: the configured adapters from the registry, `App.serve` until
    the stop event, reminders and other outbound messages through the adapter's `send`."""
    configured = settings.model_copy(
        update={
            "discord": DiscordSettings(token=fake_discord.token),
            "cognition": settings.cognition.model_copy(update={"enabled": False}),
        }
    )
    app = await App.create(configured, clock=clock)
    try:
        [adapter] = configured_adapters(configured, clock, app.commands.menu())
        assert isinstance(adapter, DiscordAdapter)
        stop = asyncio.Event()
        serving = asyncio.create_task(app.serve([adapter], stop))
        await fake_discord.wait_for(
            lambda f: f.connected_sessions == 1 and f.commands(), timeout=WAIT
        )
        menu = dict(app.commands.menu())
        assert {"help", "memory", "forget", "link", "reminders", "timezone"} <= set(menu)
        assert {c["name"]: c["description"] for c in fake_discord.commands()} == menu
        fake_openai.reply("hello from a served bot")
        msg = await dm_and_wait(fake_discord, ALICE, "alice", "hi")
        assert msg.content == "hello from a served bot"
        dm = str(fake_discord.dm_channel_id(ALICE))
        [sent_id] = await app.outbound.send("discord", dm, "Reminder: water the plants")
        reminder = fake_discord.message(int(sent_id))
        assert reminder is not None and reminder.content == "Reminder: water the plants"
        assert not serving.done()
        stop.set()
        await asyncio.wait_for(serving, WAIT)  # adapters stopped, no exception
        await fake_discord.wait_for(lambda f: f.connected_sessions == 0, timeout=WAIT)
    finally:
        await app.close()


async def test_reply_is_not_a_model_echo_when_the_model_asks_for_tools(
    fake_discord: FakeDiscord, fake_openai: FakeOpenAI, adapter: DiscordAdapter
) -> None:
    # a tool call for a tool that does not exist, then the answer: the person sees the answer
    fake_openai.reply(Reply(tool_calls=[("nonexistent", {})]), "All done.")
    msg = await dm_and_wait(fake_discord, ALICE, "alice", "do the thing")
    assert msg.content == "All done."
