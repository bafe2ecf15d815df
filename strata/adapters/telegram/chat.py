"""Sending into one Telegram chat: the reply operations a turn's reply uses (`Chat`).

Replies go out as HTML (`formatting.to_html`); when Telegram rejects the entities ("can't
parse entities") the same part is resent as plain text. A 429 becomes `PlatformRateLimited`
(`flood.flood_control`), a 5xx or a network error `PlatformUnavailable` with a doubling
backoff; `call_with_retry` (`strata.core.sending`) retries both, the one retry layer of a
send (the answer is saved by then; showing it is worth a few seconds). "Message is not
modified" counts as done. `/export` files go out with sendDocument. Telegram counts a
message's 4,096 characters in UTF-16 units (`utf16_len`). Imports `strata.core.sending`,
`strata.adapters.telegram.*`, `strata.core.retry` and python-telegram-bot.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from telegram import Bot, ReplyParameters
from telegram.constants import ChatAction, ParseMode
from telegram.error import BadRequest, NetworkError

from strata.adapters.telegram.flood import RETRY_CAP, flood_control
from strata.adapters.telegram.formatting import to_html
from strata.core.retry import doubling
from strata.core.sending import PlatformUnavailable

log = logging.getLogger(__name__)

MESSAGE_LIMIT = 4096
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
        self._failures = 0  # platform failures in a row, for the backoff

    async def _once(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call` with a 429 turned into `PlatformRateLimited` and a 5xx or network error
        (PTB's `NetworkError`, which `BadRequest` is not here) into `PlatformUnavailable`,
        its wait doubling while failures follow each other in this chat. A timed-out send
        may have arrived; a rare duplicate beats a lost answer."""
        try:
            async with flood_control():
                result = await call()
        except NetworkError as exc:
            if isinstance(exc, BadRequest):
                raise
            self._failures += 1
            wait = doubling(self._failures, self.retry_base, RETRY_CAP)
            raise PlatformUnavailable(wait, f"telegram: {exc.message}") from exc
        self._failures = 0
        return result

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

        sent_id = await self._once(once)
        self.reply_to = None
        return sent_id

    async def edit(self, message_id: str, text: str) -> None:
        await self._once(lambda: self._edit_once(message_id, text))

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
        sent = await self._once(
            lambda: self.bot.send_document(self.chat_id, document=data, filename=name))
        return str(sent.message_id)
