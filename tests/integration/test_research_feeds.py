"""A hostile research feed stores nothing: one served over HTTP is an entity bomb, one read from
a local path names a secret file as an external entity. The research job runs, logs each feed
as refused, never shows the model a result, keeps no discovery, and the secret appears nowhere."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources
from tests.unit.test_feed_xml import BILLION_LAUGHS, external_entity_feed

from .test_cognition_jobs import calls_with, run, say

AppFactory = Callable[..., Awaitable[App]]


async def test_refused_feeds_store_nothing_and_leak_nothing(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI, web: WebSources,
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("climbing password hunter2")
    evil = tmp_path / "evil.xml"
    evil.write_bytes(external_entity_feed(secret.as_uri()))
    web.rss_body = BILLION_LAUGHS
    app = await make_app(feeds=(f"{web.base_url}/feed.xml", str(evil)))
    alice = await say(app, clock, "hi")
    await app.services.portraits.save(alice.id, "Alice climbs and lives in Lyon.", "seed",
                                      clock.now())

    def responder(body: dict[str, Any]) -> str | None:
        if "choose up to three web search queries" in str(body["messages"]):
            return json.dumps({"queries": ["climbing lol"]})
        return None

    fake_openai.responder = responder
    caplog.set_level(logging.WARNING, logger="strata.cognition")
    clock.advance(hours=1)
    report = await run(app, "research", alice)

    # Every source refused: nothing was searched, so the run failed (and waits its retry).
    assert report.status == "error", report.detail
    assert "every source failed" in report.detail and "hunter2" not in report.detail
    assert web.requests == ["/feed.xml"]  # it was asked, and refused
    refused = [r.getMessage() for r in caplog.records if "feed skipped" in r.getMessage()]
    assert len(refused) == 2 and all("refused: the feed declares XML entities" in m
                                     for m in refused)
    assert calls_with(fake_openai, "Pick the results") == 0
    assert await app.facts.repo.for_owner(alice.id, kinds=["discovery"]) == []
    assert not any("hunter2" in str(r["messages"]) for r in fake_openai.chat_requests())
    assert not any("hunter2" in r.getMessage() for r in caplog.records)
