"""The one retry policy (`strata.core.retry`): bounded attempts, doubling waits with a cap, a
server's retry-after honoured but capped, only retryable errors retried, and every wait going
through the injected sleep (so these tests never really wait)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strata.core.retry import RetryPolicy, doubling


class Flaky(Exception):
    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("flaky")
        self.retry_after = retry_after


class Fatal(Exception):
    pass


def told(exc: BaseException) -> float | None:
    return exc.retry_after if isinstance(exc, Flaky) else None


class Calls:
    """A call that fails with the given errors, in order, then answers "done"."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.count = 0

    async def __call__(self) -> str:
        self.count += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


def policy(slept: list[float], **kw: object) -> RetryPolicy:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    args: dict[str, object] = {"retryable": lambda e: isinstance(e, Flaky), "what": "test call",
                               "attempts": 4, "base": 0.5, "cap": 3.0, "retry_after": told,
                               "retry_after_cap": 10.0, "sleep": sleep}
    args.update(kw)
    return RetryPolicy(**args)  # type: ignore[arg-type]


async def test_retryable_failures_are_retried_with_doubling_waits() -> None:
    slept: list[float] = []
    fn = Calls(Flaky(), Flaky(), Flaky())
    assert await policy(slept).call(fn) == "done"
    assert fn.count == 4
    assert slept == [0.5, 1.0, 2.0]


async def test_the_attempts_are_bounded_and_the_last_error_is_raised_unchanged() -> None:
    slept: list[float] = []
    last = Flaky()
    fn = Calls(Flaky(), Flaky(), Flaky(), last, Flaky())
    with pytest.raises(Flaky) as raised:
        await policy(slept).call(fn)
    assert raised.value is last
    assert fn.count == 4 and len(slept) == 3


async def test_what_is_not_retryable_is_raised_at_once() -> None:
    slept: list[float] = []
    fn = Calls(Fatal("no"))
    with pytest.raises(Fatal):
        await policy(slept).call(fn)
    assert fn.count == 1 and slept == []


async def test_a_cancellation_is_never_retried_even_by_a_policy_that_retries_everything() -> None:
    slept: list[float] = []
    fn = Calls(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        await policy(slept, retryable=lambda e: True).call(fn)
    assert fn.count == 1 and slept == []


async def test_a_servers_retry_after_is_honoured_and_capped() -> None:
    slept: list[float] = []
    # Longer than doubling gives: the server's wait; far longer: the cap; shorter: doubling.
    fn = Calls(Flaky(retry_after=4.0), Flaky(retry_after=999.0), Flaky(retry_after=0.1))
    assert await policy(slept).call(fn) == "done"
    assert slept == [4.0, 10.0, 2.0]


async def test_doubling_stops_at_the_cap() -> None:
    slept: list[float] = []
    fn = Calls(*[Flaky() for _ in range(6)])
    assert await policy(slept, attempts=7).call(fn) == "done"
    assert slept == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


async def test_one_attempt_means_no_retry_and_zero_or_unbounded_is_refused() -> None:
    slept: list[float] = []
    with pytest.raises(Flaky):
        await policy(slept, attempts=1).call(Calls(Flaky()))
    assert slept == []
    with pytest.raises(ValueError, match="at least one attempt"):
        await policy(slept, attempts=0).call(Calls())
    with pytest.raises(ValueError, match="needs a bound"):
        await policy(slept, attempts=None).call(Calls())


async def test_each_retry_is_logged_with_its_wait(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="strata.core.retry")
    slept: list[float] = []
    await policy(slept).call(Calls(Flaky()))
    assert [r.getMessage() for r in caplog.records] == [
        "test call failed (Flaky: flaky), retry 1 in 0.50s"]


async def test_pause_waits_out_a_reconnect_loops_failures(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="strata.core.retry")
    slept: list[float] = []
    loop = policy(slept, attempts=None, log_level=logging.WARNING)
    for failures in (1, 2, 9):
        await loop.pause(failures, Fatal("down"))
    await loop.pause(1, Flaky(retry_after=7.0))
    assert slept == [0.5, 1.0, 3.0, 7.0]
    assert caplog.records[0].getMessage() == "test call failed (Fatal: down); retrying in 0.50s"


@given(st.integers(min_value=1, max_value=200))
def test_jitter_keeps_each_wait_between_half_and_all_of_the_doubled_one(attempt: int) -> None:
    p = policy([], jitter=True)
    full = doubling(attempt, 0.5, 3.0)
    assert full / 2 <= p.wait(attempt, Fatal()) <= full


@given(st.integers(min_value=-5, max_value=10_000))
def test_doubling_never_exceeds_the_cap_nor_goes_below_the_base(attempt: int) -> None:
    assert 0.25 <= doubling(attempt, 0.25, 60.0) <= 60.0
