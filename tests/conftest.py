"""Shared fixtures: the fake OpenAI-compatible server, settings pointing at it, a real SQLite
database (sqlite-vec loaded) in a temp folder, an injected clock, an assembled `App`, and the
real Synapse homeservers (`synapse`, `synapse_strict`, session-scoped, from tests/fakes)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.app import App
from bot.clock import ManualClock
from bot.config import Settings, load_settings
from memory.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.synapse import synapse, synapse_strict  # noqa: F401 - shared pytest fixtures

TEST_DIM = 64
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def fake_openai_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dim=TEST_DIM) as server:
        yield server


@pytest.fixture
def fake_openai(fake_openai_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The session's fake server, with its script, faults and request log cleared."""
    fake_openai_server.clear()
    fake_openai_server.responder = None
    yield fake_openai_server
    fake_openai_server.clear()
    fake_openai_server.responder = None


def strata_env(server: FakeOpenAI, db_path: Path) -> dict[str, str]:
    """Environment variables that point Strata at `server` and `db_path` (for subprocesses)."""
    return {
        "STRATA_DB": str(db_path),
        "STRATA_LLM_BASE_URL": server.base_url,
        "STRATA_LLM_MODEL": server.model,
        "STRATA_LLM_API_KEY": "test",
        "STRATA_LLM_MAX_RETRIES": "0",
        "STRATA_LLM_RETRY_BACKOFF": "0",
        "STRATA_EMBED_BASE_URL": server.base_url,
        "STRATA_EMBED_MODEL": server.embed_model,
        "STRATA_EMBED_API_KEY": "test",
        "STRATA_EMBED_DIM": str(server.dim),
        "STRATA_EMBED_MAX_RETRIES": "0",
        # The query gate is calibrated for sentence models (docs/recall.md);
        # the fake's hashed bag-of-words vectors score paraphrases far lower, so the tests keep
        # only the per-item gate (recall.min_relevance). tests/unit/test_recall_gate.py tests it.
        "STRATA_RECALL_MIN_TOP_RELEVANCE": "0.25",
    }


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "strata.db"


@pytest.fixture
def settings(fake_openai: FakeOpenAI, db_path: Path) -> Settings:
    return load_settings(None, env=strata_env(fake_openai, db_path))


@pytest.fixture
def subprocess_env(fake_openai: FakeOpenAI, db_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(strata_env(fake_openai, db_path))
    return env


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def db(db_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(db_path, TEST_DIM)
    yield database
    await database.close()


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[App]:
    application = await App.create(settings, clock=clock)
    yield application
    await application.close()
