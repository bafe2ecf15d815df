"""The one OpenAI-compatible client: chat (streaming and not) and embeddings.

Wraps `openai.AsyncOpenAI` pointed at any `base_url` (Ollama, llama.cpp server, vLLM, OpenAI)
through `strata.bot.llm_sdk`, which loads the SDK on first use, retries a failed call a bounded
number of times by the project's one `RetryPolicy` and translates every failure into
`strata.core.errors.ModelError` subclasses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from strata.bot.llm_sdk import Client, policy, retried, translate
from strata.core.errors import ModelBadResponseError, ModelRequestError
from strata.core.retry import Sleep
from strata.core.types import ChatMessage, Completion, ToolCall, ToolSpec, Usage

log = logging.getLogger(__name__)


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    if not raw:
        return ()
    return tuple(
        ToolCall(
            id=c.id or f"call_{i}", name=c.function.name, arguments=c.function.arguments or "{}"
        )
        for i, c in enumerate(raw)
    )


class _StreamedAnswer:
    """A streamed answer put together from its chunks: the text, the tool calls (their name
    and arguments arrive in pieces, by index), the usage and why it finished."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.usage = Usage()
        self.finish: str | None = None

    def add(self, chunk: Any) -> str:
        """Take in one chunk; its new text ("" when none)."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
        if not chunk.choices:
            return ""
        choice = chunk.choices[0]
        self.finish = choice.finish_reason or self.finish
        delta = choice.delta
        for tc in delta.tool_calls or ():
            slot = self.calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
            if tc.id:
                slot["id"] = tc.id
            if tc.function is not None:
                slot["name"] += tc.function.name or ""
                slot["arguments"] += tc.function.arguments or ""
        if delta.content:
            self.parts.append(delta.content)
        return delta.content or ""

    def completion(self) -> Completion:
        tool_calls = tuple(
            ToolCall(id=s["id"] or f"call_{i}", name=s["name"], arguments=s["arguments"] or "{}")
            for i, s in sorted(self.calls.items())
        )
        text = "".join(self.parts)
        if not text.strip() and not tool_calls:
            raise ModelBadResponseError("chat model: empty answer")
        return Completion(text, tool_calls, self.usage, self.finish)


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
        self._client = Client(base_url, api_key, timeout)
        self._retry = policy(max_retries, backoff, sleep)
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

        return await retried(self._retry, "chat model", call)

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
        stream = await retried(
            self._retry, "chat model", lambda: self._client.sdk.chat.completions.create(**req)
        )
        answer = _StreamedAnswer()
        try:
            async for chunk in stream:
                delta = answer.add(chunk)
                if delta:
                    yield delta
        except Exception as exc:
            raise translate(exc, "chat model (stream)") from exc
        yield answer.completion()

    async def list_models(self) -> list[str]:
        async def call() -> list[str]:
            page = await self._client.sdk.models.list()
            return [m.id for m in page.data]

        return await retried(self._retry, "chat endpoint", call)


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
        self._client = Client(base_url, api_key, timeout)
        self._retry = policy(max_retries, backoff, sleep)

    @property
    def dim(self) -> int:
        return self._dim

    async def close(self) -> None:
        await self._client.close()

    async def embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32] | None]:
        out: list[npt.NDArray[np.float32] | None] = []
        for start in range(0, len(texts), self.batch_size):
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            out += await retried(
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
