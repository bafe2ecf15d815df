"""Token counts calibrated by the model's own `/tokenize` where the endpoint offers it (the
fake plays llama.cpp's), measured once; without it (404) the estimate stands."""

from __future__ import annotations

from strata.app.compose import App
from strata.bot.context_window import ContextWindow, messages_cost
from strata.bot.token_calibration import SAMPLE, TokenCalibration
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.core.tokens import count_tokens
from strata.core.types import ChatMessage
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI, last_user_text

from .test_context_fit import filler_turns


def two_characters_a_token(text: str) -> list[int]:
    """A tokenizer that counts about twice what the estimate does."""
    return list(range(-(-len(text) // 2)))


def _tokenize_calls(server: FakeOpenAI) -> int:
    return sum(path == "tokenize" for path, _ in server.requests)


async def test_a_tokenizer_offered_calibrates_once(fake_openai: FakeOpenAI) -> None:
    fake_openai.tokenizer = two_characters_a_token
    calibration = TokenCalibration(fake_openai.base_url)
    assert calibration.ratio == 1.0  # not measured yet: the estimate
    expected = len(two_characters_a_token(SAMPLE)) / count_tokens(SAMPLE)
    assert 1.9 < expected < 2.1
    assert await calibration.calibrate() == expected
    assert await calibration.calibrate() == expected and calibration.ratio == expected
    assert _tokenize_calls(fake_openai) == 1
    assert [body for path, body in fake_openai.requests if path == "tokenize"] == [
        {"content": SAMPLE}]


async def test_no_tokenizer_leaves_the_estimate(fake_openai: FakeOpenAI) -> None:
    calibration = TokenCalibration(fake_openai.base_url)  # the fake answers /tokenize 404
    assert await calibration.calibrate() == 1.0
    assert await calibration.calibrate() == 1.0
    assert _tokenize_calls(fake_openai) == 1  # asked once, not on every request


async def test_a_calibrated_window_plans_in_the_models_tokens(fake_openai: FakeOpenAI) -> None:
    fake_openai.tokenizer = two_characters_a_token
    window = ContextWindow(4096, TokenCalibration(fake_openai.base_url))
    request = [ChatMessage("user" if i % 2 == 0 else "assistant", f"turn {i} " + "x" * 400)
               for i in range(40)] + [ChatMessage("user", "And now?")]
    before = window.fit(request, (), 500)
    await window.calibrate()
    after = window.fit(request, (), 500)
    assert messages_cost(before) + 500 <= window.usable  # the estimate's plan
    assert messages_cost(after) * window.scale + 500 <= window.usable  # the model's count
    assert len(after) < len(before) and after[-1].content == "And now?"


async def test_turns_fit_a_model_that_counts_more_than_the_estimate(
        fake_openai: FakeOpenAI, db_target: object, clock: ManualClock) -> None:
    # The fake counts with its tokenizer (about twice the estimate) and refuses a request over
    # its 4,096-token window: planned by the estimate alone, a long history would go over.
    fake_openai.n_ctx = 4096
    fake_openai.tokenizer = two_characters_a_token
    settings = load_settings(None, env=strata_env(fake_openai, db_target))  # type: ignore[arg-type]
    app = await App.create(settings, clock=clock)
    try:
        await filler_turns(app, clock, 30)
    finally:
        await app.close()
    # The turns' requests (the background calls' input budgets are planned at start-up, by
    # the estimate: not calibrated).
    requests = [r for r in fake_openai.chat_requests()
                if last_user_text(r).startswith("Filler message")]
    assert len(requests) == 30
    assert max(fake_openai.request_tokens(r) for r in requests) <= 4096
    assert _tokenize_calls(fake_openai) == 1
