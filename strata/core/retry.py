"""The one retry policy: every place that tries a call again (the model client, the platform
adapters' sends, their reconnect loops, the episode summary) states its rules as a
`RetryPolicy` and lets tenacity run the loop.

The project's rules, written once here:
- a bounded number of attempts (`attempts`; `None` only for a reconnect loop, which waits
  between failures with `pause` and never gives up);
- doubling waits with a cap: `base`, 2×`base`, 4×`base` … at most `cap` (`doubling`, which
  `cognition.backoff` also uses for work retried across runner ticks);
- a server's `retry-after` honoured, capped at `retry_after_cap`: the wait is the longer of the
  two, so a client never comes back sooner than the server asked;
- only what `retryable` says is retried (never a cancellation); anything else, and the last
  failure, is raised as it was, for the caller to translate;
- `sleep` is injected, so tests never really wait.
A leaf module: imports tenacity and the standard library only.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

log = logging.getLogger(__name__)

T = TypeVar("T")
Sleep = Callable[[float], Awaitable[None]]
RetryAfter = Callable[[BaseException], float | None]

MAX_DOUBLINGS = 30  # 2**30 × base is past any sensible cap (and keeps the float finite)


def doubling(attempt: int, base: float, cap: float) -> float:
    """The wait after the `attempt`-th failure in a row (1-based): base, 2×base, 4×base … cap."""
    exponent = min(max(attempt - 1, 0), MAX_DOUBLINGS)
    return min(base * 2**exponent, cap)


def no_retry_after(_: BaseException) -> float | None:
    """For errors that never carry a server's wait."""
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """How one kind of call is retried; `call` runs it, `pause` serves a reconnect loop."""

    retryable: Callable[[BaseException], bool]
    what: str  # names the call in the log
    attempts: int | None = 3  # tries in all, the first included; None: a loop's `pause` only
    base: float = 0.5  # seconds: the first wait
    cap: float = 30.0  # seconds: the longest wait doubling gives
    retry_after: RetryAfter = no_retry_after  # the server's own wait, when it said one
    retry_after_cap: float = 60.0
    # Each doubled wait times a random 0.5–1: many clients failing together (one model server
    # restarting) do not all come back at the same instant.
    jitter: bool = False
    sleep: Sleep = asyncio.sleep
    log_level: int = logging.INFO  # a routine retry; the caller reports the final failure

    def wait(self, attempt: int, exc: BaseException) -> float:
        """Seconds to wait after the `attempt`-th failure in a row (1-based) raised `exc`."""
        wait = doubling(attempt, self.base, self.cap)
        if self.jitter:
            wait *= 0.5 + random.random() / 2
        told = self.retry_after(exc)
        if told is not None:
            wait = max(wait, min(max(told, 0.0), self.retry_after_cap))
        return wait

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """`fn()`, tried again after each retryable failure until it succeeds or the attempts
        are spent; the last (or a non-retryable) exception is raised unchanged."""
        if self.attempts is None:
            raise ValueError("a retried call needs a bound on its attempts; a loop that never "
                             "gives up waits with `pause`")
        if self.attempts < 1:
            raise ValueError("a retry policy needs at least one attempt")
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=retry_if_exception(self._retries),
            sleep=self.sleep,
            before_sleep=self._log,
            reraise=True,
        )
        # The iterator form, not `retrying(fn)`: tenacity awaits only what it recognises as a
        # coroutine function, and a lambda returning an awaitable is not one.
        async for attempt in retrying:
            with attempt:
                return await fn()
        raise AssertionError("tenacity either returns or raises")  # pragma: no cover

    async def pause(self, attempt: int, exc: BaseException) -> None:
        """Wait out the `attempt`-th failure in a row of a loop that never gives up (a poll or
        sync loop, which resets its count after a success)."""
        wait = self.wait(attempt, exc)
        log.log(self.log_level, "%s failed (%s); retrying in %.2fs", self.what,
                _describe(exc), wait)
        await self.sleep(wait)

    def _retries(self, exc: BaseException) -> bool:
        # A cancellation (or KeyboardInterrupt) is never a failure to retry.
        return isinstance(exc, Exception) and self.retryable(exc)

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        return self.wait(state.attempt_number, exc) if exc is not None else 0.0

    def _log(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.log(self.log_level, "%s failed (%s), retry %d in %.2fs", self.what,
                _describe(exc), state.attempt_number, wait)


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "?"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
