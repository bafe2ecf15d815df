"""MeteredChat: every call charged (the endpoint's usage, else an estimate), and refused once
the budget is spent, before the inner model is asked."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
from pydantic import BaseModel

from strata.bot.metered_chat import MeteredChat, tokens_used
from strata.core.errors import BudgetExhaustedError, ModelError
from strata.core.types import ChatMessage, Completion, ToolSpec, Usage

ASK = [ChatMessage("user", "x" * 40)]  # about 10 tokens


class Scripted:
    """A ChatModel that answers from a list and counts the calls that reach it."""

    def __init__(self, *answers: Completion) -> None:
        self.answers = list(answers)
        self.calls: list[int | None] = []

    async def complete(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                       model: str | None = None, max_tokens: int | None = None,
                       schema: type[BaseModel] | None = None) -> Completion:
        self.calls.append(max_tokens)
        return self.answers.pop(0)

    async def stream(self, messages: Sequence[ChatMessage], *, tools: Sequence[ToolSpec] = (),
                     model: str | None = None,
                     max_tokens: int | None = None) -> AsyncIterator[str | Completion]:
        self.calls.append(max_tokens)
        yield "par"
        yield self.answers.pop(0)


def test_usage_or_an_estimate() -> None:
    reported = Completion("ok", usage=Usage(prompt_tokens=30, completion_tokens=5))
    assert tokens_used(ASK, reported) == 35
    assert tokens_used(ASK, Completion("y" * 8)) == 10 + 2
    # A part the endpoint does not report is estimated, the other kept as reported.
    assert tokens_used(ASK, Completion("y" * 8, usage=Usage(prompt_tokens=30))) == 30 + 2
    assert tokens_used(ASK, Completion("y" * 8, usage=Usage(completion_tokens=5))) == 10 + 5


def test_calls_are_charged_and_refused_when_the_budget_is_spent() -> None:
    spent: list[int] = []
    budget = 40

    async def charge(tokens: int) -> None:
        spent.append(tokens)

    inner = Scripted(Completion("a", usage=Usage(25, 20)), Completion("b"))
    chat = MeteredChat(inner, charge, lambda: budget - sum(spent))

    async def scenario() -> None:
        await chat.complete(ASK, max_tokens=100)
        with pytest.raises(BudgetExhaustedError) as refused:
            await chat.complete(ASK)
        assert isinstance(refused.value, ModelError) and refused.value.retryable

    asyncio.run(scenario())
    assert spent == [45]
    assert inner.calls == [40]  # max_tokens capped at what was left; the refused call never left


def test_a_stream_is_charged_on_its_final_completion() -> None:
    spent: list[int] = []

    async def charge(tokens: int) -> None:
        spent.append(tokens)

    chat = MeteredChat(Scripted(Completion("done", usage=Usage(7, 3))), charge)

    async def scenario() -> list[str | Completion]:
        return [part async for part in chat.stream(ASK)]

    parts = asyncio.run(scenario())
    assert parts[0] == "par" and spent == [10]
