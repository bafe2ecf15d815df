"""The one budgeted path to the model: a `ChatModel` that counts every call's tokens and
refuses calls once a budget is spent.

Chat turns, background job turns, compaction, roll-up summaries, episode summaries and fact
extraction all reach the model through a `MeteredChat` wired in `strata.app.compose` (or built by a
job run around the same inner model). After each answer it hands the tokens used (the endpoint's
`usage`, or an estimate from the text when the endpoint reports none) to `charge`; before each
call it asks `remaining` and raises `BudgetExhaustedError` (a retryable `ModelError`, so callers
store nothing from the refused call and retry later) when nothing is left.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from pydantic import BaseModel

from strata.core.errors import BudgetExhaustedError
from strata.core.ports import ChatModel
from strata.core.tokens import count_tokens
from strata.core.types import ChatMessage, Completion, ToolSpec

Charge = Callable[[int], Awaitable[None]]


def tokens_used(messages: Sequence[ChatMessage], completion: Completion) -> int:
    """What the call cost: the endpoint's count, else an estimate from the text."""
    if completion.usage.total:
        return completion.usage.total
    return sum(count_tokens(m.content or "") for m in messages) + count_tokens(completion.text)


class MeteredChat:
    """`inner` with every call charged, and refused when `remaining()` is 0 (None: no cap)."""

    def __init__(self, inner: ChatModel, charge: Charge,
                 remaining: Callable[[], int] | None = None) -> None:
        self.inner = inner
        self.charge = charge
        self.remaining = remaining

    def _check(self) -> None:
        if self.remaining is not None and self.remaining() <= 0:
            raise BudgetExhaustedError("the token budget of this run is used up")

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        max_tokens: int | None = None,
        schema: type[BaseModel] | None = None,
    ) -> Completion:
        self._check()
        if self.remaining is not None:
            left = self.remaining()
            max_tokens = left if max_tokens is None else min(max_tokens, left)
        completion = await self.inner.complete(messages, tools=tools, model=model,
                                               max_tokens=max_tokens, schema=schema)
        await self.charge(tokens_used(messages, completion))
        return completion

    async def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
        max_tokens: int | None = None,
    ) -> AsyncIterator[str | Completion]:
        self._check()
        async for part in self.inner.stream(messages, tools=tools, model=model,
                                            max_tokens=max_tokens):
            if isinstance(part, Completion):
                await self.charge(tokens_used(messages, part))
            yield part
