"""The openai SDK beneath `strata.bot.llm`'s clients: loading it late, its client per endpoint,
its errors translated into `strata.core.errors.ModelError`s, and the one retry policy of a model
call (`strata.core.retry`: jittered doubling waits, a server's Retry-After honoured up to 30 s).
429, 5xx, timeouts, connection errors and malformed answers are retried; the SDK's own retries
are off (`max_retries=0`): its waits cannot be injected, it does not retry a malformed answer,
and two retry layers would multiply the attempts. No other module imports `openai`, and these
only when a client is first used (`load_sdk` warms it up): importing the SDK takes about a
second (its types are hundreds of pydantic models), which start-up must not wait for.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from strata.bot.tls import shared_tls
from strata.core.errors import (
    ModelBadResponseError,
    ModelError,
    ModelRateLimitedError,
    ModelRequestError,
    ModelUnavailableError,
)
from strata.core.retry import RetryPolicy, Sleep

if TYPE_CHECKING:
    import openai

T = TypeVar("T")
MAX_RETRY_AFTER = 30.0  # seconds: the longest a server's Retry-After keeps us waiting
MAX_BACKOFF = 30.0  # seconds: the longest doubled wait


def load_sdk() -> None:
    """Import the SDK and load the CA bundle now (in a thread at start-up), so that no model
    call waits for them."""
    import openai  # noqa: F401

    shared_tls()


def _retry_after(exc: BaseException) -> float | None:
    """The server's Retry-After in seconds (the policy caps it), when it sent one."""
    import openai

    if not isinstance(exc, openai.APIStatusError):
        return None
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, ValueError):
        return None


def translate(exc: Exception, what: str) -> ModelError:
    """Map an SDK exception onto the project's error types, with a short honest message."""
    import openai

    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimitedError(f"{what}: rate limited (429)")
    if isinstance(exc, openai.APITimeoutError):
        return ModelUnavailableError(f"{what}: timed out")
    if isinstance(exc, openai.APIConnectionError):
        return ModelUnavailableError(f"{what}: cannot connect")
    if isinstance(exc, openai.InternalServerError):
        return ModelUnavailableError(f"{what}: server error {exc.status_code}")
    if isinstance(exc, openai.NotFoundError):
        return ModelRequestError(f"{what}: not found (404) - is the model name right?")
    if isinstance(exc, openai.APIStatusError):
        return ModelRequestError(f"{what}: refused ({exc.status_code})")
    if isinstance(exc, openai.APIResponseValidationError | ValueError | KeyError | TypeError):
        return ModelBadResponseError(f"{what}: malformed answer ({type(exc).__name__})")
    return ModelBadResponseError(f"{what}: {type(exc).__name__}")


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, ModelError):
        return isinstance(exc, ModelBadResponseError)
    return isinstance(
        exc,
        openai.RateLimitError
        | openai.APITimeoutError
        | openai.APIConnectionError
        | openai.InternalServerError
        | openai.APIResponseValidationError,
    )


def policy(max_retries: int, backoff: float, sleep: Sleep) -> RetryPolicy:
    return RetryPolicy(retryable=_retryable, what="model call", attempts=max_retries + 1,
                       base=backoff, cap=MAX_BACKOFF, retry_after=_retry_after,
                       retry_after_cap=MAX_RETRY_AFTER, jitter=True, sleep=sleep)


async def retried(policy: RetryPolicy, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """`call` under `policy`; its last failure translated into a `ModelError`."""
    try:
        return await policy.call(call)
    except Exception as exc:
        raise translate(exc, what) from exc


class Client:
    """The SDK's client, made on first use (see the module doc)."""

    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self._args = (base_url, api_key or "none", timeout)

    @functools.cached_property
    def sdk(self) -> openai.AsyncOpenAI:
        import openai

        base_url, api_key, timeout = self._args
        return openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(verify=shared_tls()))

    async def close(self) -> None:
        if "sdk" in self.__dict__:  # never made: nothing to close
            await self.sdk.close()
