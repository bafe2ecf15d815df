"""A 4,096-token model (the fake plays llama.cpp: it reports its window at /props and refuses
a request over it) and a long conversation: every request fits, and memory is kept."""

from __future__ import annotations

from strata.app.compose import App
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.clock import ManualClock
from strata.core.config import Settings, load_settings
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI

from .test_turns import msg


async def filler_turns(app: App, clock: ManualClock, count: int) -> None:
    """`count` long messages, two minutes apart, each answered; then the jobs they started."""
    for i in range(count):
        clock.advance(minutes=2)
        said = await app.processor.handle(
            msg(f"Filler message {i} about the weather and my day. " * 12, clock=clock))
        assert said is not None and not said.failed, said
    await app.processor.drain()


async def test_every_request_fits_a_4096_window_and_recall_is_kept(
        fake_openai: FakeOpenAI, db_target: object, clock: ManualClock) -> None:
    fake_openai.n_ctx = 4096
    settings = load_settings(None, env=strata_env(fake_openai, db_target))  # type: ignore[arg-type]
    assert settings.llm.context_tokens == 0  # learned from the endpoint
    app = await App.create(settings, clock=clock)
    try:
        assert app.processor.window is not None and app.processor.window.tokens == 4096
        first = await app.processor.handle(
            msg("I adopted a beagle called Pepper last week.", clock=clock))
        assert first is not None and not first.failed
        await filler_turns(app, clock, 50)
        clock.advance(minutes=2)
        answer = await app.processor.handle(msg("What is my beagle called?", clock=clock))
        assert answer is not None and not answer.failed
        await app.processor.drain()
    finally:
        await app.close()
    requests = fake_openai.chat_requests()
    assert len(requests) >= 52
    assert max(fake_openai.request_tokens(r) for r in requests) <= 4096
    last = requests[-1]["messages"]
    contents = [m["content"] or "" for m in last]
    # The early message is out of the history (trimmed first) but back as memory.
    assert not any(c == "I adopted a beagle called Pepper last week." for c in contents)
    assert any(MEMORY_PREAMBLE in c and "Pepper" in c for c in contents)


async def test_a_configured_window_wins_over_the_endpoint(fake_openai: FakeOpenAI,
                                                         settings: Settings,
                                                         clock: ManualClock) -> None:
    fake_openai.n_ctx = 32768
    small = settings.model_copy(update={"llm": settings.llm.model_copy(
        update={"context_tokens": 2048})})
    app = await App.create(small, clock=clock)
    try:
        assert app.processor.window is not None and app.processor.window.tokens == 2048
        # The background calls' inputs are cut to fit too.
        assert app.settings.facts.input_tokens < 2048
    finally:
        await app.close()
