"""A fake OpenAI-compatible server for tests: real HTTP on 127.0.0.1, random port.

Serves `/v1/models`, `/v1/chat/completions` (plain and SSE streaming, tool calls) and
`/v1/embeddings` (float or base64). Embeddings are deterministic hashed bags of words,
L2-normalised, so texts that share words are near. Replies come from a queue of scripted
answers, then from an optional `responder(request) -> Reply | None`, then a default echo.
Faults (429, 500, slow, hang for good, malformed JSON, empty answer, dropped connection) are
injected per request with `fail_next`. `vectors` picks what `/v1/embeddings` returns: "hashed" (the
default), or a broken embedder's "zero", "nan", "inf" or "short" (one dimension too few) vector
for texts without a word character (like `*`, or every text with "all"). Every request body is
recorded in `requests`, with its size in bytes in `sizes`. For latency experiments:
`latency` (seconds before each chat answer), `chunk_delay` (seconds between streamed chunks),
`slots` (at most this many chat answers at once, like a local server with one GPU; the rest
queue) and `embed_fn` (text, dim -> vector; default `hashed_embedding`). `served` records each
chat answer's (last user text, arrived, started, finished) on the `time.monotonic()` clock.
`n_ctx` (None by default) plays a llama.cpp server's context window: `/props` reports it, and a
chat request whose estimated size (four characters a token, messages and tools, plus its
`max_tokens`) is over it is refused with llama.cpp's 400 `exceed_context_size_error`.
`report_usage` (True by default) says whether chat answers carry `usage` (an endpoint that
reports none: False). `tokenizer` (None by default: `POST /tokenize` answers 404, as an
endpoint without it does) plays llama.cpp's `/tokenize`: `{"content": text}` answers
`{"tokens": tokenizer(text)}`, and the `n_ctx` check counts with it.
`close_gate()` holds every chat answer until `open_gate()` (`gated` lists the last user texts
of the requests waiting there): a test freezes turns at the model call this way.

Run standalone (for trying the CLI by hand): `python -m tests.fakes.openai_server --port 8000`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

_WORD = re.compile(r"\w+")


def hashed_embedding(text: str, dim: int) -> np.ndarray:
    """Bag of words hashed into `dim` signed buckets, L2-normalised (float32)."""
    vec = np.zeros(dim, dtype=np.float32)
    for word in _WORD.findall(text.lower()):
        digest = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
        vec[digest % dim] += 1.0 if (digest >> 63) & 1 else -1.0
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:
        vec[0] = 1.0
        return vec
    return vec / norm


@dataclass
class Reply:
    """A scripted chat answer: text and/or tool calls (name, JSON arguments)."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


@dataclass
class Fault:
    kind: str  # "status", "slow", "hang", "malformed", "empty", "disconnect"
    status: int = 500
    seconds: float = 0.0
    retry_after: float | None = None
    path: str = ""  # "" = any endpoint, else "chat" / "embeddings" / "models"


Responder = Callable[[dict[str, Any]], Reply | str | None]


def last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user" and isinstance(msg.get("content"), str):
            return str(msg["content"])
    return ""


class FakeOpenAI:
    """The server. Use as a context manager or call `start()` / `stop()`."""

    def __init__(
        self,
        *,
        dim: int = 768,
        model: str = "fake-chat",
        embed_model: str = "fake-embed",
        port: int = 0,
    ) -> None:
        self.dim = dim
        self.model = model
        self.embed_model = embed_model
        self.port = port
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.replies: deque[Reply | str] = deque()
        self.faults: deque[Fault] = deque()
        self.responder: Responder | None = None
        self.vectors = "hashed"
        self.broken_texts = "wordless"  # or "all": which texts get the broken vector
        self.sizes: list[tuple[str, int]] = []
        self.latency = 0.0
        self.chunk_delay = 0.0
        self.slots: int | None = None
        self.n_ctx: int | None = None
        self.report_usage = True
        self.tokenizer: Callable[[str], list[int]] | None = None
        self.served: list[tuple[str, float, float, float]] = []
        self._slot_sem: asyncio.Semaphore | None = None
        self._slot_size = 0
        self.embed_fn: Callable[[str, int], np.ndarray] = hashed_embedding
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._closing: asyncio.Event | None = None
        self._gate: asyncio.Event | None = None  # set: open
        self._gated: list[str] = []

    # -- scripting ---------------------------------------------------------------------------

    def reply(self, *answers: Reply | str) -> None:
        """Queue answers for the next chat requests, in order."""
        with self._lock:
            self.replies.extend(answers)

    def fail_next(
        self,
        kind: str = "status",
        *,
        status: int = 500,
        seconds: float = 0.0,
        retry_after: float | None = None,
        times: int = 1,
        path: str = "",
    ) -> None:
        """Make the next `times` requests (to `path`, or any) fail in the given way."""
        with self._lock:
            for _ in range(times):
                self.faults.append(Fault(kind, status, seconds, retry_after, path))

    def close_gate(self) -> None:
        """Hold every chat answer from now on until `open_gate()`."""
        assert self._loop is not None and self._gate is not None
        self._loop.call_soon_threadsafe(self._gate.clear)

    def open_gate(self) -> None:
        assert self._loop is not None and self._gate is not None
        self._loop.call_soon_threadsafe(self._gate.set)

    @property
    def gated(self) -> list[str]:
        """The last user texts of the chat requests waiting at the closed gate."""
        with self._lock:
            return list(self._gated)

    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [body for path, body in self.requests if path == "chat"]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.sizes.clear()
            self.vectors, self.broken_texts = "hashed", "wordless"
            self.replies.clear()
            self.faults.clear()
            self.served.clear()
        if self._loop is not None and self._gate is not None:
            self._loop.call_soon_threadsafe(self._gate.set)
        self.latency = self.chunk_delay = 0.0
        self.slots = None
        self.n_ctx = None
        self.report_usage = True
        self.tokenizer = None
        self.embed_fn = hashed_embedding

    def _vector(self, text: str) -> list[float]:
        vec = np.asarray(self.embed_fn(text, self.dim), dtype=np.float32)
        if self.vectors == "hashed" or (
            self.broken_texts == "wordless" and _WORD.search(text) is not None
        ):
            return [float(x) for x in vec]
        if self.vectors == "zero":
            return [0.0] * self.dim
        if self.vectors == "short":
            return [float(x) for x in vec[:-1]]
        bad = {"nan": float("nan"), "inf": float("inf")}[self.vectors]
        return [bad] + [float(x) for x in vec[1:]]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake OpenAI server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        loop = self._loop
        asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._closing = asyncio.Event()
        self._gate = asyncio.Event()
        self._gate.set()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/props", self._props)
        app.router.add_post("/tokenize", self._tokenize)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        self._runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", self.port)
        loop.run_until_complete(site.start())
        server = site._server
        assert isinstance(server, asyncio.Server) and server.sockets
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        loop.run_forever()
        loop.close()

    async def _shutdown(self) -> None:
        if self._closing is not None:
            self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    # -- handlers ----------------------------------------------------------------------------

    def _take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self.faults):
                if fault.path in ("", path):
                    del self.faults[i]
                    return fault
        return None

    async def _apply_fault(self, path: str, request: web.Request) -> web.StreamResponse | None:
        fault = self._take_fault(path)
        if fault is None:
            return None
        if fault.kind == "hang":
            # Accept the request and never answer (a wedged model server): the handler waits
            # until the server stops; the client gives up by its own timeout or deadline.
            assert self._closing is not None
            await self._closing.wait()
            return web.Response(status=503)
        if fault.kind == "slow":
            assert self._closing is not None
            try:  # wake early when the server stops, so shutdown never waits on a slow fault
                await asyncio.wait_for(self._closing.wait(), fault.seconds)
            except TimeoutError:
                return None
            return web.Response(status=503)
        if fault.kind == "status":
            headers = {}
            if fault.retry_after is not None:
                headers["retry-after"] = str(fault.retry_after)
            return web.json_response(
                {
                    "error": {
                        "message": f"injected {fault.status}",
                        "type": "fake",
                        "code": fault.status,
                    }
                },
                status=fault.status,
                headers=headers,
            )
        if fault.kind == "malformed":
            return web.Response(text='{"id": "x", "choices": [', content_type="application/json")
        if fault.kind == "empty":
            return web.json_response(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": self.model,
                    "choices": [],
                }
            )
        if fault.kind == "disconnect":
            assert request.transport is not None
            request.transport.close()
            return web.Response(status=500)
        raise ValueError(f"unknown fault {fault.kind}")

    async def _models(self, request: web.Request) -> web.StreamResponse:
        with self._lock:
            self.requests.append(("models", {}))
        fault = await self._apply_fault("models", request)
        if fault is not None:
            return fault
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                    for m in (self.model, self.embed_model)
                ],
            }
        )

    async def _props(self, request: web.Request) -> web.StreamResponse:
        if self.n_ctx is None:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        return web.json_response({"default_generation_settings": {"n_ctx": self.n_ctx},
                                  "total_slots": 1})

    async def _tokenize(self, request: web.Request) -> web.StreamResponse:
        body = await self._record("tokenize", request)
        if self.tokenizer is None:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        return web.json_response({"tokens": self.tokenizer(str(body.get("content") or ""))})

    def request_tokens(self, body: dict[str, Any]) -> int:
        """A chat request's size as the fake counts it: the tokens (ceil(characters / 4), or
        its `tokenizer`'s count when it has one) of each message's content and tool calls, 8
        per message, the tools' JSON, and the reply's max_tokens."""
        tokenizer = self.tokenizer

        def count(text: str) -> int:
            return len(tokenizer(text)) if tokenizer is not None else -(-len(text) // 4)

        total = 0
        for m in body.get("messages", []):
            total += count(m.get("content") or "") + 8
            total += count(json.dumps(m.get("tool_calls") or ""))
        if body.get("tools"):
            total += count(json.dumps(body["tools"]))
        return total + int(body.get("max_tokens") or 0)

    async def _record(self, path: str, request: web.Request) -> dict[str, Any]:
        raw = await request.read()
        body: dict[str, Any] = json.loads(raw)
        with self._lock:
            self.requests.append((path, body))
            self.sizes.append((path, len(raw)))
        return body

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await self._record("embeddings", request)
        fault = await self._apply_fault("embeddings", request)
        if fault is not None:
            return fault
        if body.get("model") != self.embed_model:
            # As Ollama does: a model the server lacks is a 404 naming it.
            return web.json_response(
                {"error": {"message": f"model {body.get('model')!r} not found, try pulling it",
                           "type": "not_found_error"}}, status=404)
        inputs = body["input"]
        if isinstance(inputs, str):
            inputs = [inputs]
        b64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(inputs):
            vec = self._vector(str(text))
            emb: Any = (
                base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode()
                if b64
                else vec
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(len(str(t).split()) for t in inputs)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    def _answer(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            queued = self.replies.popleft() if self.replies else None
        if queued is None and self.responder is not None:
            queued = self.responder(body)
        if queued is None:
            queued = f"You said: {last_user_text(body)[:200]}"
        return Reply(text=queued) if isinstance(queued, str) else queued

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if self.slots is None:
            return await self._chat_now(request, time.monotonic())
        if self._slot_sem is None or self._slot_size != self.slots:  # a new limit
            self._slot_sem, self._slot_size = asyncio.Semaphore(self.slots), self.slots
        arrived = time.monotonic()
        async with self._slot_sem:
            return await self._chat_now(request, arrived)

    async def _chat_now(self, request: web.Request, arrived: float) -> web.StreamResponse:
        started = time.monotonic()
        body = await self._record("chat", request)
        assert self._gate is not None
        if not self._gate.is_set():
            text = last_user_text(body)
            with self._lock:
                self._gated.append(text)
            try:
                await self._gate.wait()
            finally:
                with self._lock:
                    self._gated.remove(text)
        if self.n_ctx is not None and self.request_tokens(body) > self.n_ctx:
            return web.json_response({"error": {
                "code": 400, "type": "exceed_context_size_error", "n_ctx": self.n_ctx,
                "message": "request exceeds the available context size"}}, status=400)
        fault = await self._apply_fault("chat", request)
        if fault is not None:
            return fault
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        answer = self._answer(body)
        calls = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(answer.tool_calls)
        ]
        prompt_tokens = sum(len(str(m.get("content") or "")) // 4 for m in body["messages"])
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": len(answer.text) // 4 + 1,
            "total_tokens": prompt_tokens + len(answer.text) // 4 + 1,
        }
        finish = "tool_calls" if calls else "stop"
        created = int(time.time())
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
            if calls:
                message["tool_calls"] = calls
            self._served(body, arrived, started)
            return web.json_response(
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": created,
                    "model": body.get("model", self.model),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    **({"usage": usage} if self.report_usage else {}),
                }
            )
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        async def send(
            delta: dict[str, Any],
            finish_reason: str | None = None,
            extra: dict[str, Any] | None = None,
        ) -> None:
            chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model", self.model),
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if extra:
                chunk.update(extra)
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        for piece in re.findall(r"\S+\s*|\s+", answer.text):
            if self.chunk_delay > 0:
                await asyncio.sleep(self.chunk_delay)
            await send({"content": piece})
        for i, call in enumerate(calls):
            await send({"tool_calls": [{"index": i, **call}]})
        await send({}, finish)
        if self.report_usage and (body.get("stream_options") or {}).get("include_usage"):
            usage_chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.get("model", self.model),
                "choices": [],
                "usage": usage,
            }
            await resp.write(f"data: {json.dumps(usage_chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        self._served(body, arrived, started)
        return resp

    def _served(self, body: dict[str, Any], arrived: float, started: float) -> None:
        with self._lock:
            self.served.append((last_user_text(body), arrived, started, time.monotonic()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--dim", type=int, default=768)
    args = parser.parse_args()
    server = FakeOpenAI(dim=args.dim, port=args.port).start()
    print(f"fake OpenAI-compatible server on {server.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
