"""End-to-end tests: the real python-telegram-bot ``Application`` against ``FakeTelegramAPI``.

Every test talks real HTTP on 127.0.0.1; the fake runs in its own thread and event loop.
These tests double as the contract of the fake that the Telegram adapter's tests rely on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from telegram import Message, MessageEntity, Update
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, Forbidden, RetryAfter
from telegram.ext import (
    AIORateLimiter,
    Application,
    ApplicationBuilder,
    BaseHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from . import telegram_api as fake_module
from .telegram_api import FakeTelegramAPI

# Re-exported so pytest sees the module's fixture here (conftest.py can do the same later).
telegram_api = fake_module.telegram_api

# PTB's own RetryAfter.__init__ emits this (about its int-vs-timedelta attribute), not the fake.
_IGNORE_PTB_RETRY_AFTER_DEPRECATION = pytest.mark.filterwarnings(
    "ignore:.*`retry_after` will be of type:DeprecationWarning"
)

USER_ID = 4242
GROUP_ID = -1001234567890


@contextlib.asynccontextmanager
async def running_app(
    fake: FakeTelegramAPI,
    *handlers: BaseHandler[Any, Any, Any],
    rate_limiter: AIORateLimiter | None = None,
) -> AsyncIterator[Application[Any, Any, Any, Any, Any, Any]]:
    """Start a real PTB Application polling the fake inside the running loop."""
    builder: Any = (  # Any: the builder's generic type changes with .rate_limiter()
        ApplicationBuilder()
        .token(fake.token)
        .base_url(fake.base_url)
        .base_file_url(fake.base_file_url)
    )
    if rate_limiter is not None:
        builder = builder.rate_limiter(rate_limiter)
    app = builder.build()
    for handler in handlers:
        app.add_handler(handler)
    await app.initialize()
    await app.start()
    assert app.updater is not None
    await app.updater.start_polling(poll_interval=0, timeout=1)
    try:
        yield app
    finally:
        await app.updater.stop()
        await app.stop()
        await app.shutdown()


async def _echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    message = update.effective_message
    assert message is not None and message.text is not None
    await message.reply_text(message.text)


def _collector(bucket: list[Message]) -> Any:
    async def collect(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        bucket.append(update.effective_message)

    return collect


# ------------------------------------------------------------------------------------------
# the bot lifecycle and the happy path


@pytest.mark.asyncio
async def test_echo_private_message(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    async with running_app(fake, MessageHandler(filters.TEXT & ~filters.COMMAND, _echo)) as app:
        assert app.bot.username == "strata_bot"
        fake.push_private_message(USER_ID, "hello there", first_name="Ada", username="ada")

        [record] = await fake.wait_for_sent(chat_id=USER_ID)
        assert record["text"] == "hello there"
        assert fake.message_text(USER_ID, record["message_id"]) == "hello there"
        assert fake.bot_texts(USER_ID) == ["hello there"]
        # The update gets confirmed by the next getUpdates offset.
        await fake.wait_for(lambda: fake.pending_update_count == 0)

    methods = [r["method"] for r in fake.requests]
    assert methods[:2] == ["getMe", "deleteWebhook"]
    polls = fake.calls("getUpdates")
    assert polls[0]["params"]["timeout"] == 1
    assert polls[-1]["params"]["timeout"] == 0  # PTB's final "mark as read" call on stop
    assert fake.errors == [] and fake.unknown_methods == []


@pytest.mark.asyncio
async def test_group_mention_command_and_reply_to_bot(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    seen: list[Message] = []
    commands: list[Message] = []
    handlers = (
        CommandHandler("start", _collector(commands)),
        MessageHandler(filters.ALL, _collector(seen)),
    )
    async with running_app(fake, *handlers) as app:
        fake.push_group_message(GROUP_ID, 7, "what do you think?", mention_bot=True, title="Crew")
        await fake.wait_for(lambda: len(seen) == 1)
        mention = seen[0]
        assert mention.chat.type == "supergroup" and mention.chat.title == "Crew"
        assert list(mention.parse_entities([MessageEntity.MENTION]).values()) == ["@strata_bot"]

        sent = await app.bot.send_message(GROUP_ID, "I think <b>yes</b>", parse_mode="HTML")
        assert sent.text == "I think yes"
        assert sent.entities[0].type == MessageEntity.BOLD
        fake.push_group_message(GROUP_ID, 7, "why?", reply_to_bot_message_id=sent.message_id)
        fake.push_group_message(GROUP_ID, 7, "/start@strata_bot")
        await fake.wait_for(lambda: len(seen) == 2 and len(commands) == 1)

    reply = seen[1]
    assert reply.reply_to_message is not None
    assert reply.reply_to_message.from_user is not None
    assert reply.reply_to_message.from_user.id == fake.bot_id
    assert reply.reply_to_message.text == "I think yes"
    assert commands[0].text == "/start@strata_bot"


@pytest.mark.asyncio
async def test_location_and_live_location_edits(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    fresh: list[Message] = []
    edited: list[Message] = []
    handlers = (
        MessageHandler(filters.LOCATION & filters.UpdateType.MESSAGE, _collector(fresh)),
        MessageHandler(filters.LOCATION & filters.UpdateType.EDITED_MESSAGE, _collector(edited)),
    )
    async with running_app(fake, *handlers):
        sent = fake.push_location(USER_ID, USER_ID, 52.52, 13.405, live_period=900)
        fake.push_edited_location(USER_ID, sent["message_id"], 52.53, 13.41, heading=90)
        await fake.wait_for(lambda: fresh and edited)

    first, moved = fresh[0], edited[0]
    assert first.location is not None and moved.location is not None
    assert (first.location.latitude, first.location.longitude) == (52.52, 13.405)
    assert first.location.to_dict()["live_period"] == 900
    assert moved.message_id == first.message_id and moved.edit_date is not None
    assert (moved.location.latitude, moved.location.longitude) == (52.53, 13.41)
    assert moved.location.to_dict()["heading"] == 90


# ------------------------------------------------------------------------------------------
# errors exactly as Telegram returns them


@pytest.mark.asyncio
async def test_bad_html_and_markdown_surface_as_bad_request(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    failures: list[BadRequest] = []

    async def answer(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_chat is not None
        for bad, mode in (
            ("<b>unclosed", ParseMode.HTML),
            ("line<br>break", ParseMode.HTML),
            ("<b>x</i>", ParseMode.HTML),
            ("1 < 2", ParseMode.HTML),
            ("Done.", ParseMode.MARKDOWN_V2),
        ):
            try:
                await context.bot.send_message(update.effective_chat.id, bad, parse_mode=mode)
            except BadRequest as exc:
                failures.append(exc)
        await context.bot.send_message(
            update.effective_chat.id, "1 &lt; 2 <i>fine</i>", parse_mode=ParseMode.HTML
        )

    async with running_app(fake, MessageHandler(filters.TEXT, answer)):
        fake.push_private_message(USER_ID, "format something")
        [ok] = await fake.wait_for_sent(chat_id=USER_ID)

    assert ok["plain_text"] == "1 < 2 fine"
    assert ok["entities"] == [{"offset": 6, "length": 4, "type": "italic"}]
    messages = [exc.message for exc in failures]
    assert messages == [
        "Can't parse entities: can't find end tag corresponding to start tag \"b\"",
        'Can\'t parse entities: unsupported start tag "br" at byte offset 4',
        'Can\'t parse entities: unmatched end tag at byte offset 4, expected "</b>", found "</i>"',
        'Can\'t parse entities: unsupported start tag "" at byte offset 2',
        "Can't parse entities: character '.' is reserved and must be escaped with the "
        "preceding '\\'",
    ]
    raw = fake.calls("sendMessage")[0]
    assert raw["status"] == 400
    assert raw["response"] == {
        "ok": False,
        "error_code": 400,
        "description": "Bad Request: can't parse entities: Can't find end tag corresponding "
        'to start tag "b"',
    }
    assert len(fake.sent_records("sendMessage")) == 1  # failed sends are not "sent"


@pytest.mark.asyncio
async def test_message_length_limit(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    fake.add_private_chat(USER_ID)
    async with running_app(fake) as app:
        with pytest.raises(BadRequest, match="Message is too long"):
            await app.bot.send_message(USER_ID, "x" * 4097)
        # 4096 after entity parsing is fine, even if the raw HTML is longer.
        ok = await app.bot.send_message(USER_ID, "<b>" + "y" * 4096 + "</b>", parse_mode="HTML")
        assert len(ok.text or "") == 4096
        with pytest.raises(BadRequest, match="Message text is empty"):
            await app.bot.send_message(USER_ID, "   ")
        with pytest.raises(BadRequest, match="Chat not found"):
            await app.bot.send_message(999, "nobody home")
        fake.block_user(USER_ID)
        with pytest.raises(Forbidden, match="bot was blocked by the user"):
            await app.bot.send_message(USER_ID, "hello?")


@pytest.mark.asyncio
async def test_edit_message_and_not_modified(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    user_msg = fake.push_private_message(USER_ID, "hi")
    async with running_app(fake) as app:
        draft = await app.bot.send_message(USER_ID, "thinking")
        await app.bot.edit_message_text("thinking about it", USER_ID, draft.message_id)
        assert fake.message_text(USER_ID, draft.message_id) == "thinking about it"

        with pytest.raises(BadRequest, match="Message is not modified"):
            await app.bot.edit_message_text("thinking about it", USER_ID, draft.message_id)
        # Same plain text with different formatting *is* a modification.
        edited = await app.bot.edit_message_text(
            "<b>thinking about it</b>", USER_ID, draft.message_id, parse_mode="HTML"
        )
        assert isinstance(edited, Message) and edited.edit_date is not None
        with pytest.raises(BadRequest, match="Message can't be edited"):
            await app.bot.edit_message_text("hijack", USER_ID, user_msg["message_id"])
        with pytest.raises(BadRequest, match="Message to edit not found"):
            await app.bot.edit_message_text("ghost", USER_ID, 9999)

    assert fake.bot_texts(USER_ID) == ["thinking about it"]
    edits = fake.sent_records("editMessageText", chat_id=USER_ID)
    assert [e["text"] for e in edits] == ["thinking about it", "<b>thinking about it</b>"]
    assert fake.calls("editMessageText")[1]["response"]["description"].startswith(
        "Bad Request: message is not modified: "
    )


@_IGNORE_PTB_RETRY_AFTER_DEPRECATION
@pytest.mark.asyncio
async def test_429_is_survived_by_aio_rate_limiter(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    fake.fail_next("sendMessage", 429, retry_after=1)
    limiter = AIORateLimiter(max_retries=2)
    async with running_app(fake, MessageHandler(filters.TEXT, _echo), rate_limiter=limiter):
        started = time.monotonic()
        fake.push_private_message(USER_ID, "are you there?")
        [record] = await fake.wait_for_sent(chat_id=USER_ID, timeout=5)
        elapsed = time.monotonic() - started

    assert record["text"] == "are you there?"
    attempts = fake.calls("sendMessage")
    assert [a["status"] for a in attempts] == [429, 200]
    assert attempts[0]["response"] == {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 1",
        "parameters": {"retry_after": 1},
    }
    assert elapsed >= 1.0  # the limiter honoured retry_after


@_IGNORE_PTB_RETRY_AFTER_DEPRECATION
@pytest.mark.asyncio
async def test_429_without_limiter_and_flood_control(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    fake.add_private_chat(USER_ID)
    async with running_app(fake) as app:
        fake.fail_next("sendmessage", 429, retry_after=7)  # method names are case-insensitive
        with pytest.raises(RetryAfter, match="Retry in 7"):
            await app.bot.send_message(USER_ID, "one")
        fake.set_flood_limit(2, period=30)
        await app.bot.send_message(USER_ID, "one")
        await app.bot.edit_message_text("uno", USER_ID, 1)
        with pytest.raises(RetryAfter):
            await app.bot.send_message(USER_ID, "two")
        fake.fail_next("*", 502)
        with pytest.raises(Exception, match="Bad Gateway"):
            await app.bot.send_chat_action(USER_ID, ChatAction.TYPING)
    assert fake.calls("sendMessage")[-1]["response"]["parameters"]["retry_after"] >= 29


# ------------------------------------------------------------------------------------------
# files, chat actions, commands


@pytest.mark.asyncio
async def test_documents_chat_actions_and_files(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    incoming = fake.push_document(USER_ID, USER_ID, b"inbound bytes", file_name="in.txt")
    async with running_app(fake) as app:
        assert await app.bot.send_chat_action(USER_ID, ChatAction.UPLOAD_DOCUMENT)
        with pytest.raises(BadRequest, match="Wrong parameter action"):
            await app.bot.send_chat_action(USER_ID, "dancing")
        sent = await app.bot.send_document(
            USER_ID,
            document=b"%PDF-1.4 fake",
            filename="report.pdf",
            caption="your <i>report</i>",
            parse_mode="HTML",
        )
        assert sent.document is not None and sent.document.file_name == "report.pdf"
        assert sent.caption == "your report"

        pushed = await app.bot.get_file(incoming["document"]["file_id"])
        assert bytes(await pushed.download_as_bytearray()) == b"inbound bytes"
        uploaded = await app.bot.get_file(sent.document.file_id)
        assert bytes(await uploaded.download_as_bytearray()) == b"%PDF-1.4 fake"

    [doc] = fake.documents
    assert doc["content"] == b"%PDF-1.4 fake" and doc["file_name"] == "report.pdf"
    assert doc["mime_type"] == "application/pdf"
    assert fake.files[sent.document.file_id] == b"%PDF-1.4 fake"
    assert [a["action"] for a in fake.chat_actions] == ["upload_document"]


@pytest.mark.asyncio
async def test_bot_commands(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    async with running_app(fake) as app:
        assert await app.bot.set_my_commands([("help", "Show help"), ("forget", "Forget me")])
        assert [c.command for c in await app.bot.get_my_commands()] == ["help", "forget"]
        with pytest.raises(BadRequest):
            await app.bot.set_my_commands([("Bad-Name", "nope")])
        assert await app.bot.delete_my_commands()
        assert await app.bot.get_my_commands() == ()
    assert fake.my_commands() == []


# ------------------------------------------------------------------------------------------
# raw HTTP shapes, long polling, shutdown, subprocesses


@pytest.mark.asyncio
async def test_raw_http_shapes(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    fake.add_private_chat(USER_ID)
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{fake.api_url}/sendSticker", json={}) as resp:
            assert resp.status == 404
            assert await resp.json() == {"ok": False, "error_code": 404, "description": "Not Found"}
        async with http.post(f"{fake.base_url}123:wrong/getMe") as resp:
            assert resp.status == 401
            assert (await resp.json())["description"] == "Unauthorized"
        body = {"chat_id": USER_ID, "text": "json body", "reply_markup": {"inline_keyboard": []}}
        async with http.post(f"{fake.api_url}/sendMessage", json=body) as resp:
            result = (await resp.json())["result"]
            assert resp.status == 200 and result["text"] == "json body"
            assert result["from"]["is_bot"] is True and result["chat"]["type"] == "private"
        form = {
            "chat_id": str(USER_ID),
            "text": "form body",
            "entities": json.dumps([{"type": "bold", "offset": 0, "length": 4}]),
        }
        async with http.post(f"{fake.api_url}/sendMessage", data=form) as resp:
            assert (await resp.json())["result"]["entities"][0]["type"] == "bold"
        async with http.get(f"{fake.api_url}/getMe") as resp:
            assert (await resp.json())["result"]["username"] == "strata_bot"
    assert fake.unknown_methods == ["sendSticker"]


@pytest.mark.asyncio
async def test_get_updates_offset_timeout_and_conflict(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    url = f"{fake.api_url}/getUpdates"
    async with aiohttp.ClientSession() as http:

        async def poll(**params: Any) -> tuple[int, Any]:
            async with http.post(url, data={k: str(v) for k, v in params.items()}) as resp:
                return resp.status, await resp.json()

        for text in ("a", "b", "c"):
            fake.push_private_message(USER_ID, text)
        raw_id = fake.push_update({"my_chat_member": {"chat": {"id": USER_ID, "type": "private"}}})
        _, first = await poll(timeout=0, limit=3)
        assert [u["message"]["text"] for u in first["result"]] == ["a", "b", "c"]
        _, last_only = await poll(offset=-1)  # negative offset: only the newest update
        assert [u["update_id"] for u in last_only["result"]] == [raw_id]
        _, empty = await poll(offset=raw_id + 1)
        assert empty == {"ok": True, "result": []} and fake.pending_update_count == 0

        started = time.monotonic()
        _, timed_out = await poll(timeout=0.3)
        assert timed_out["result"] == [] and 0.25 <= time.monotonic() - started < 1.5

        # A long poll returns as soon as an update arrives (pushed from another thread).
        threading.Timer(0.2, fake.push_private_message, (USER_ID, "late")).start()
        started = time.monotonic()
        _, woke = await poll(timeout=10)
        assert woke["result"][0]["message"]["text"] == "late"
        assert time.monotonic() - started < 2

        # A second getUpdates terminates the first one with 409 Conflict, like Telegram.
        older = asyncio.create_task(poll(offset=woke["result"][0]["update_id"] + 1, timeout=5))
        await asyncio.sleep(0.1)
        status_new, _ = await poll(timeout=0)
        status_old, old_body = await older
        assert status_new == 200 and status_old == 409
        assert old_body["description"].startswith("Conflict: terminated by other getUpdates")


@pytest.mark.asyncio
async def test_clean_shutdown_is_fast() -> None:
    with FakeTelegramAPI(bot_username="other_bot") as fake:
        async with running_app(fake, MessageHandler(filters.TEXT, _echo)) as app:
            assert app.bot.username == "other_bot"
            fake.push_private_message(USER_ID, "ping")
            await fake.wait_for_sent(chat_id=USER_ID)
            started = time.monotonic()
        assert time.monotonic() - started < 2.0  # updater.stop + stop + shutdown

        # Stopping the server answers a pending long poll at once.
        polls_so_far = len(fake.calls("getUpdates"))
        async with aiohttp.ClientSession() as http:
            request = asyncio.create_task(
                http.post(f"{fake.api_url}/getUpdates", data={"timeout": "30"})
            )
            await fake.wait_for(lambda: len(fake.calls("getUpdates")) > polls_so_far)
            started = time.monotonic()
            await asyncio.to_thread(fake.stop)
            resp = await request
            assert resp.status == 200 and (await resp.json())["result"] == []
            assert time.monotonic() - started < 2.0
    assert not fake.running


def test_serves_a_bot_in_a_subprocess(telegram_api: FakeTelegramAPI) -> None:
    fake = telegram_api
    fake.add_private_chat(USER_ID)
    script = textwrap.dedent(
        f"""
        import asyncio
        from telegram import Bot

        async def main():
            async with Bot({fake.token!r}, base_url={fake.base_url!r}) as bot:
                await bot.send_message({USER_ID}, "from a subprocess")

        asyncio.run(main())
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 0, proc.stderr
    record = fake.wait_for_sync(lambda: fake.last_sent(chat_id=USER_ID), timeout=5)
    assert record is not None and record["text"] == "from a subprocess"
