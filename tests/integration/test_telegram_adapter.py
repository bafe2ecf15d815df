"""The Telegram adapter end to end: the real python-telegram-bot Application (inside the test's
event loop) polls the fake Bot API server over HTTP, turns go through the real turn processor
with a real SQLite database, and the model is the fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from strata.adapters.telegram.adapter import TelegramAdapter
from strata.adapters.telegram.chat import MESSAGE_LIMIT, utf16_len
from strata.app.compose import App
from strata.bot.delivery import SORRY
from strata.core.clock import ManualClock
from strata.core.config import Settings, load_settings
from strata.core.errors import StrataError
from strata.core.types import Channel, ChannelKind, InboundMessage, OwnerKind, Person, Role
from tests.conftest import strata_env
from tests.fakes import telegram_api as fake_module
from tests.fakes.openai_server import FakeOpenAI, last_user_text
from tests.fakes.telegram_api import FakeTelegramAPI
from tests.memory_helpers import filler

telegram_api = fake_module.telegram_api  # the fixture (assigned, not imported: ruff F811)

# PTB's RetryAfter.__init__ emits this about its attribute's future type; not our concern.
_IGNORE_RETRY_AFTER_WARNING = pytest.mark.filterwarnings(
    "ignore:.*`retry_after` will be of type:DeprecationWarning"
)

ROOT = Path(__file__).parents[2]
ADA, BOB, EVE = 4242, 4343, 6666
GROUP = -1001234567890


@contextlib.asynccontextmanager
async def running(
    handler: Any, fake: FakeTelegramAPI, **options: Any
) -> AsyncIterator[TelegramAdapter]:
    options.setdefault("edit_interval", 1.0)
    options.setdefault("shutdown_grace", 5)
    adapter = TelegramAdapter(
        fake.token,
        base_url=fake.base_url,
        base_file_url=fake.base_file_url,
        poll_timeout=1,
        **options,
    )
    await adapter.connect(handler)
    try:
        yield adapter
    finally:
        await adapter.stop()


async def settle(fake: FakeTelegramAPI, adapter: TelegramAdapter, updates: int) -> None:
    """Wait until `updates` updates reached the adapter and every turn they started ended."""
    await fake.wait_for(lambda: adapter.updates_seen >= updates, timeout=10)
    await adapter.drain()


def contents(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


async def rows_of(app: App, room_id: str) -> list[Any]:
    channel = await app.channels.by_ref("telegram", room_id)
    assert channel is not None
    return await app.transcript.for_channel(channel.id)


# ------------------------------------------------------------------------------------------
# private chats


async def test_dm_round_trip_with_memory(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api

    def answer(body: dict[str, Any]) -> str:
        earlier = "\n".join(str(m.get("content") or "") for m in body["messages"][:-1])
        found = re.search(r"called (\w+)", earlier)
        if "cat" in last_user_text(body) and "?" in last_user_text(body):
            return f"Your cat is called {found.group(1)}." if found else "I don't know."
        return "Noted!"

    fake_openai.responder = answer
    async with running(app.turns(), fake) as adapter:
        fake.push_private_message(ADA, "My cat is called Miso.", first_name="Ada")
        await settle(fake, adapter, 1)
        fake.push_private_message(ADA, "What is my cat called?", first_name="Ada")
        await settle(fake, adapter, 2)

    assert fake.bot_texts(ADA) == ["Noted!", "Your cat is called Miso."]
    second = fake_openai.chat_requests()[-1]
    assert "My cat is called Miso." in contents(second)
    assert [a["action"] for a in fake.chat_actions] and {
        a["action"] for a in fake.chat_actions
    } == {"typing"}
    rows = await rows_of(app, str(ADA))
    assert [(r.role, r.content) for r in rows] == [
        (Role.USER, "My cat is called Miso."),
        (Role.ASSISTANT, "Noted!"),
        (Role.USER, "What is my cat called?"),
        (Role.ASSISTANT, "Your cat is called Miso."),
    ]
    channel = await app.channels.by_ref("telegram", str(ADA))
    person = await app.persons.by_identity(f"telegram:{ADA}")
    assert channel is not None and person is not None
    assert channel.kind is ChannelKind.PRIVATE and channel.owner_id == person.id
    assert fake.errors == [] and fake.unknown_methods == []


async def test_dm_memory_comes_back_through_recall(
    make_app: Callable[..., Any],
    fake_openai: FakeOpenAI,
    telegram_api: FakeTelegramAPI,
    clock: ManualClock,
) -> None:
    fake = telegram_api
    clock.set(datetime.now(UTC))  # Telegram dates the messages with the real time
    fact = "My sister Beatrix moved to Lisbon, she teaches violin there"
    # A tiny history window: the fact can only come back through turn-zero recall.
    async with make_app(STRATA_BOT_HISTORY_TOKENS="60", STRATA_EPISODES_USE_MODEL="false") as app, \
            running(app.turns(), fake) as adapter:
        fake.push_private_message(ADA, fact, first_name="Ada")
        # A conversation, not a burst: each message is answered before the next is sent, so
        # the fact's recall window holds the exchange about it (messages are stored on
        # receipt, so a burst would store all thirteen side by side before any reply).
        await settle(fake, adapter, 1)
        for i in range(12):  # recall skips a channel's newest 20 rows (the history has them)
            fake.push_private_message(ADA, filler(i), first_name="Ada")
            await settle(fake, adapter, 2 + i)
        await app.processor.drain()  # row vectors are written after the turn
        fake.push_private_message(ADA, "tell me about my sister Beatrix", first_name="Ada")
        await settle(fake, adapter, 14)

    messages = fake_openai.chat_requests()[-1]["messages"]
    assert fact not in [m["content"] for m in messages if m["role"] in ("user", "assistant")]
    recalled = [m for m in messages if m["role"] == "system" and "Lisbon" in str(m["content"])]
    assert len(recalled) == 1


async def test_long_reply_is_split_at_paragraphs_never_truncated(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    paragraphs = [
        " ".join(f"Paragraph {p} sentence {s} says something 😀 worth keeping." for s in range(12))
        for p in range(14)
    ]
    long = "\n\n".join(paragraphs)
    assert utf16_len(long) > 2 * MESSAGE_LIMIT
    fake_openai.reply(long)
    async with running(app.turns(), fake) as adapter:
        fake.push_private_message(ADA, "tell me everything")
        await settle(fake, adapter, 1)

    parts = fake.bot_texts(ADA)
    assert len(parts) >= 3
    assert all(utf16_len(p) <= MESSAGE_LIMIT for p in parts)
    # Every part is whole paragraphs, in order, and together they are the whole reply.
    assert "\n\n".join(parts) == long
    assert all(part.split("\n\n")[-1] in paragraphs for part in parts)


async def test_reply_is_streamed_by_throttled_edits(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    # Sentences: a reply is streamed a finished sentence at a time (strata.bot.reply_checks).
    reply = " ".join(f"Word{i}." for i in range(25)) + " **Done**."
    fake_openai.reply(reply)
    async with running(app.turns(), fake, edit_interval=0.0) as adapter:
        fake.push_private_message(ADA, "stream please")
        await settle(fake, adapter, 1)

    sends = fake.sent_records("sendMessage", chat_id=ADA)
    edits = fake.sent_records("editMessageText", chat_id=ADA)
    assert len(sends) == 1 and len(edits) >= 3
    assert all(e["message_id"] == sends[0]["message_id"] for e in edits)
    assert sends[0]["plain_text"].endswith(" …")
    assert all(e["plain_text"].endswith(" …") for e in edits[:-1])
    previews = [sends[0]["plain_text"]] + [e["plain_text"] for e in edits[:-1]]
    assert [len(p) for p in previews] == sorted(len(p) for p in previews)  # it grows
    final, plain = edits[-1], reply.replace("**", "")
    assert final["plain_text"] == plain
    assert final["parse_mode"] == "HTML" and final["entities"] == [
        {"offset": plain.index("Done"), "length": 4, "type": "bold"}
    ]
    assert fake.bot_texts(ADA) == [plain]


async def test_edits_are_throttled_by_the_interval(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.reply(" ".join(f"W{i}." for i in range(200)))
    async with running(app.turns(), fake, edit_interval=30.0) as adapter:
        fake.push_private_message(ADA, "stream please")
        await settle(fake, adapter, 1)
    # One preview, then the final text: nothing in between within the 30 s interval.
    assert len(fake.sent_records("sendMessage", chat_id=ADA)) == 1
    assert len(fake.sent_records("editMessageText", chat_id=ADA)) == 1


@_IGNORE_RETRY_AFTER_WARNING
async def test_flood_control_429s_are_survived_while_streaming(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    reply = " ".join(f"Token{i}." for i in range(40))
    fake_openai.reply(reply)
    fake.set_flood_limit(3, period=1.0)
    async with running(app.turns(), fake, edit_interval=0.0) as adapter:
        fake.push_private_message(ADA, "go fast")
        await settle(fake, adapter, 1)

    refused = [c for c in fake.calls("editMessageText") + fake.calls("sendMessage")
               if c["status"] == 429]
    assert refused, "the flood limit was never hit, so this test proved nothing"
    assert fake.bot_texts(ADA) == [reply]
    assert SORRY not in fake.sent_texts(ADA)


@_IGNORE_RETRY_AFTER_WARNING
async def test_429_on_send_waits_out_retry_after(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.reply("Here you are.")
    fake.fail_next("sendMessage", 429, retry_after=1)
    async with running(app.turns(), fake) as adapter:
        started = time.monotonic()
        fake.push_group_message(GROUP, ADA, "a question", mention_bot=True)
        await settle(fake, adapter, 1)
        elapsed = time.monotonic() - started

    attempts = fake.calls("sendMessage")
    assert [a["status"] for a in attempts] == [429, 200]
    assert attempts[1]["time"] - attempts[0]["time"] >= 1.0
    assert elapsed >= 1.0
    assert fake.bot_texts(GROUP) == ["Here you are."]


async def test_a_502_on_the_answer_is_retried_and_the_reply_shown(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    """A Bad Gateway (or a dropped connection) on sendMessage is retried with bounded backoff:
    the saved answer is shown, not replaced by SORRY."""
    fake = telegram_api
    fake_openai.reply("Here you are.")
    fake.fail_next("sendMessage", 502, times=2)
    async with running(app.turns(), fake, retry_base=0.01) as adapter:
        fake.push_group_message(GROUP, ADA, "a question", mention_bot=True)
        await settle(fake, adapter, 1)

    assert [a["status"] for a in fake.calls("sendMessage")] == [502, 502, 200]
    assert fake.bot_texts(GROUP) == ["Here you are."]


async def test_a_lasting_502_ends_in_an_honest_failure_not_a_hang(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.reply("Here you are.")
    fake.fail_next("sendMessage", 502, times=4)  # every attempt of the answer fails
    async with running(app.turns(), fake, retry_base=0.01) as adapter:
        fake.push_group_message(GROUP, ADA, "a question", mention_bot=True)
        await settle(fake, adapter, 1)

    assert [a["status"] for a in fake.calls("sendMessage")] == [502, 502, 502, 502, 200]
    assert fake.bot_texts(GROUP) == [SORRY]
    assert [r.content for r in await rows_of(app, str(GROUP)) if r.role is Role.ASSISTANT] == [
        "Here you are."]


async def test_502s_and_429s_together_get_one_bounded_set_of_tries(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    """A send is tried four times in all, whatever mix of server errors and flood control
    refuses it (one retry layer: a 429 does not start a fresh round of 5xx retries), and then
    the turn fails honestly: the person is told, the answer stays saved."""
    fake = telegram_api
    fake_openai.reply("Here you are.")
    for _ in range(2):
        fake.fail_next("sendMessage", 502)
        fake.fail_next("sendMessage", 429, retry_after=1)
    async with running(app.turns(), fake, retry_base=0.01) as adapter:
        fake.push_group_message(GROUP, ADA, "a question", mention_bot=True)
        await settle(fake, adapter, 1)

    assert [a["status"] for a in fake.calls("sendMessage")] == [502, 429, 502, 429, 200]
    assert fake.bot_texts(GROUP) == [SORRY]
    assert [r.content for r in await rows_of(app, str(GROUP)) if r.role is Role.ASSISTANT] == [
        "Here you are."]


async def test_rejected_html_falls_back_to_plain_text(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    reply = "Use **care** with <tags> & *stars*."
    fake_openai.reply(reply)
    fake.fail_next(
        "sendMessage", 400,
        "Bad Request: can't parse entities: Unsupported start tag \"tags\" at byte offset 19",
    )
    async with running(app.turns(), fake) as adapter:
        fake.push_group_message(GROUP, ADA, "format something", mention_bot=True)
        await settle(fake, adapter, 1)

    [failed, resent] = fake.calls("sendMessage")
    assert failed["status"] == 400 and failed["params"]["parse_mode"] == "HTML"
    assert resent["status"] == 200
    [record] = fake.sent_records("sendMessage", chat_id=GROUP)
    assert record["parse_mode"] is None and record["plain_text"] == reply
    assert record["reply_to"] is not None  # in a group the answer quotes the question


async def test_rejected_html_in_an_edit_falls_back_and_not_modified_is_fine(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.reply("Hi. First **answer** here", "Hi. Second answer here")
    fake.fail_next("editMessageText", 400, "Bad Request: can't parse entities: oops")
    async with running(app.turns(), fake, edit_interval=30.0) as adapter:
        fake.push_private_message(ADA, "one")
        await settle(fake, adapter, 1)
        fake.fail_next(
            "editMessageText", 400,
            "Bad Request: message is not modified: specified new message content and reply "
            "markup are exactly the same as a current content and reply markup of the message",
        )
        fake.push_private_message(ADA, "two")
        await settle(fake, adapter, 2)

    edits = fake.sent_records("editMessageText", chat_id=ADA)
    assert edits[0]["parse_mode"] is None and edits[0]["plain_text"] == "Hi. First **answer** here"
    assert SORRY not in fake.sent_texts(ADA)
    rows = await rows_of(app, str(ADA))
    assert [r.content for r in rows if r.role is Role.ASSISTANT] == [
        "Hi. First **answer** here", "Hi. Second answer here"
    ]


async def test_model_failure_gives_a_short_honest_message(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.fail_next("status", status=500, times=10)
    async with running(app.turns(), fake) as adapter:
        fake.push_private_message(ADA, "are you there?")
        await settle(fake, adapter, 1)
    [text] = fake.bot_texts(ADA)
    assert text.startswith("Sorry") and "saved" in text
    assert "Traceback" not in text and len(text) < 200
    assert [r.content for r in await rows_of(app, str(ADA))] == ["are you there?"]


class _Broken:
    """A recaller that fails unexpectedly (a bug), to exercise the delivery's error boundary:
    messages are still taken in (stored and queued) by the real scheduler and processor."""

    async def recall(self, *, channel: Channel, person: Person, query: str,
                     shown_from_row_id: int | None = None) -> str | None:
        raise RuntimeError("boom: internal detail that must not reach the chat")


async def test_unexpected_failure_is_a_short_sorry_not_a_traceback(
    app: App, telegram_api: FakeTelegramAPI,
) -> None:
    fake = telegram_api
    broken = dataclasses.replace(app.processor, recaller=_Broken())
    async with running(dataclasses.replace(app.turns(), processor=broken), fake) as adapter:
        fake.push_private_message(ADA, "hello")
        await settle(fake, adapter, 1)
        fake.push_private_message(ADA, "still there?")
        await settle(fake, adapter, 2)
    assert fake.bot_texts(ADA) == [SORRY, SORRY]  # and the adapter kept going


async def test_export_attachment_goes_out_as_a_document(
    app: App, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    menu = list(app.commands.menu())
    async with running(app.turns(), fake, commands=[*menu, ("Not-Valid", "x")]) as adapter:
        fake.push_private_message(ADA, "I grow tomatoes on my balcony", first_name="Ada")
        await settle(fake, adapter, 1)
        fake.push_private_message(ADA, "/export", first_name="Ada")
        await settle(fake, adapter, 2)
    texts = [m["text"] for m in fake.bot_messages(ADA) if "text" in m]
    assert len(texts) == 2 and "attached" in texts[1]
    [doc] = fake.documents
    assert re.fullmatch(r"strata-export-\d+-[\d-]+\.json", doc["file_name"])
    exported = json.loads(doc["content"])
    assert "I grow tomatoes on my balcony" in json.dumps(exported)
    published = {c["command"] for c in fake.my_commands()}
    assert {"export", "help"} <= published and "Not-Valid" not in published


async def test_link_from_telegram_joins_another_platforms_identity(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI, clock: ManualClock
) -> None:
    fake = telegram_api
    async with running(app.turns(), fake) as adapter:
        fake.push_private_message(ADA, "/link", first_name="Ada")
        await settle(fake, adapter, 1)
    [shown] = fake.bot_texts(ADA)
    code = shown.split("Your link code is ", 1)[1].split(".", 1)[0]
    console = InboundMessage("console", "ada/default", "ada", f"/link {code}", clock.now(),
                             sender_name="ada")
    result = await app.processor.handle(console)
    assert result is not None and not result.failed
    on_telegram = await app.persons.by_identity(f"telegram:{ADA}")
    on_console = await app.persons.by_identity("console:ada")
    assert on_telegram is not None and on_console is not None
    assert on_telegram.id == on_console.id


# ------------------------------------------------------------------------------------------
# access control


@pytest.fixture
def make_app(
    fake_openai: FakeOpenAI, db_target: Path | str, clock: ManualClock
) -> Callable[..., contextlib.AbstractAsyncContextManager[App]]:
    """An `App` whose settings add `env` (STRATA_… variables) to the test defaults."""

    @contextlib.asynccontextmanager
    async def make(**env: str) -> AsyncIterator[App]:
        settings = load_settings(None, env={**strata_env(fake_openai, db_target), **env})
        application = await App.create(settings, clock=clock)
        try:
            yield application
        finally:
            await application.close()

    return make


@pytest.mark.parametrize("tell_unlisted", [True, False])
async def test_unlisted_user_never_reaches_the_model(
    make_app: Callable[..., Any],
    fake_openai: FakeOpenAI,
    telegram_api: FakeTelegramAPI,
    tell_unlisted: bool,
) -> None:
    fake = telegram_api
    async with make_app(STRATA_ACCESS_ALLOW_USERS=f"telegram:{ADA}") as app, running(
        app.turns(), fake, tell_unlisted=tell_unlisted
    ) as adapter:
        fake.push_private_message(EVE, "let me in")
        fake.push_private_message(EVE, "please?")
        fake.push_group_message(GROUP, EVE, "hey bot", mention_bot=True)
        fake.push_private_message(ADA, "hello")
        await settle(fake, adapter, 4)
        assert await app.persons.by_identity(f"telegram:{EVE}") is None

    notes = fake.bot_texts(EVE)
    if tell_unlisted:  # one polite note, however often they write
        assert len(notes) == 1
        assert "allowlist" in notes[0] and f"telegram:{EVE}" in notes[0]
    else:
        assert notes == []
    assert fake.bot_texts(GROUP) == []
    assert not [a for a in fake.chat_actions if a["chat_id"] != ADA]
    assert len(fake.bot_texts(ADA)) == 1
    assert len(fake_openai.chat_requests()) == 1  # only Ada's turn reached the model


# ------------------------------------------------------------------------------------------
# groups


async def test_group_answers_only_when_addressed_and_keeps_private_memory_private(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    secret = "zebrafish syndrome"
    fake_openai.responder = lambda body: "Reply to: " + last_user_text(body)
    async with running(app.turns(), fake) as adapter:
        fake.push_private_message(ADA, f"My diagnosis is {secret}, keep it between us.",
                                  first_name="Ada")
        await settle(fake, adapter, 1)
        assert len(fake_openai.chat_requests()) == 1

        fake.push_group_message(GROUP, BOB, "lunch at noon?", first_name="Bob", title="Crew")
        await settle(fake, adapter, 2)
        assert fake.bot_texts(GROUP) == [] and len(fake_openai.chat_requests()) == 1
        assert not [a for a in fake.chat_actions if a["chat_id"] == GROUP]

        fake.push_group_message(GROUP, ADA, "what is my diagnosis?", mention_bot=True,
                                first_name="Ada", title="Crew")
        await settle(fake, adapter, 3)
        [answer] = fake.bot_messages(GROUP)
        fake.push_group_message(GROUP, BOB, "and mine?", first_name="Bob",
                                reply_to_bot_message_id=answer["message_id"])
        await settle(fake, adapter, 4)

    # The room's episode summary (a JSON-mode request of the after-turn cutter) may reach the
    # model before the adapter stops, or after: only the answers are counted, but no request
    # about the room, of either kind, may carry Ada's private secret.
    for body in fake_openai.chat_requests()[1:]:
        assert secret not in contents(body)
    group_requests = [b for b in fake_openai.chat_requests()[1:] if "response_format" not in b]
    assert len(group_requests) == 2
    assert "lunch at noon?" in contents(group_requests[0])  # the room's own memory
    texts = fake.bot_texts(GROUP)
    assert texts == ["Reply to: Ada: what is my diagnosis?", "Reply to: Bob: and mine?"]
    assert all(secret not in t for t in texts)
    # The group's rows belong to the room's own scope, not to Ada or Bob.
    channel = await app.channels.by_ref("telegram", str(GROUP))
    assert channel is not None and channel.kind is ChannelKind.SHARED
    scope = await app.persons.get(channel.owner_id)
    assert scope is not None and scope.kind is OwnerKind.ROOM
    replies = [m for m in fake.bot_messages(GROUP) if m.get("reply_to_message")]
    assert len(replies) == 2  # each answer quotes the message it answers


# ------------------------------------------------------------------------------------------
# locations and edits


async def test_location_and_live_location_become_location_rows(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.reply("Thanks, noted where you are.")
    async with running(app.turns(), fake, live_location_every=0) as adapter:
        sent = fake.push_location(ADA, ADA, 52.52, 13.405, live_period=900, first_name="Ada")
        await settle(fake, adapter, 1)
        fake.push_edited_location(ADA, sent["message_id"], 52.53, 13.41)
        await settle(fake, adapter, 2)
        typed = fake.push_private_message(ADA, "I live in Lyon")
        await settle(fake, adapter, 3)
        fake.push_edited_message(ADA, typed["message_id"], "I live in Lille")
        await settle(fake, adapter, 4)

    rows = [r for r in await rows_of(app, str(ADA)) if r.role is Role.USER]
    assert [(r.lat, r.lon) for r in rows] == [(52.52, 13.405), (52.53, 13.41), (None, None),
                                             (None, None)]
    assert rows[0].content == "(shared a live location)"
    assert rows[1].content == "(live location update)"
    assert rows[3].content == "I live in Lille"
    assert rows[1].platform_msg_id == rows[0].platform_msg_id == str(sent["message_id"])
    # The live-location move and the edit were recorded, not answered.
    assert len(fake.bot_messages(ADA)) == 2
    prompt = contents(fake_openai.chat_requests()[0])
    assert "52.52000, 13.40500" in prompt


async def test_live_location_moves_are_recorded_at_most_every_interval(
    app: App, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    async with running(app.turns(), fake, live_location_every=300) as adapter:
        sent = fake.push_location(ADA, ADA, 52.52, 13.405, live_period=900)
        for step in range(1, 4):
            fake.push_edited_location(ADA, sent["message_id"], 52.52 + step / 1000, 13.405)
        await settle(fake, adapter, 4)
    rows = [r for r in await rows_of(app, str(ADA)) if r.role is Role.USER]
    assert [(r.lat, r.lon) for r in rows] == [(52.52, 13.405)]  # the moves came within 300 s


async def test_stop_is_prompt_and_restart_does_not_reanswer(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    # Stopping while idle must not wait out the shutdown grace: with a grace of ten minutes,
    # a stop that waited for it would trip the one-minute hang detector, however busy the
    # machine (no wall-time bound on a prompt stop itself).
    async with asyncio.timeout(60):
        async with running(app.turns(), fake, shutdown_grace=600) as adapter:
            fake.push_private_message(ADA, "once")
            await settle(fake, adapter, 1)
    async with running(app.turns(), fake) as adapter:
        await fake.wait_for(lambda: len(fake.calls("getUpdates")) >= 4)
    assert adapter.updates_seen == 0
    assert len(fake.bot_texts(ADA)) == 1


async def test_outbound_send_splits_and_formats(
    app: App, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake.add_private_chat(ADA)
    adapter = TelegramAdapter(fake.token, base_url=fake.base_url, poll_timeout=1)
    with pytest.raises(StrataError, match="not started"):
        await adapter.send(str(ADA), "too early")
    first = "**Reminder:** water the plants on the balcony, then the ones in the kitchen."
    reminder = first + "\n\n" + "More detail. " * 310
    await adapter.connect(app.turns())
    try:
        ids = await adapter.send(str(ADA), reminder)
    finally:
        await adapter.stop()
    records = fake.sent_records("sendMessage", chat_id=ADA)
    assert [str(r["message_id"]) for r in records] == ids and len(ids) == 2
    assert records[0]["plain_text"] == first.replace("**", "")
    assert records[0]["entities"][0]["type"] == "bold"
    assert records[1]["plain_text"] == reminder.split("\n\n", 1)[1].strip()


async def test_a_refused_token_is_a_clear_error(app: App, telegram_api: FakeTelegramAPI) -> None:
    adapter = TelegramAdapter("123:wrong", base_url=telegram_api.base_url)
    with pytest.raises(StrataError, match="token was refused"):
        await adapter.connect(app.turns())


async def test_start_serves_until_stop_and_turns_in_flight_finish(
    app: App, fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI
) -> None:
    fake = telegram_api
    fake_openai.fail_next("slow", seconds=0.5)  # the model is still thinking at stop()
    adapter = TelegramAdapter(fake.token, base_url=fake.base_url, poll_timeout=1)
    serving = asyncio.create_task(adapter.start(app.turns()))
    fake.push_private_message(ADA, "quick question")
    await fake.wait_for(lambda: adapter.updates_seen >= 1, timeout=10)
    assert not serving.done()
    await adapter.stop()
    await asyncio.wait_for(serving, timeout=5)
    assert len(fake.bot_texts(ADA)) == 1  # the answer was still delivered


def test_strata_run_serves_telegram_and_stops_on_sigterm(
    fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI, subprocess_env: dict[str, str]
) -> None:
    fake = telegram_api
    env = dict(subprocess_env, STRATA_TELEGRAM_TOKEN=fake.token,
               STRATA_TELEGRAM_BASE_URL=fake.base_url, STRATA_COGNITION_ENABLED="false")
    proc = subprocess.Popen([sys.executable, "-m", "strata.app.cli", "run"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        fake.wait_for_sync(lambda: fake.calls("getUpdates"), timeout=30)
        fake.push_private_message(ADA, "hello from telegram")
        fake.wait_for_sync(lambda: fake.bot_texts(ADA) == ["You said: hello from telegram"],
                           timeout=15)
        assert {"help", "memory", "forget"} <= {c["command"] for c in fake.my_commands()}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0  # a hang detector, not a speed bound
        _, err = proc.communicate(timeout=5)
        assert "strata: running telegram" in err and "strata: stopped" in err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)


def _strata_run(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "strata.app.cli", "run"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def test_messages_confirmed_to_telegram_survive_sigkill_and_are_answered_after_restart(
    fake_openai: FakeOpenAI, telegram_api: FakeTelegramAPI, subprocess_env: dict[str, str]
) -> None:
    """Telegram forgets an update once the next getUpdates confirms it, so each message is
    stored when it arrives, not when its turn starts (after the chat's earlier turns). Killed
    while the first turn waits on the model and the two behind it wait their turn, the
    restarted bot finds all three stored and answers them in order."""
    fake = telegram_api
    env = dict(subprocess_env, STRATA_TELEGRAM_TOKEN=fake.token,
               STRATA_TELEGRAM_BASE_URL=fake.base_url, STRATA_COGNITION_ENABLED="false")
    fake_openai.fail_next("hang", path="chat")  # the first turn waits on the model for good
    proc = _strata_run(env)
    try:
        fake.wait_for_sync(lambda: fake.calls("getUpdates"), timeout=30)
        for text in ("one", "two", "three"):
            fake.push_private_message(ADA, text)
        fake.wait_for_sync(
            lambda: fake.pending_update_count == 0 and len(fake_openai.chat_requests()) == 1,
            timeout=20)
    finally:
        proc.kill()
        proc.wait(10)
    assert fake.bot_texts(ADA) == []  # confirmed to Telegram, none answered, process gone

    proc = _strata_run(env)
    try:
        fake.wait_for_sync(lambda: len(fake.bot_texts(ADA)) >= 3, timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert fake.bot_texts(ADA) == ["You said: one", "You said: two", "You said: three"]
    # Each answer's prompt ends with its own message; later ones are not shown to earlier turns.
    prompts = fake_openai.chat_requests()[1:]
    assert [last_user_text(p) for p in prompts] == ["one", "two", "three"]
    assert "two" not in contents(prompts[0]) and "three" not in contents(prompts[1])


def test_build_telegram_adapter_needs_a_token(settings: Settings) -> None:
    from strata.adapters.telegram.adapter import build_telegram_adapter

    assert build_telegram_adapter(settings) is None
    configured = settings.model_copy(
        update={"telegram": settings.telegram.model_copy(update={"token": "1:abc"})}
    )
    adapter = build_telegram_adapter(configured)
    assert isinstance(adapter, TelegramAdapter) and adapter.platform == "telegram"
    assert adapter.base_url == "https://api.telegram.org/bot"
    assert adapter.base_file_url == "https://api.telegram.org/file/bot"
