"""The one OpenAI-compatible client: chat (streaming and not) and embeddings.

Wraps `openai.AsyncOpenAI` pointed at any `base_url` (Ollama, llama.cpp server, vLLM, OpenAI).
429, 5xx, timeouts, connection errors and malformed answers are retried a bounded number of
times by the project's one `RetryPolicy` (`strata.core.retry`: jittered doubling waits, a
server's Retry-After honoured up to 30 s), and every failure is translated into
`strata.core.errors.ModelError` subclasses. The SDK's own retries are off (`max_retries=0`):
its waits cannot be injected (tests would really sleep), it does not retry a malformed answer,
and two retry layers would multiply the attempts. No other module imports `openai`, and this
one only when a client is first used (`load_sdk` warms it up): importing the SDK takes about
a second (its types are hundreds of pydantic models), which start-up must not wait for.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from strata.bot.tls import shared_tls
from strata.core.errors import (
    ModelBadResponseError,
    ModelError,
    ModelRateLimitedError,
    ModelRequestError,
    ModelUnavailableError,
)
from strata.core.retry import RetryPolicy, Sleep
from strata.core.types import ChatMessage, Completion, ToolCall, ToolSpec, Usage

log = logging.getLogger(__name__)

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


def _policy(max_retries: int, backoff: float, sleep: Sleep) -> RetryPolicy:
    return RetryPolicy(retryable=_retryable, what="model call", attempts=max_retries + 1,
                       base=backoff, cap=MAX_BACKOFF, retry_after=_retry_after,
                       retry_after_cap=MAX_RETRY_AFTER, jitter=True, sleep=sleep)


async def _retried(policy: RetryPolicy, what: str, call: Callable[[], Awaitable[T]]) -> T:
    """`call` under `policy`; its last failure translated into a `ModelError`."""
    try:
        return await policy.call(call)
    except Exception as exc:
        raise translate(exc, what) from exc


class _Client:
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


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    if not raw:
        return ()
    return tuple(
        ToolCall(
            id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "{}"
        )
        for i, c in enumerate(raw)
    )


class OpenAIChatModel:
    """`strata.core.ports.ChatModel` over an OpenAI-compatible `/chat/completions`."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_tokens: int = 1024,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self._client = _Client(base_url, api_key, timeout)
        self._retry = _policy(max_retries, backoff, sleep)
        self._schemas = True  # False once the endpoint refused a json_schema response_format

    async def close(self) -> None:
        await self._client.close()

    def _request(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[ToolSpec],
        model: str | None,
        max_tokens: int | None,
    ) -> dict[str, Any]:
        # The messages and tools go in `extra_body`, which the SDK sends as given. As typed
        # parameters the SDK walks them against its TypedDict annotations (hundreds of Python
        # calls per message, copying the body unchanged): with a full history (up to 400
        # rows) that walk was about half of a turn's CPU, on the event loop every turn shares.
        # `messages` must still be passed; the empty list is overridden by `extra_body`.
        body: dict[str, Any] = {"messages": [m.to_api() for m in messages]}
        if tools:
            body["tools"] = [t.to_api() for t in tools]
        return {
            "model": model or self.model,
            "messages": [],
            "max_tokens": max_tokens or self.max_tokens,
            "extra_body": body,
        }

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> Completion:
        """One answer. With `schema`, JSON of that shape (`response_format` json_schema:
        llama.cpp, Ollama, vLLM and OpenAI constrain the output to it), sampled greedily (a
        default 0.8 makes a small model stray); the caller still validates it."""
        req = self._request(messages, tools, model, max_tokens)
        if schema is not None:
            req["response_format"], req["temperature"] = self._format(schema), 0.0
        try:
            return await self._complete(req)
        except ModelRequestError:
            if schema is None or not self._schemas:
                raise
            # Perhaps the endpoint refuses schemas (an older server): if plain JSON mode
            # works, use it from now on (the caller's validation keeps junk out as before);
            # if it fails too, the schema was not the problem and that error is raised.
            answer = await self._complete({**req, "response_format": {"type": "json_object"}})
            log.warning("the chat endpoint refused a JSON schema; asking for plain JSON")
            self._schemas = False
            return answer

    def _format(self, schema: type[BaseModel]) -> dict[str, Any]:
        if not self._schemas:
            return {"type": "json_object"}
        return {"type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()}}

    async def _complete(self, req: dict[str, Any]) -> Completion:
        async def call() -> Completion:
            resp = await self._client.sdk.chat.completions.create(**req)
            if not getattr(resp, "choices", None):
                raise ModelBadResponseError("chat model: answer has no choices")
            choice = resp.choices[0]
            text = choice.message.content or ""
            calls = _tool_calls(choice.message.tool_calls)
            if not text.strip() and not calls:
                raise ModelBadResponseError("chat model: empty answer")
            usage = Usage()
            if resp.usage is not None:
                usage = Usage(resp.usage.prompt_tokens or 0, resp.usage.completion_tokens or 0)
            return Completion(text, calls, usage, choice.finish_reason)

        return await _retried(self._retry, "chat model", call)

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str | Completion]:
        """Yield text deltas and finally the whole `Completion`.

        Retries happen only before the first delta; a stream that breaks later raises, and the
        caller keeps what it already showed.
        """
        req = self._request(messages, tools, model, max_tokens)
        req["stream"] = True
        req["stream_options"] = {"include_usage": True}
        stream = await _retried(
            self._retry, "chat model", lambda: self._client.sdk.chat.completions.create(**req)
        )
        parts: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage = Usage()
        finish: str | None = None
        try:
            async for chunk in stream:
                if getattr(chunk, "usage", None) is not None:
                    usage = Usage(
                        chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0
                    )
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                finish = choice.finish_reason or finish
                delta = choice.delta
                if delta.content:
                    parts.append(delta.content)
                    yield delta.content
                for tc in delta.tool_calls or ():
                    slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    if tc.id:
                        slot["id"] = tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
        except Exception as exc:
            raise translate(exc, "chat model (stream)") from exc
        tool_calls = tuple(
            ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"] or "{}")
            for i, s in sorted(calls.items())
        )
        text = "".join(parts)
        if not text.strip() and not tool_calls:
            raise ModelBadResponseError("chat model: empty answer")
        yield Completion(text, tool_calls, usage, finish)

    async def list_models(self) -> list[str]:
        async def call() -> list[str]:
            page = await self._client.sdk.models.list()
            return [m.id for m in page.data]

        return await _retried(self._retry, "chat endpoint", call)


def usable_vector(raw: Sequence[float] | npt.NDArray[np.floating], dim: int,
                  ) -> npt.NDArray[np.float32] | None:
    """`raw` as an L2-normalised float32 vector, or None when it is no usable embedding.

    Some servers answer text without word pieces they know (`*`, other scripts) with an all-zero
    or NaN vector; stored, such a vector has no cosine (sqlite-vec gives NULL) and matches
    nothing. A vector of the wrong length cannot go into the index at all.
    """
    vec = np.asarray(raw, dtype=np.float64)
    if vec.shape != (dim,) or not np.all(np.isfinite(vec)):
        return None
    norm = float(np.linalg.norm(vec))
    if not np.isfinite(norm) or norm < 1e-12:
        return None
    return (vec / norm).astype(np.float32)


class OpenAIEmbedder:
    """`strata.core.ports.Embedder` over an OpenAI-compatible `/embeddings`."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        dim: int,
        api_key: str = "",
        timeout: float = 30.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        batch_size: int = 64,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self._dim = dim
        self.batch_size = batch_size
        self._client = _Client(base_url, api_key, timeout)
        self._retry = _policy(max_retries, backoff, sleep)

    @property
    def dim(self) -> int:
        return self._dim

    async def close(self) -> None:
        await self._client.close()

    async def embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32] | None]:
        out: list[npt.NDArray[np.float32] | None] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            out += await _retried(
                self._retry, "embedding model",
                lambda b=batch: self._embed_batch(b),  # type: ignore[misc]
            )
        return out

    async def _embed_batch(self, batch: list[str]) -> list[npt.NDArray[np.float32] | None]:
        not_embeddings = ModelBadResponseError(
            f"embedding model: the embeddings endpoint at {self.base_url} answered with "
            "something that is not JSON embeddings (a web page?); check embed.base_url, "
            "which usually ends in /v1"
        )
        try:
            resp = await self._client.sdk.embeddings.create(model=self.model, input=batch)
        except AttributeError as exc:
            # The SDK hands a non-JSON body (a web page, a proxy's login form) on as a plain
            # string, and its base64 decoding then fails reading `.data` off it.
            raise not_embeddings from exc
        if not isinstance(getattr(resp, "data", None), list):
            raise not_embeddings
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise ModelBadResponseError(
                f"embedding model: {len(data)} vectors for {len(batch)} texts"
            )
        lengths = {len(d.embedding) for d in data}
        if self._dim not in lengths and len(lengths) == 1:
            # Every vector has the same other length: the configuration is wrong, not a text.
            raise ModelRequestError(
                f"embedding model {self.model} returns {lengths.pop()} dimensions but "
                f"{self._dim} are configured (embed.dim / STRATA_EMBED_DIM)"
            )
        vecs = [usable_vector(d.embedding, self._dim) for d in data]
        rejected = sum(v is None for v in vecs)
        if rejected:
            log.warning("embedding model %s: %d of %d vectors unusable (zero, NaN/inf or wrong"
                        " length); those texts are kept without a vector",
                        self.model, rejected, len(vecs))
        return vecs
