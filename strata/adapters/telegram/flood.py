"""Telegram's flood control and retries, shared by the chat sends (`chat`) and the poll loop
(`polling`).

PTB's `AIORateLimiter` paces requests under Telegram's flood limits (`TimedRateLimiter` logs
how long it held each one); with `max_retries=0` a 429 (`RetryAfter`) is passed on and becomes
the adapters' common `PlatformRateLimited` (`flood_control`). The poll loop waits out a 5xx or
a network error with doubling backoff up to `RETRY_CAP` (`backoff`), a 429's own wait
honoured; a send's errors are retried by `strata.core.sending.call_with_retry`.
Imports `strata.core` and python-telegram-bot.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from telegram.error import BadRequest, NetworkError, RetryAfter
from telegram.ext import AIORateLimiter

from strata.core import retry
from strata.core.sending import PlatformRateLimited

# Timings a benchmark reads (`--log-level info`): how long flood control held each request.
timing_log = logging.getLogger(__name__ + ".timing")
# Waits shorter than this are the limiter's own bookkeeping, not flood control.
HELD_LOGGED = 0.001
RETRY_CAP = 30.0  # seconds: the longest single backoff


def _retry_seconds(exc: RetryAfter) -> float:
    with warnings.catch_warnings():  # PTB 22 warns that the attribute's type will change
        warnings.simplefilter("ignore", DeprecationWarning)
        value: Any = exc.retry_after
    return float(value.total_seconds() if isinstance(value, timedelta) else value)


def _told_wait(exc: BaseException) -> float | None:
    return _retry_seconds(exc) if isinstance(exc, RetryAfter) else None


def _server_trouble(exc: BaseException) -> bool:
    """A 5xx or a network error (PTB's `NetworkError`; a `BadRequest` is the request's own
    fault, and a 429 is `RetryAfter`, or `PlatformRateLimited` once flood control saw it)."""
    return isinstance(exc, NetworkError) and not isinstance(exc, BadRequest)


def backoff(base: float, *, attempts: int | None, what: str = "telegram") -> retry.RetryPolicy:
    """Telegram's retries: doubling from `base` up to `RETRY_CAP`, a 429's own wait honoured."""
    return retry.RetryPolicy(retryable=_server_trouble, what=what, attempts=attempts,
                             base=base, cap=RETRY_CAP, retry_after=_told_wait,
                             log_level=logging.WARNING)


@contextlib.asynccontextmanager
async def flood_control() -> AsyncIterator[None]:
    """Turn Telegram's 429 into the adapters' common `PlatformRateLimited`."""
    try:
        yield
    except RetryAfter as exc:
        raise PlatformRateLimited(_retry_seconds(exc)) from exc


class _HandledRateLimitLog(logging.Filter):
    """Drops PTB's error log for a 429 the rate limiter passes on: with `max_retries=0` every
    429 is passed on by design and handled here (logged at INFO by `strata.core.retry`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Rate limit hit after maximum of 0 retries")


def quiet_handled_429s() -> None:
    limiter_log = logging.getLogger("telegram.ext.AIORateLimiter")
    if not any(isinstance(f, _HandledRateLimitLog) for f in limiter_log.filters):
        limiter_log.addFilter(_HandledRateLimitLog())


class TimedRateLimiter(AIORateLimiter):
    """PTB's flood-control pacing, saying how long it held each request that had to wait: the
    platform's share of a turn's time, told apart from Strata's own (bench/reliability's
    `load` case reads these lines; `--log-level info` shows them)."""

    async def process_request(self, callback: Any, args: Any, kwargs: dict[str, Any],
                              endpoint: str, data: dict[str, Any],
                              rate_limit_args: int | None) -> Any:
        queued = time.monotonic()

        async def released(*a: Any, **kw: Any) -> Any:
            held = time.monotonic() - queued
            if held >= HELD_LOGGED:
                timing_log.info("flood control held %s to chat %s for %.1f ms (until %.3f)",
                               endpoint, data.get("chat_id"), held * 1000, time.time())
            return await callback(*a, **kw)

        return await super().process_request(released, args, kwargs, endpoint, data,
                                              rate_limit_args)
