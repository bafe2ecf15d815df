"""Failures are failures (issue 34, item 4): a research run whose every source is unreachable
(real HTTP fakes on 127.0.0.1 answering 503) is recorded as an error, not "nothing new found";
the next attempt waits the runner's backoff on the injected clock; `strata jobs status` and
`strata doctor` show it; a later success clears it. A person's connected service that refuses
makes connector sync an error too."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from strata.app.cli.jobs import cmd_jobs_status
from strata.app.compose import App
from strata.app.doctor import run_doctor
from strata.core.clock import ManualClock
from strata.core.types import Person
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.rules.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources

from .conftest import AppFactory
from .test_connectors import person, say
from .test_research_default import responder

PAGE = {"key": "Sourdough_starter", "title": "Sourdough starter",
        "excerpt": "A sourdough starter is a culture of wild yeast.", "description": ""}


def runs(app: App) -> JobRunRepo:
    assert app.services is not None
    return app.services.runs


async def _status(app: App, job: str, who: str,
                  capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert await cmd_jobs_status(argparse.Namespace(
        user=who, json=True, now=app.clock.now().isoformat()), app.settings) == 0
    return next(r for r in json.loads(capsys.readouterr().out) if r["job"] == job)


async def _doctor(app: App) -> list[str]:
    return [c.line() for c in await run_doctor(app.settings) if "background job" in c.what]


async def _research_app(make_app: AppFactory, clock: ManualClock, fake: FakeOpenAI,
                        wikipedia: str, searxng: str) -> tuple[App, Person]:
    """Research over Wikipedia's search and a SearXNG, for a person whose interest is known."""
    app = await make_app(wikipedia_url=wikipedia, searxng_url=searxng,
                         disabled_jobs=("synthesis",))
    await say(app, clock, "I bake sourdough bread every Sunday")
    alice = await person(app)
    baking = NewFact(owner_id=alice.id, kind="user_specific", source="user",
                     text="Alice bakes sourdough bread every Sunday")
    await app.facts.add(baking, clock.now())
    fake.responder = responder
    clock.advance(hours=1)  # she is away: background jobs may run
    return app, alice


async def test_research_with_every_source_unreachable_is_an_error_retried_with_backoff(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI, web: WebSources,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Two sources, both on the fake.
    app, alice = await _research_app(make_app, clock, fake_openai, web.base_url, web.base_url)
    assert app.runner is not None
    research = app.runner.registry.get("research")
    base = timedelta(minutes=app.settings.cognition.job_retry_minutes)
    web.down = True

    report = await app.runner.run_job(research, alice)
    assert report.status == "error", report.detail
    assert "every source failed" in report.detail and "HTTP 503" in report.detail
    assert web.wiki_searches() and web.searches()  # both sources were asked
    cursor = await runs(app).cursor("research", alice.id)
    assert cursor is not None and cursor.failures == 1 and cursor.retry_at == clock.now() + base

    row = await _status(app, "research", "alice", capsys)
    assert (row["last_status"], row["failures"], row["errors"]) == ("error", 1, 1)
    assert "every source failed" in row["last_result"]
    assert row["next_retry"] == (clock.now() + base).isoformat()
    [line] = await _doctor(app)
    assert line.startswith("FAIL  background job research for alice: failed 1 time in a row")
    assert "every source failed" in line and "strata jobs status" in line

    # Before the retry time nothing is tried; after it, a second failure doubles the wait.
    asked = len(web.requests)
    clock.advance(base - timedelta(minutes=1))
    waiting = await app.runner.run_job(research, alice)
    assert waiting.status == "skipped" and "next retry after" in waiting.detail
    assert len(web.requests) == asked
    clock.advance(minutes=1)
    assert (await app.runner.run_job(research, alice)).status == "error"
    cursor = await runs(app).cursor("research", alice.id)
    assert cursor is not None and cursor.failures == 2
    assert cursor.retry_at == clock.now() + 2 * base

    # The sources answer again: the next attempt after the wait succeeds and clears it all.
    web.down = False
    web.pages["sourdough"] = [PAGE]
    clock.advance(2 * base)
    report = await app.runner.run_job(research, alice)
    assert report.status == "ok" and "1 discoveries kept" in report.detail, report.detail
    cursor = await runs(app).cursor("research", alice.id)
    assert cursor is not None and cursor.failures == 0 and cursor.retry_at is None
    row = await _status(app, "research", "alice", capsys)
    assert (row["last_status"], row["failures"], row["next_retry"]) == ("ok", 0, None)
    assert await _doctor(app) == ["ok    background jobs: none failing"]


async def test_one_source_down_is_not_an_error(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI,
        web: WebSources, caplog: pytest.LogCaptureFixture) -> None:
    """Only when every source failed: with Wikipedia answering and the SearXNG address
    refusing connections, the run is ok, and the source that failed is logged."""
    spare = await WebSources().start()
    dead = spare.base_url
    await spare.stop()  # nothing listens there any more: connection refused
    app, alice = await _research_app(make_app, clock, fake_openai, web.base_url, dead)
    assert app.runner is not None
    web.pages["sourdough"] = [PAGE]
    report = await app.runner.run_job(app.runner.registry.get("research"), alice)
    assert report.status == "ok" and "1 discoveries kept" in report.detail, report.detail
    failed = [r.getMessage() for r in caplog.records if "search provider failed" in r.getMessage()]
    assert len(failed) == 1 and "SearXNG" in failed[0] and dead in failed[0]


async def test_a_connected_service_that_refuses_makes_connector_sync_an_error(
        make_app: AppFactory, clock: ManualClock, web: WebSources, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    # The fake is on 127.0.0.1: allowed here, refused by default.
    app = await make_app(connector_key_file=str(tmp_path / "connectors.key"),
                         connector_private_hosts=True)
    web.ics = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n"
    reply = await say(app, clock, f"/connect calendar {web.base_url}/cal.ics")
    assert "Connected your calendar" in reply
    alice = await person(app)
    assert app.runner is not None
    sync = app.runner.registry.get("connector_sync")
    web.down = True
    clock.advance(hours=1)
    report = await app.runner.run_job(sync, alice)
    assert report.status == "error" and "HTTP 503" in report.detail, report.detail
    cursor = await runs(app).cursor("connector_sync", alice.id)
    assert cursor is not None and cursor.failures == 1 and cursor.retry_at is not None
    assert (await _status(app, "connector_sync", "alice", capsys))["failures"] == 1
    web.down = False
    clock.advance(hours=1)
    assert (await app.runner.run_job(sync, alice)).status == "ok"
    assert await _doctor(app) == ["ok    background jobs: none failing"]
