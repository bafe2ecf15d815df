"""What sending to a platform means, shared by the adapters (which send) and the turn's
delivery (`strata.bot.delivery`, which decides what to send): the shapes of the send, edit and
typing calls, the error a refused (429) call raises, splitting a text at the platform's limit,
and retrying a call after the wait the platform asked for.

Written once here, so every platform splits and waits the same way. Imports only
`strata.core.retry` (the project's one retry policy) of Strata.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from strata.core.retry import RetryPolicy

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
