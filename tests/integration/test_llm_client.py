"""The OpenAI-compatible client against the fake server over real HTTP."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from pydantic import BaseModel

from strata.bot.llm import OpenAIChatModel, OpenAIEmbedder
from strata.core.errors import (
    ModelBadResponseError,
    ModelRateLimitedError,
    ModelRequestError,
    ModelUnavailableError,
)
from strata.core.types import ChatMessage, Completion, ToolSpec
from tests.fakes.openai_server import FakeOpenAI, Reply, hashed_embedding

MSGS = [ChatMessage("system", "be nice"), ChatMessage("user", "hello there")]
MSGS_SENT = [m.to_api() for m in MSGS]


def chat(fake: FakeOpenAI, retries: int = 0, timeout: float = 5.0) -> OpenAIChatModel:
    async def no_sleep(_: float) -> None:
        return None

    return OpenAIChatModel(base_url=fake.base_url, model=fake.model, api_key="k",
                           timeout=timeout, max_retries=retries, backoff=0, sleep=no_sleep)


async def test_complete(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("General Kenobi")
    out = await chat(fake_openai).complete(MSGS)
    assert out.text == "General Kenobi"
    assert fake_openai.chat_requests()[-1]["messages"][1]["content"] == "hello there"


async def test_stream_yields_deltas_then_completion(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("one two three")
    items = [i async for i in chat(fake_openai).stream(MSGS)]
    deltas = [i for i in items if isinstance(i, str)]
    assert len(deltas) >= 3 and "".join(deltas) == "one two three"
    assert isinstance(items[-1], Completion) and items[-1].text == "one two three"


@pytest.mark.parametrize("streaming", [False, True])
async def test_tool_calls(fake_openai: FakeOpenAI, streaming: bool) -> None:
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"at": "09:00", "text": "mum"})]))
    tools = [ToolSpec("set_reminder", "set one", {"type": "object", "properties": {}})]
    model = chat(fake_openai)
    if streaming:
        items = [i async for i in model.stream(MSGS, tools=tools)]
        out = items[-1]
        assert isinstance(out, Completion)
    else:
        out = await model.complete(MSGS, tools=tools)
    assert out.tool_calls[0].name == "set_reminder"
    assert '"mum"' in out.tool_calls[0].arguments
    assert fake_openai.chat_requests()[-1]["tools"][0]["function"]["name"] == "set_reminder"


async def test_429_then_success_is_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(status=429, retry_after=0)
    fake_openai.reply("after the storm")
    out = await chat(fake_openai, retries=2).complete(MSGS)
    assert out.text == "after the storm"
    assert len(fake_openai.chat_requests()) == 2


async def test_retry_after_is_honoured_capped_and_every_wait_is_the_injected_sleep(
        fake_openai: FakeOpenAI) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    model = OpenAIChatModel(base_url=fake_openai.base_url, model=fake_openai.model,
                            api_key="k", max_retries=3, backoff=0.01, sleep=sleep)
    fake_openai.fail_next(status=429, retry_after=7)
    fake_openai.fail_next(status=429, retry_after=900)  # past the 30 s cap
    fake_openai.fail_next(status=500)  # no Retry-After: the doubled (jittered) backoff
    fake_openai.reply("after the storm")
    assert (await model.complete(MSGS)).text == "after the storm"
    assert slept[:2] == [7.0, 30.0]
    assert 0.02 <= slept[2] <= 0.04 and len(slept) == 3


async def test_persistent_429_is_rate_limited_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(status=429, times=3)
    with pytest.raises(ModelRateLimitedError):
        await chat(fake_openai, retries=2).complete(MSGS)
    assert len(fake_openai.chat_requests()) == 3


async def test_500_is_unavailable(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(status=500)
    with pytest.raises(ModelUnavailableError):
        await chat(fake_openai).complete(MSGS)


async def test_400_is_not_retried(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next(status=400, times=3)
    with pytest.raises(ModelRequestError):
        await chat(fake_openai, retries=2).complete(MSGS)
    assert len(fake_openai.chat_requests()) == 1


@pytest.mark.parametrize("kind", ["malformed", "empty"])
async def test_garbage_is_bad_response(fake_openai: FakeOpenAI, kind: str) -> None:
    fake_openai.fail_next(kind)
    with pytest.raises(ModelBadResponseError):
        await chat(fake_openai).complete(MSGS)


async def test_slow_answer_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next("slow", seconds=2)
    with pytest.raises(ModelUnavailableError, match="timed out"):
        await chat(fake_openai, timeout=0.3).complete(MSGS)


async def test_dropped_connection_is_unavailable(fake_openai: FakeOpenAI) -> None:
    fake_openai.fail_next("disconnect")
    with pytest.raises(ModelUnavailableError):
        await chat(fake_openai).complete(MSGS)


async def test_nothing_listening_is_unavailable() -> None:
    model = OpenAIChatModel(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0)
    with pytest.raises(ModelUnavailableError, match="cannot connect"):
        await model.complete(MSGS)


async def test_embeddings_match_the_fake_and_are_normalised(fake_openai: FakeOpenAI) -> None:
    emb = OpenAIEmbedder(base_url=fake_openai.base_url, model=fake_openai.embed_model,
                         dim=fake_openai.dim, max_retries=0, batch_size=2)
    texts = ["my cat Miso", "", "the weather in Lyon"]
    vecs = np.stack([v for v in await emb.embed(texts) if v is not None])
    assert vecs.dtype == np.float32 and vecs.shape == (3, fake_openai.dim)
    np.testing.assert_allclose(vecs[0], hashed_embedding(texts[0], fake_openai.dim), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # the SDK asks for base64 by default; the fake answered it
    assert all(b.get("encoding_format") == "base64"
               for p, b in fake_openai.requests if p == "embeddings")


async def test_wrong_embedding_dimension_is_named(fake_openai: FakeOpenAI) -> None:
    emb = OpenAIEmbedder(base_url=fake_openai.base_url, model=fake_openai.embed_model,
                         dim=fake_openai.dim + 1, max_retries=0)
    with pytest.raises(ModelRequestError, match="dimensions"):
        await emb.embed(["x"])


@pytest.mark.parametrize("mode", ["zero", "nan", "inf", "short"])
async def test_unusable_vectors_are_rejected_one_by_one(fake_openai: FakeOpenAI,
                                                         mode: str) -> None:
    """A zero, NaN/inf or wrong-length vector for one text is None; the batch's other texts
    keep theirs."""
    fake_openai.vectors = mode
    emb = OpenAIEmbedder(base_url=fake_openai.base_url, model=fake_openai.embed_model,
                         dim=fake_openai.dim, max_retries=0)
    first, star, last = await emb.embed(["my cat Miso", "*", "the weather in Lyon"])
    assert star is None
    assert first is not None and last is not None
    np.testing.assert_allclose(first, hashed_embedding("my cat Miso", fake_openai.dim),
                               atol=1e-6)


def _history(n: int) -> list[ChatMessage]:
    return [ChatMessage("user" if i % 2 else "assistant", f"line {i} about the garden")
            for i in range(n)]


async def _client_calls(model: OpenAIChatModel, messages: list[ChatMessage],
                        tools: list[ToolSpec], streaming: bool) -> int:
    """Python function calls made on this thread (the client's side; the fake server runs its
    own thread) while one request is built, sent and answered."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event == "call":
            count += 1

    sys.setprofile(profile)
    try:
        if streaming:
            async for _ in model.stream(messages, tools=tools):
                pass
        else:
            await model.complete(messages, tools=tools)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("streaming", [False, True])
async def test_request_work_does_not_grow_with_the_sdk_type_walk(fake_openai: FakeOpenAI,
                                                                 streaming: bool) -> None:
    """The SDK walks every request parameter against its TypedDict annotations (hundreds of
    Python calls per message, all copying the body unchanged). A prompt carries up to 400
    history rows, so that walk cost about half of a turn's CPU on the event loop. The body
    goes out as it was built: a longer history costs only the messages' own encoding."""
    tools = [ToolSpec("set_reminder", "set one",
                      {"type": "object", "properties": {"at": {"type": "string"}}})]
    model = chat(fake_openai)
    await _client_calls(model, _history(2), tools, streaming)  # warm up (imports, pool)
    # The fewest of three tries: a busy machine only adds calls (more event-loop turns while
    # a large body waits on the socket), never removes them.
    short = min([await _client_calls(model, _history(10), tools, streaming) for _ in range(3)])
    long = min([await _client_calls(model, _history(410), tools, streaming) for _ in range(3)])
    sent = fake_openai.chat_requests()[-1]
    assert [m["content"] for m in sent["messages"]] == [m.content for m in _history(410)]
    assert sent["tools"][0]["function"]["parameters"]["properties"] == {"at": {"type": "string"}}
    # The SDK's walk was about 690 calls per message; what is left is the body's own encoding
    # and socket writes, a few calls per message at most.
    assert (long - short) / 400 < 50, f"{(long - short) / 400:.0f} Python calls per message"


async def test_an_endpoint_answering_html_is_named_honestly() -> None:
    """A URL pointing at a web page (a proxy's login page, a wrong port) answers 200 with HTML:
    the error says so, with the URL, instead of an `AttributeError`."""
    from aiohttp import web

    async def page(_: web.Request) -> web.Response:
        return web.Response(text="<html><body>Welcome to nginx!</body></html>",
                            content_type="text/html")

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/v1"
    emb = OpenAIEmbedder(base_url=url, model="m", dim=8, max_retries=0)
    try:
        with pytest.raises(ModelBadResponseError) as info:
            await emb.embed(["hello"])
    finally:
        await emb.close()
        await runner.cleanup()
    message = str(info.value)
    assert f"the embeddings endpoint at {url}" in message
    assert "not JSON embeddings" in message and "AttributeError" not in message


class _Pet(BaseModel):
    name: str
    legs: int


async def test_a_schema_is_requested_as_a_json_schema_response_format(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.reply('{"name": "Rex", "legs": 4}')
    out = await chat(fake_openai).complete(MSGS, schema=_Pet)
    assert out.text == '{"name": "Rex", "legs": 4}'
    sent = fake_openai.chat_requests()[-1]["response_format"]
    assert sent["type"] == "json_schema"
    assert sent["json_schema"]["name"] == "_Pet"
    assert sent["json_schema"]["schema"]["required"] == ["name", "legs"]


async def test_an_endpoint_that_refuses_schemas_gets_plain_json_mode_from_then_on(
        fake_openai: FakeOpenAI) -> None:
    model = chat(fake_openai)
    fake_openai.fail_next(status=400, path="chat")
    fake_openai.reply('{"name": "Rex", "legs": 4}', '{"name": "Tom", "legs": 4}')
    first = await model.complete(MSGS, schema=_Pet)
    assert first.text == '{"name": "Rex", "legs": 4}'
    await model.complete(MSGS, schema=_Pet)
    # (Only this test's requests: the session's server may still hear an earlier test's
    # after-turn work.)
    mine = [r for r in fake_openai.chat_requests() if r["messages"] == MSGS_SENT]
    assert [r.get("response_format") for r in mine][-2:] == [{"type": "json_object"}] * 2


async def test_without_a_schema_no_response_format_is_sent(fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("hello")
    await chat(fake_openai).complete(MSGS)
    assert "response_format" not in fake_openai.chat_requests()[-1]
