"""What every platform adapter shares: message splitting at the platform limit, streamed
replies by throttled edits, retry-after handling, and the typing indicator loop.

A platform adapter supplies small async callables (`send`, `edit`, `typing`) and gets the common
behaviour from here, so splitting and throttling are written once. Imports only
`strata.core.retry` (the project's one retry policy) of Strata.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from strata.core.retry import RetryPolicy

log = logging.getLogger(__name__)

Size = Callable[[str], int]
SendFn = Callable[[str], Awaitable[str]]  # send text, return the platform message id
EditFn = Callable[[str, str], Awaitable[None]]  # edit (message id, new text)
TypingFn = Callable[[], Awaitable[None]]


class PlatformRateLimited(Exception):
    """Raised by a platform call that was refused with 429; `retry_after` in seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited, retry after {retry_after:.2f}s")
        self.retry_after = retry_after


class PlatformUnavailable(PlatformRateLimited):
    """Raised by a platform call that failed on the platform's side (a 5xx, a dropped
    connection); `retry_after` is the adapter's own backoff. A send is retried in one place,
    `call_with_retry`, whichever of the two refused it."""

    def __init__(self, retry_after: float, reason: str) -> None:
        super().__init__(retry_after)
        self.args = (f"{reason}, retry after {retry_after:.2f}s",)


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


_BREAKS = [
    re.compile(r"\n\s*\n"),  # paragraphs
    re.compile(r"\n"),  # lines
    re.compile(r"(?<=[.!?…])\s+"),  # sentences
    re.compile(r"\s+"),  # words
]


def _fit(text: str, limit: int, size: Size) -> int:
    """The longest prefix length of `text` whose size is ≤ limit (binary search, ≥ 1)."""
    lo, hi = 1, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if size(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def split_message(text: str, limit: int, size: Size = len) -> list[str]:
    """Split `text` into parts of at most `limit` (as measured by `size`), never losing text.

    Cuts at the last paragraph break that fits, else line, sentence, word; only a single word
    longer than the limit is cut hard.
    """
    if limit <= 0:
        raise ValueError("limit must be positive")
    parts: list[str] = []
    rest = text
    while size(rest) > limit:
        window = rest[: _fit(rest, limit, size)]
        cut = end = 0
        for pattern in _BREAKS:
            matches = [m for m in pattern.finditer(window) if m.start() > 0]
            if matches:
                cut, end = matches[-1].start(), matches[-1].end()
                break
        if cut == 0:
            cut = end = len(window)
        parts.append(rest[:cut].rstrip())
        rest = rest[end:]
    if rest.strip() or not parts:
        parts.append(rest)
    return [p for p in parts if p] or [""]


def rate_limited(exc: BaseException) -> bool:
    return isinstance(exc, PlatformRateLimited)


def platform_retry_after(exc: BaseException) -> float | None:
    """The wait a platform's 429 asked for, in seconds."""
    return exc.retry_after if isinstance(exc, PlatformRateLimited) else None


async def call_with_retry(fn: Callable[[], Awaitable[str | None]], *, attempts: int = 4,
                          max_wait: float = 60.0) -> str | None:
    """Call a platform operation, `attempts` tries in all, sleeping out each
    `PlatformRateLimited` or `PlatformUnavailable` between them (the wait it names, at most
    `max_wait`: no backoff of ours on top). The one retry layer of a send: adapters translate
    their errors and never retry a send themselves."""
    policy = RetryPolicy(retryable=rate_limited, what="platform call", attempts=attempts,
                         base=0.0, retry_after=platform_retry_after, retry_after_cap=max_wait)
    return await policy.call(fn)


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
