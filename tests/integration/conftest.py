"""Fixtures shared by the integration tests of background cognition: the app factory, and a
local web server for feeds, calendars and address books."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.identity import ProcessIdentity
from tests.fakes.web_sources import WebSources

AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
async def make_app(settings: Settings, clock: ManualClock) -> AsyncIterator[AppFactory]:
    apps: list[App] = []

    async def make(**cognition: Any) -> App:
        s = settings.model_copy(update={
            "cognition": settings.cognition.model_copy(update=cognition),
            # Extractive episodes: after-turn work takes no scripted reply meant for a turn.
            "episodes": settings.episodes.model_copy(update={"use_model": False}),
        })
        # Each app is a process of its own: its own leases, claims and runner row.
        application = await App.create(s, clock=clock, identity=ProcessIdentity.mint())
        apps.append(application)
        return application

    yield make
    for a in apps:
        await a.close()


@pytest.fixture
async def web() -> AsyncIterator[WebSources]:
    server = await WebSources().start()
    yield server
    await server.stop()
