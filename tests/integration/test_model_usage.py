"""What a model call is charged, over real HTTP: the endpoint's reported `usage` when it
reports one (plain and streamed), the estimate when it reports none, and a stream cut off after
it began is still charged."""

from __future__ import annotations

import asyncio
from contextlib import aclosing

import pytest

from strata.bot.llm import OpenAIChatModel
from strata.bot.metered_chat import MeteredChat
from strata.core.types import ChatMessage, Completion
from tests.fakes.openai_server import FakeOpenAI

ASK = [ChatMessage("user", "x" * 40)]
ANSWER = "abcdefgh"
REPORTED = 40 // 4 + len(ANSWER) // 4 + 1  # the fake's usage: 10 read, 3 written
ESTIMATED = 40 // 4 + len(ANSWER) // 4  # four characters a token: 10 read, 2 written


def _metered(server: FakeOpenAI) -> tuple[OpenAIChatModel, MeteredChat, list[int]]:
    spent: list[int] = []

    async def charge(tokens: int) -> None:
        spent.append(tokens)

    model = OpenAIChatModel(base_url=server.base_url, model=server.model, max_retries=0)
    return model, MeteredChat(model, charge), spent


async def _streamed(chat: MeteredChat) -> list[str | Completion]:
    return [part async for part in chat.stream(ASK)]


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("reports", [True, False])
def test_the_reported_usage_is_charged_else_the_estimate(
        fake_openai: FakeOpenAI, streamed: bool, reports: bool) -> None:
    assert REPORTED != ESTIMATED  # else the test could not tell them apart
    fake_openai.report_usage = reports
    fake_openai.reply(ANSWER)
    model, chat, spent = _metered(fake_openai)

    async def scenario() -> Completion:
        try:
            if streamed:
                final = (await _streamed(chat))[-1]
                assert isinstance(final, Completion)
                return final
            return await chat.complete(ASK)
        finally:
            await model.close()

    answer = asyncio.run(scenario())
    assert answer.text == ANSWER
    assert answer.usage.total == (REPORTED if reports else 0)
    assert spent == [REPORTED if reports else ESTIMATED]
    if streamed:
        assert fake_openai.chat_requests()[0]["stream_options"] == {"include_usage": True}


def test_a_stream_the_caller_stops_reading_is_charged_for_what_it_showed(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("first second third")
    model, chat, spent = _metered(fake_openai)

    async def scenario() -> str:
        try:
            async with aclosing(chat.stream(ASK)) as parts:
                async for part in parts:
                    assert isinstance(part, str)
                    return part  # stops after the first piece of text
            raise AssertionError("the stream showed no text")
        finally:
            await model.close()

    shown = asyncio.run(scenario())
    assert shown == "first "
    assert spent == [40 // 4 + 2]  # the prompt and the shown text, estimated
