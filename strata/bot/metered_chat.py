"""The one budgeted path to the model: a `ChatModel` that counts every call's tokens and
refuses calls once a budget is spent.

Chat turns, background job turns, compaction, roll-up summaries, episode summaries and fact
extraction all reach the model through a `MeteredChat`: `metered_for_owner` (wired once by
`strata.app.compose`) charges calls made outside a job run to the memory owner, and a job run
builds one around the same inner model for its budget. After each answer it hands the tokens
used (the endpoint's `usage`, or an estimate from the text for what the endpoint does not
report, and for a stream cut off after it began) to `charge`; before each call it asks
`remaining` and raises `BudgetExhaustedError` (a retryable `ModelError`, so callers store
nothing from the refused call and retry later) when nothing is left.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from pydantic import BaseModel

from strata.bot.metrics import Metrics
from strata.core.errors import BudgetExhaustedError
from strata.core.ports import ChatModel, Clock
from strata.core.tokens import count_tokens
from strata.core.types import ChatMessage, Completion, ToolSpec
from strata.memory.coordination.jobruns import JobRunRepo

Charge = Callable[[int], Awaitable[None]]
# The model for calls made after a turn, by purpose: `metered(purpose)(owner_id)` charges its
# tokens to that memory owner under that purpose (`metered_for_owner`).
OwnerModel = Callable[[int], ChatModel]
Metered = Callable[[str], OwnerModel]


def tokens_used(messages: Sequence[ChatMessage], completion: Completion) -> int:
    """What the call cost: the endpoint's counts, each part it does not report (0) estimated
    from the text."""
    used = completion.usage
    read = used.prompt_tokens or sum(count_tokens(m.content or "") for m in messages)
    return read + (used.completion_tokens or count_tokens(completion.text))


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
        shown: list[str] = []
        charged = False
        try:
            async for part in self.inner.stream(messages, tools=tools, model=model,
                                                max_tokens=max_tokens):
                if isinstance(part, Completion):
                    charged = True
                    await self.charge(tokens_used(messages, part))
                else:
                    shown.append(part)
                yield part
        finally:
            if shown and not charged:
                # Cut off after it began (the endpoint broke, the caller stopped reading): the
                # model read the prompt and wrote what was shown, so that much is charged.
                await self.charge(tokens_used(messages, Completion("".join(shown))))


def metered_for_owner(chat: ChatModel, runs: JobRunRepo, clock: Clock,
                      purpose: str, metrics: Metrics | None = None) -> OwnerModel:
    """The model for calls made after a turn, outside any job run: each call's tokens are
    recorded for the memory owner under `purpose` (shown by `strata jobs status`)."""

    def for_owner(owner_id: int) -> ChatModel:
        async def charge(tokens: int) -> None:
            if metrics is not None:
                metrics.charge(purpose, tokens)
            await runs.record_usage(purpose, owner_id, clock.now(), tokens)

        return MeteredChat(chat, charge)

    return for_owner
