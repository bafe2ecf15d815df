"""Research needs no server of the operator's: Wikipedia's public search is the default
source (here a local fake of its REST API). A simulated day makes a discovery with its URL from
what the person said; `/research off` stops it for that person; what research sends out is in
the log."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.memory.rules.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources

from .test_turns import msg

AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
async def wiki() -> AsyncIterator[WebSources]:
    server = await WebSources().start()
    server.pages["sourdough"] = [
        {"key": "Sourdough_starter", "title": "Sourdough starter",
         "excerpt": 'A <span class="searchmatch">sourdough</span> starter is a culture of '
                    "wild yeast.", "description": "fermented dough culture"},
        {"key": "Rye_bread", "title": "Rye bread", "excerpt": "Bread made with rye flour.",
         "description": ""},
    ]
    yield server
    await server.stop()


def responder(body: dict[str, Any]) -> str | None:
    text = str(body["messages"])
    if "Write a short portrait" in text:
        return "Alice bakes sourdough bread every Sunday."
    if "choose up to three web search queries" in text:
        assert "bakes sourdough bread" in text  # from her portrait, or her facts before it
        return json.dumps({"queries": ["sourdough bread"]})
    if "Pick the results" in text:
        return json.dumps({"findings": [{"n": 1, "note": "she bakes sourdough every week"}]})
    return json.dumps({"facts": [], "patterns": [], "places": []})


async def test_a_fresh_install_makes_a_discovery_from_wikipedia_and_research_off_stops_it(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI, wiki: WebSources,
        caplog: pytest.LogCaptureFixture) -> None:
    app = await make_app(wikipedia_url=wiki.base_url)  # nothing else configured
    assert app.runner is not None and app.services is not None
    await app.processor.handle(msg("I bake sourdough bread every Sunday", clock=clock))
    await app.processor.drain()
    alice = await app.persons.find("alice")
    assert alice is not None
    # What fact extraction would keep from that (it needs a chat model; here it is given).
    await app.facts.add(NewFact(owner_id=alice.id, kind="user_specific",
                                text="Alice bakes sourdough bread every Sunday",
                                source="user"), clock.now())
    fake_openai.responder = responder

    caplog.set_level(logging.DEBUG, logger="strata.cognition")
    for _ in range(12):  # a day of job checks, every two hours, while she is away
        clock.advance(hours=2)
        await app.runner.check_jobs([alice])
    discoveries = await app.facts.repo.for_owner(alice.id, kinds=["discovery"])
    url = f"{wiki.base_url}/wiki/Sourdough_starter"
    assert [f.url for f in discoveries] == [url]
    assert url in discoveries[0].text and "she bakes sourdough" in discoveries[0].text
    # At most once per research period (6 h): a day is four searches at most.
    assert 1 <= len(wiki.wiki_searches()) <= 4
    assert wiki.wiki_searches()[0] == "/w/rest.php/v1/search/page?q=sourdough+bread&limit=5"
    assert all(ua.startswith("Strata/") for ua in wiki.user_agents)
    # Every request is logged at INFO; its query (the person's words) only at DEBUG.
    asked_at = {r.levelname: r.getMessage() for r in caplog.records
                if r.getMessage().startswith("research:") and wiki.base_url in r.getMessage()}
    assert "sourdough" not in asked_at["INFO"] and "'sourdough bread'" in asked_at["DEBUG"]

    shown = await app.processor.handle(msg("/memory", clock=clock))
    assert shown is not None and url in shown.reply

    off = await app.processor.handle(msg("/research off", clock=clock))
    assert off is not None and "off" in off.reply
    asked = len(wiki.requests)
    clock.advance(days=2)
    reports = {r.job: r for r in await app.runner.check_jobs([alice])}
    assert len(wiki.requests) == asked  # nothing more went out for her
    assert "research" not in reports or reports["research"].status != "ok" \
        or "off" in reports["research"].detail
    state = await app.processor.handle(msg("/research", clock=clock))
    assert state is not None and "off" in state.reply
    on = await app.processor.handle(msg("/research on", clock=clock))
    assert on is not None and "on" in on.reply
    clock.advance(hours=7)
    await app.runner.check_jobs([alice])
    assert len(wiki.requests) > asked


async def test_before_any_portrait_research_searches_for_what_the_person_said(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI,
        wiki: WebSources) -> None:
    app = await make_app(wikipedia_url=wiki.base_url, disabled_jobs=("synthesis",))
    assert app.runner is not None
    await app.processor.handle(msg("hello", clock=clock))
    alice = await app.persons.find("alice")
    assert alice is not None
    fake_openai.responder = responder
    clock.advance(hours=1)
    assert (await app.runner.run_job(app.runner.registry.get("research"), alice)).detail \
        == "nothing to work on"  # nothing known of her yet: nothing to search for
    await app.facts.add(NewFact(owner_id=alice.id, kind="user_specific",
                                text="Alice bakes sourdough bread every Sunday",
                                source="user"), clock.now())
    clock.advance(hours=1)
    report = await app.runner.run_job(app.runner.registry.get("research"), alice)
    assert report.status == "ok" and "1 discoveries kept" in report.detail, report.detail
    assert len(wiki.wiki_searches()) == 1


async def test_research_is_private_and_off_in_shared_rooms(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI,
        wiki: WebSources) -> None:
    app = await make_app(wikipedia_url=wiki.base_url)
    room = await app.processor.handle(msg("/research off", clock=clock, is_private=False,
                                          room_id="group", room_name="group"))
    assert room is not None and room.reply == "That command only works in a private chat with me."
    alice = await app.persons.find("alice")
    assert alice is not None and alice.research


def test_a_wrong_wikipedia_address_is_a_config_error() -> None:
    from strata.core.config import load_settings
    from strata.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"cognition\.wikipedia_url"):
        load_settings(None, env={"STRATA_COGNITION_WIKIPEDIA_URL": "en.wikipedia.org"})
    assert load_settings(None, env={}).cognition.wikipedia_url == "https://en.wikipedia.org"
    assert load_settings(None, env={"STRATA_COGNITION_WIKIPEDIA_URL": ""}
                         ).cognition.wikipedia_url == ""
