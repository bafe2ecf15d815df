"""Sending into one Telegram chat: the reply operations a turn's reply uses (`Chat`).

Replies go out as HTML (`formatting.to_html`); when Telegram rejects the entities ("can't
parse entities") the same part is resent as plain text. A 429 becomes `PlatformRateLimited`
(`flood.flood_control`). A 5xx or a network error on a send, edit or file is retried
`SEND_RETRIES` times with doubling backoff (the answer is saved by then; showing it is worth a
few seconds). "Message is not modified" counts as done. `/export` files go out with
sendDocument. Telegram counts a message's 4,096 characters in UTF-16 units (`utf16_len`).
Imports `strata.adapters.telegram.*` and python-telegram-bot.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from telegram import Bot, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest

from strata.adapters.telegram.flood import backoff, flood_control
from strata.adapters.telegram.formatting import to_html

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 4096
SEND_RETRIES = 3  # after a 5xx or a network error; then the error reaches `deliver_turn`
T = TypeVar("T")


def utf16_len(text: str) -> int:
    """Telegram counts message length in UTF-16 code units (an emoji can count twice)."""
    return len(text.encode("utf-16-le")) // 2


def _entities_rejected(exc: BadRequest) -> bool:
    return "can't parse entities" in exc.message.lower()


def _not_modified(exc: BadRequest) -> bool:
    return "message is not modified" in exc.message.lower()


class Chat:
    """Sending into one chat: HTML with a plain-text fallback, 429 → `PlatformRateLimited`."""

    def __init__(
        self, bot: Bot, chat_id: int, reply_to: int | None = None, *, retry_base: float = 1.0
    ) -> None:
        self.bot = bot
        self.chat_id = chat_id
        self.reply_to = reply_to  # in groups the first part answers the person's message
        self.retry_base = retry_base

    async def _sturdy(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call` with a 429 turned into `PlatformRateLimited` and a 5xx or network error
        (PTB's `NetworkError`, which `BadRequest` is not here) retried `SEND_RETRIES` times
        with doubling backoff: the answer is already saved, so it is worth a few seconds to
        show it. A timed-out send may have arrived; a rare duplicate beats a lost answer."""
        async def once() -> T:
            async with flood_control():
                return await call()

        return await backoff(self.retry_base, attempts=SEND_RETRIES + 1).call(once)

    async def send(self, text: str) -> str:
        reply = None
        if self.reply_to is not None:
            reply = ReplyParameters(self.reply_to, allow_sending_without_reply=True)

        async def once() -> str:
            try:
                sent = await self.bot.send_message(
                    self.chat_id, to_html(text), parse_mode=ParseMode.HTML, reply_parameters=reply
                )
            except BadRequest as exc:
                if not _entities_rejected(exc):
                    raise
                log.info("telegram: HTML rejected (%s); sending plain text", exc.message)
                sent = await self.bot.send_message(self.chat_id, text, reply_parameters=reply)
            return str(sent.message_id)

        sent_id = await self._sturdy(once)
        self.reply_to = None
        return sent_id

    async def edit(self, message_id: str, text: str) -> None:
        await self._sturdy(lambda: self._edit_once(message_id, text))

    async def _edit_once(self, message_id: str, text: str) -> None:
        try:
            try:
                await self.bot.edit_message_text(
                    to_html(text), self.chat_id, int(message_id), parse_mode=ParseMode.HTML
                )
            except BadRequest as exc:
                if not _entities_rejected(exc):
                    raise
                await self.bot.edit_message_text(text, self.chat_id, int(message_id))
        except BadRequest as exc:
            if not _not_modified(exc):
                raise

    async def typing(self) -> None:
        async with flood_control():
            await self.bot.send_chat_action(self.chat_id, ChatAction.TYPING)

    async def send_file(self, name: str, data: bytes) -> str:
        sent = await self._sturdy(
            lambda: self.bot.send_document(self.chat_id, document=data, filename=name))
        return str(sent.message_id)
