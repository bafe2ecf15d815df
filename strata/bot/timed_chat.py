"""A `ChatModel` that times each call for the operators' metrics: beside the model client it
wraps (`strata.bot.llm`), wired around it once by the composition root (`strata.app.compose`),
so every turn's model call is timed without the turn knowing.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from strata.bot.metrics import Metrics
from strata.core.ports import ChatModel
from strata.core.types import ChatMessage, Completion, ToolSpec


@dataclass
class TimedChat:
    """A `ChatModel` timing each call (a stream until its last part) and counting failures;
    the error itself passes through untouched."""

    inner: ChatModel
    metrics: Metrics

    async def complete(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                       model: str | None = None, max_tokens: int | None = None,
                       schema: type[BaseModel] | None = None) -> Completion:
        started, ok = time.perf_counter(), False
        try:
            done = await self.inner.complete(messages, tools=tools, model=model,
                                             max_tokens=max_tokens, schema=schema)
            ok = True
            return done
        finally:
            self._observe(started, ok)

    async def stream(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     model: str | None = None, max_tokens: int | None = None,
                     ) -> AsyncIterator[str | Completion]:
        started, ok = time.perf_counter(), False
        try:
            async for part in self.inner.stream(messages, tools=tools, model=model,
                                                max_tokens=max_tokens):
                yield part
            ok = True
        finally:
            self._observe(started, ok)

    def _observe(self, started: float, ok: bool) -> None:
        outcome = "ok" if ok else "error"
        self.metrics.model_seconds.labels(outcome).observe(time.perf_counter() - started)
        if not ok:
            self.metrics.model_failures.inc()

    def __getattr__(self, name: str) -> Any:
        # Everything else (list_models, close, the model name) is the wrapped model's.
        return getattr(self.inner, name)
