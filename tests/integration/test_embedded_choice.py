"""When Strata starts its embedded model: never over a configured endpoint, never over one
that answers at the default, never when turned off. (Starting it for real is in the
real-model lane, tests/real_model.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from strata.bot.embedded import answers, model_endpoints
from strata.core.config import Settings, load_settings
from tests.fakes.openai_server import FakeOpenAI


async def test_answers_is_true_for_a_server_and_false_for_a_closed_port(
        fake_openai: FakeOpenAI) -> None:
    assert await answers(fake_openai.base_url)
    assert not await answers("http://127.0.0.1:9/v1", timeout=0.5)


async def test_a_configured_endpoint_always_wins(settings: Settings, tmp_path: Path) -> None:
    notices: list[str] = []

    async def nothing_answers(url: str) -> bool:
        return False

    async with model_endpoints(settings, cache_dir=tmp_path, notice=notices.append,
                               probe=nothing_answers) as effective:
        assert effective is settings
    assert notices == []
    assert not list(tmp_path.iterdir())


async def test_an_answering_default_endpoint_is_used(fake_openai: FakeOpenAI,
                                                     tmp_path: Path) -> None:
    settings = load_settings(None, env={"STRATA_DB": str(tmp_path / "s.db")})
    seen: list[str] = []

    async def default_is_up(url: str) -> bool:
        seen.append(url)
        return await answers(fake_openai.base_url)

    async with model_endpoints(settings, cache_dir=tmp_path, notice=seen.append,
                               probe=default_is_up) as effective:
        assert effective.llm.base_url == "http://127.0.0.1:11434/v1"
        assert effective.embed.dim == 768
    assert seen == ["http://127.0.0.1:11434/v1"] * 2


async def test_turned_off_it_never_starts(tmp_path: Path) -> None:
    settings = load_settings(None, env={"STRATA_DB": str(tmp_path / "s.db"),
                                        "STRATA_LLM_EMBEDDED": "false"})
    probed: list[str] = []

    async def probe(url: str) -> bool:
        probed.append(url)
        return False

    async with model_endpoints(settings, cache_dir=tmp_path, notice=probed.append,
                               probe=probe) as effective:
        assert effective is settings
    assert probed == []


def test_the_embedded_model_gets_no_tools_a_long_deadline_and_a_short_block_unless_configured(
) -> None:
    from strata.bot.embedded import EMBEDDED_DEADLINE, EMBEDDED_RECALL_TOKENS, _chat_settings
    from strata.bot.weights import SMOLLM2_135M

    plain = load_settings(None, env={"STRATA_DB": "s.db"})
    done = _chat_settings(plain, SMOLLM2_135M, "http://127.0.0.1:1/v1")
    assert done.bot.max_tool_rounds == 0
    assert done.llm.turn_deadline_seconds == EMBEDDED_DEADLINE
    assert done.llm.base_url == "http://127.0.0.1:1/v1" and done.llm.context_tokens == 4096
    assert plain.recall.budget_tokens == 1000
    assert done.recall.budget_tokens == EMBEDDED_RECALL_TOKENS < 1000
    chosen = load_settings(None, env={"STRATA_DB": "s.db", "STRATA_BOT_MAX_TOOL_ROUNDS": "3",
                                      "STRATA_LLM_TURN_DEADLINE_SECONDS": "30",
                                      "STRATA_RECALL_BUDGET_TOKENS": "1000"})
    kept = _chat_settings(chosen, SMOLLM2_135M, "http://127.0.0.1:1/v1")
    assert kept.bot.max_tool_rounds == 3 and kept.llm.turn_deadline_seconds == 30
    assert kept.recall.budget_tokens == 1000


async def test_doctor_says_the_embedded_model_will_start(tmp_path: Path) -> None:
    from strata.app.doctor import run_doctor
    from strata.bot.embedded import runtime_installed
    from strata.bot.weights import QWEN_05B, installed

    settings = load_settings(None, env={"STRATA_DB": str(tmp_path / "s.db")})
    if await answers(settings.llm.base_url):
        pytest.skip("a model server answers at Ollama's default address on this machine")
    lines = [c.line() for c in await run_doctor(settings)]
    if runtime_installed() and installed(QWEN_05B):
        assert any(line.startswith("ok") and "the embedded Qwen2.5-Coder-0.5B" in line
                   for line in lines), lines
    else:
        assert any(line.startswith("FAIL") and "strata[local]" in line for line in lines), lines
    assert not any("chat endpoint" in line for line in lines)
