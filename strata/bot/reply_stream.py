"""Showing a reply while it is written, and the typing indicator while the model works: the
platform-neutral half of a turn's delivery (`strata.bot.delivery`).

`StreamedReply` keeps one message edited at most every `min_interval` seconds and, at the end,
splits the text at the platform limit into more messages; `typing_while` keeps the indicator on
while its body runs. Both talk to the platform only through the calls a room gives
(`strata.core.sending`: send, edit, typing) and skip or sleep out a 429.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from strata.core.sending import (
    EditFn,
    PlatformRateLimited,
    SendFn,
    Size,
    TypingFn,
    call_with_retry,
    split_message,
)

log = logging.getLogger(__name__)


@dataclass
class StreamedReply:
    """Shows a reply while it is being written: one message, edited at most every
    `min_interval` seconds; at the end the text is split at the limit into more messages.

    Use `await update(cumulative_text)` for partials and `await finish(text)` once.
    """

    send: SendFn
    edit: EditFn
    limit: int
    size: Size = len
    min_interval: float = 1.0
    monotonic: Callable[[], float] = time.monotonic
    message_ids: list[str] = field(default_factory=list)
    _shown: str = ""
    _last_edit: float = float("-inf")
    _blocked_until: float = float("-inf")

    def _head(self, text: str) -> str:
        return split_message(text, self.limit, self.size)[0]

    async def update(self, text: str) -> None:
        now = self.monotonic()
        if now < self._blocked_until or now - self._last_edit < self.min_interval:
            return
        # Throttle the work too, not only the edits: splitting a long text costs time.
        self._last_edit = now
        head = self._head(text).rstrip()
        if self.size(head + " …") <= self.limit:
            head += " …"
        if head == self._shown:
            return
        try:
            if not self.message_ids:
                self.message_ids.append(await self.send(head))
            else:
                await self.edit(self.message_ids[0], head)
        except PlatformRateLimited as exc:
            # Streaming is best effort: skip edits until the platform is ready again.
            self._blocked_until = now + exc.retry_after
            return
        self._shown = head
        self._last_edit = self.monotonic()

    async def finish(self, text: str) -> list[str]:
        parts = split_message(text, self.limit, self.size)
        if self.message_ids:
            if parts[0] != self._shown:
                first_id = self.message_ids[0]
                await call_with_retry(lambda: self._edit_then_none(first_id, parts[0]))
            rest = parts[1:]
        else:
            rest = parts
        for part in rest:
            msg_id = await call_with_retry(lambda p=part: self.send(p))  # type: ignore[misc]
            if msg_id is not None:
                self.message_ids.append(msg_id)
        return self.message_ids

    async def _edit_then_none(self, msg_id: str, text: str) -> None:
        await self.edit(msg_id, text)


@contextlib.asynccontextmanager
async def typing_while(typing: TypingFn, every: float = 4.0) -> AsyncIterator[None]:
    """Keep the platform's typing indicator on while the body runs."""

    async def loop() -> None:
        while True:
            try:
                await typing()
            except PlatformRateLimited as exc:
                await asyncio.sleep(exc.retry_after)
                continue
            except Exception:  # adapter boundary: a typing indicator must never break a turn
                log.debug("typing indicator failed", exc_info=True)
            await asyncio.sleep(every)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
