"""Shared fixtures: the fake OpenAI-compatible server, settings pointing at it, a real SQLite
database (sqlite-vec loaded) in a temp folder, an injected clock, an assembled `App`, and the
real Synapse homeservers (`synapse`, `synapse_strict`, session-scoped, from tests/fakes).

The storage engine of a run is `STRATA_TEST_ENGINE` (`sqlite`, the default, or `postgres`):
every storage fixture (`db_target`, `db`, `settings`, `subprocess_env`) is then a SQLite file in
the test's temp folder, or a fresh database on the session's PostgreSQL server (see
tests/pg_server.py). test.sh runs the whole suite once per engine. A test about SQLite itself
is marked `@pytest.mark.sqlite_only("why")` and skipped on PostgreSQL; one about PostgreSQL
itself `@pytest.mark.postgres_only` and skipped on SQLite.
"""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings, load_settings
from strata.memory.engines.db import Database
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.synapse import synapse, synapse_strict  # noqa: F401 - shared pytest fixtures
from tests.pg_server import PgServer
from tests.pg_server import start as start_pg_server

# Progress lines for long runs, silent unless STRATA_TEST_PROGRESS is set (test.sh sets it).
pytest_plugins = ("tests.progress", "tests.leftover_threads")

# test.sh runs pytest as a background job (to pass SIGTERM on), and a non-interactive shell
# starts background jobs with SIGINT ignored, which Python and every process a test starts
# would inherit: Ctrl-C (or a test's SIGINT to a child) must mean what it usually means.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

TEST_DIM = 64
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ENGINE = os.environ.get("STRATA_TEST_ENGINE", "sqlite").strip() or "sqlite"
if ENGINE not in ("sqlite", "postgres"):
    raise pytest.UsageError(f"STRATA_TEST_ENGINE={ENGINE!r}: use sqlite or postgres")


def pytest_report_header() -> str:
    return f"storage engine: {ENGINE} (STRATA_TEST_ENGINE)"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip what is about the other engine: `sqlite_only` tests must name their reason."""
    for item in items:
        only = item.get_closest_marker("sqlite_only")
        if only is not None and ENGINE != "sqlite":
            if not only.args:
                raise pytest.UsageError(f"{item.nodeid}: sqlite_only needs a reason")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {only.args[0]}"))
        if item.get_closest_marker("postgres_only") is not None and ENGINE != "postgres":
            item.add_marker(pytest.mark.skip(reason="PostgreSQL only (STRATA_TEST_ENGINE)"))


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """One PostgreSQL server for the session, started on first use, always stopped. Its
    folder is not under pytest's base temp: a concurrent pytest run may prune those."""
    server = start_pg_server(Path(tempfile.mkdtemp(prefix="strata-pg-")))
    try:
        yield server
    finally:
        server.stop()  # and its folder is deleted


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database (at the tests' dimension), dropped afterwards."""
    name = pg_server.create_database(TEST_DIM)
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


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


def strata_env(server: FakeOpenAI, db_path: Path | str) -> dict[str, str]:
    """Environment variables that point Strata at `server` and `db_path` (a SQLite file or a
    PostgreSQL URL), for settings and subprocesses."""
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
        # Research's default source is the public Wikipedia: tests never reach outside, so
        # it is off unless a test points it at its local fake.
        "STRATA_COGNITION_WIKIPEDIA_URL": "",
    }


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """Where the test's SQLite file goes (a SQLite-only test's database)."""
    return tmp_path / "strata.db"


@pytest.fixture
def db_target(request: pytest.FixtureRequest, db_path: Path) -> Path | str:
    """The test's database for this run's engine: the SQLite file `db_path`, or the URL of a
    fresh, migrated PostgreSQL database. `db`, `settings` and `subprocess_env` all use it."""
    if ENGINE == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return db_path


@pytest.fixture
def empty_target(request: pytest.FixtureRequest, db_path: Path) -> tuple[str, str]:
    """(engine, target) of an empty, unmigrated database on this run's engine, for upgrade
    tests that migrate it step by step: a SQLite path, or a new PostgreSQL database."""
    if ENGINE == "postgres":
        server = request.getfixturevalue("pg_server")
        name = server.create_empty_database()
        request.addfinalizer(lambda: server.drop_database(name))
        return "postgres", str(server.url(name))
    return "sqlite", str(db_path)


@pytest.fixture
def settings(fake_openai: FakeOpenAI, db_target: Path | str) -> Settings:
    return load_settings(None, env=strata_env(fake_openai, db_target))


@pytest.fixture
def subprocess_env(fake_openai: FakeOpenAI, db_target: Path | str,
                   tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(strata_env(fake_openai, db_target))
    # What Strata notes outside the database (the backups it made) stays in the test's folders.
    env["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state"))
    return env


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
async def db(db_target: Path | str) -> AsyncIterator[Database]:
    """The test's database, on this run's engine (see `db_target`)."""
    database = await Database.open(db_target, TEST_DIM)
    yield database
    await database.close()


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[App]:
    application = await App.create(settings, clock=clock)
    yield application
    await application.close()
