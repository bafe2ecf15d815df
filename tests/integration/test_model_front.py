"""The embedded chat model's front (`strata.bot.model_front`): the model starts on the first
request that needs it, once; a health check's model list never starts it; a start that fails
answers every request with the reason. The upstream is the fake OpenAI server over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from strata.bot.llm import OpenAIChatModel
from strata.bot.model_front import ModelFront
from strata.core.errors import ModelError
from strata.core.types import ChatMessage
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture
def starts() -> list[str]:
    return []


@pytest.fixture
def front(fake_openai: FakeOpenAI, starts: list[str]) -> Iterator[ModelFront]:
    def start() -> str:
        starts.append("started")
        return fake_openai.base_url.removesuffix("/v1")

    made = ModelFront(start, "tiny-model")
    yield made
    made.close()


def model_at(front: ModelFront) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=front.base_url, model="tiny-model", api_key="none",
                           timeout=10, max_retries=0)


async def test_the_model_list_does_not_start_the_model(front: ModelFront,
                                                       starts: list[str]) -> None:
    model = model_at(front)
    try:
        assert await model.list_models() == ["tiny-model"]
    finally:
        await model.close()
    assert starts == [] and not front.started


async def test_the_first_request_starts_it_once_and_answers_stream(
        front: ModelFront, fake_openai: FakeOpenAI, starts: list[str]) -> None:
    fake_openai.reply("Hello there.", "Streamed words.", "Third.")
    model = model_at(front)
    try:
        messages = [ChatMessage(role="user", content="hi")]
        first, second = await asyncio.gather(model.complete(messages),
                                             model.complete(messages))
        assert {first.text, second.text} == {"Hello there.", "Streamed words."}
        parts = [part async for part in model.stream(messages)]
        assert "".join(p for p in parts if isinstance(p, str)) == "Third."
    finally:
        await model.close()
    assert starts == ["started"] and front.started


async def test_a_failed_start_answers_with_the_reason_and_is_not_retried() -> None:
    tries: list[int] = []

    def start() -> str:
        tries.append(1)
        raise ValueError("the weights do not match their pinned hash")

    front = ModelFront(start, "tiny-model")
    model = model_at(front)
    try:
        for _ in range(2):
            with pytest.raises(ModelError, match="503"):
                await model.complete([ChatMessage(role="user", content="hi")])
        async with httpx.AsyncClient() as http:
            answer = await http.post(front.base_url + "/chat/completions", json={})
        assert answer.status_code == 503 and "pinned hash" in answer.text
    finally:
        await model.close()
        front.close()
    assert tries == [1]


async def test_a_server_that_went_away_is_an_error_answer_not_a_traceback(
        capfd: pytest.CaptureFixture[str]) -> None:
    front = ModelFront(lambda: "http://127.0.0.1:9", "tiny-model")  # nothing listens there
    model = model_at(front)
    try:
        with pytest.raises(ModelError, match="502"):
            await model.complete([ChatMessage(role="user", content="hi")])
    finally:
        await model.close()
        front.close()
    assert "Traceback" not in capfd.readouterr().err
