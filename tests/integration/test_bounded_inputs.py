"""Every model call's input is bounded: a 20 MB message goes through a chat turn, its
after-turn work (row vectors, episode, compaction) and every background job, and no request
the fake model server receives comes anywhere near its size."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from strata.app.compose import App
from strata.core.clock import ManualClock
from tests.fakes.openai_server import FakeOpenAI

from .test_turns import msg

AppFactory = Callable[..., Awaitable[App]]

HUGE = "lorem ipsum dolor " * 1_200_000  # 21.6 MB


async def test_a_20_mb_message_never_goes_whole_into_any_model_request(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app(idle_minutes=0.0)
    result = await app.processor.handle(msg(HUGE, clock=clock))
    assert result is not None and not result.failed
    await app.processor.handle(msg("and a short one", clock=clock))
    await app.processor.drain()
    clock.advance(hours=2)
    assert app.runner is not None
    await app.runner.check_jobs()
    await app.processor.drain()
    sizes = fake_openai.sizes
    assert {path for path, _ in sizes} >= {"chat", "embeddings"}
    biggest = max(n for _, n in sizes)
    # The largest configured input is the chat turn's message cap (8000 tokens ≈ 32 kB) plus
    # history and instructions; nothing is anywhere near the message's 21.6 MB.
    assert biggest < 200_000, sorted(sizes, key=lambda s: -s[1])[:5]
