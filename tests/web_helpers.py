"""Helpers for the web view's tests: an app with the web view on, served on a free port of
127.0.0.1 by the app's own server, and Debian's headless Chromium through Selenium (never a
downloaded browser)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from strata.app.compose import App
from strata.app.web.serve import start_web
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.core.types import InboundMessage, TurnResult
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
LINK = re.compile(r"https?://\S+/open/[A-Za-z0-9_-]+")


def client() -> aiohttp.ClientSession:
    """An HTTP client that keeps cookies (aiohttp keeps none of an IP address by default)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def open_link(http: aiohttp.ClientSession, link: str) -> int:
    """What a person does with the link: fetch its page, press its button. The status of the
    page the button leads to (a used or unknown link's page is refused: its status)."""
    async with http.get(link) as resp:
        if resp.status == 403:
            assert 'id="open"' not in await resp.text()
            return resp.status
        assert resp.status == 200 and 'id="open"' in await resp.text()
    async with http.post(link) as resp:
        return resp.status


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class WebApp:
    app: App
    base: str  # http://127.0.0.1:PORT


@asynccontextmanager
async def web_app(fake: FakeOpenAI, target: Path | str, clock: ManualClock,
                  **extra: str) -> AsyncIterator[WebApp]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**strata_env(fake, target), "STRATA_WEB_ENABLED": "true",
           "STRATA_WEB_PUBLIC_URL": base, "STRATA_WEB_LISTEN": f"127.0.0.1:{port}", **extra}
    app = await App.create(load_settings(None, env=env), clock=clock)
    try:
        running = await start_web(app.web_server().asgi(), "127.0.0.1", port)
        try:
            yield WebApp(app, base)
        finally:
            await running.stop()
    finally:
        await app.close()


async def say(app: App, clock: ManualClock, text: str, user: str = "alice",
              private: bool = True) -> TurnResult:
    clock.advance(seconds=30)
    room = f"{user}/default" if private else "club"
    result = await app.processor.handle(InboundMessage(
        platform="console", room_id=room, sender_id=user, sender_name=user, text=text,
        ts=clock.now(), is_private=private))
    assert result is not None
    return result


async def web_link(app: App, clock: ManualClock, user: str = "alice") -> str:
    """What `/web` in the person's private chat answers: the one-time link in it."""
    reply = await say(app, clock, "/web", user)
    found = LINK.search(reply.reply)
    assert found is not None, reply.reply
    return found.group(0)


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium driven by Debian's chromedriver, in a fresh empty profile."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        if os.environ.get("STRATA_REQUIRE_BROWSER") == "1":  # CI (.ci/run) installs them
            pytest.fail(f"{', '.join(missing)} missing and STRATA_REQUIRE_BROWSER=1")
        pytest.skip(f"BROWSER TESTS SKIPPED: {', '.join(missing)} missing; install with "
                    "`apt-get install -y chromium chromium-driver` (test.sh does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="strata-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 f"--user-data-dir={profile}", f"--window-size={width},{height}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
