"""Every model-written memory goes through the grounding rule before it is stored
(strata.memory.domain.grounding): the fake model answers what a small model really wrote (the
prompt's placeholder, tool names, a portrait of someone else, a finding nobody said) beside one
grounded item, and only the grounded item is stored, citing what it rests on; each refusal is
counted per layer and reason."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.types import Location, Person, Role
from strata.memory.domain import grounding as g
from strata.memory.domain.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.web_sources import WebSources

from .test_cognition_jobs import facts_of, run, say

AppFactory = Callable[..., Awaitable[App]]


async def refused(app: App, person: Person) -> dict[tuple[str, str], int]:
    assert app.services is not None
    return {(c.layer, c.reason): c.count
            for c in await app.services.refusals.for_owner(person.id)}


async def own_rows(app: App, person: Person) -> list[int]:
    return [r.id for r in await app.transcript.for_owner(person.id) if r.role is Role.USER]


async def test_patterns_store_only_what_the_cited_messages_say(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    for _day in range(3):
        alice = await say(app, clock, "Watering the plants again before bed")
        clock.advance(days=1)
    rows = await own_rows(app, alice)

    def responder(body: dict[str, Any]) -> str | None:
        if "behavioural patterns" in str(body["messages"]):
            return json.dumps({"patterns": [
                {"pattern": "short statement about the person", "rows": rows, "tool": None},
                {"pattern": "set_reminder", "rows": rows, "tool": "set_reminder"},
                {"pattern": "enjoys hiking, cooking and video games", "rows": rows},
                {"pattern": "waters the plants before bed", "rows": rows[:1]},
                {"pattern": "waters the plants before bed", "rows": [rows[0], 999999]},
                {"pattern": "waters the plants before bed", "rows": rows[1:],
                 "tool": "set_reminder"}]})
        return None

    fake_openai.responder = responder
    report = await run(app, "patterns", alice)
    assert report.status == "ok" and "1 new patterns" in report.detail, report.detail
    facts = await app.facts.repo.for_owner(alice.id, kinds=["behavioral_pattern"])
    assert [f.text for f in facts] == [
        "waters the plants before bed (related tool: set_reminder)"]
    assert (await app.facts.repo.sources(facts[0].id)).row_ids == tuple(rows[1:])
    assert await refused(app, alice) == {
        (g.PATTERNS, g.ECHO): 2, (g.PATTERNS, g.NOT_SAID): 1, (g.PATTERNS, g.UNCITED): 2}


async def test_a_portrait_keeps_only_the_sentences_its_facts_hold(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    alice = await say(app, clock, "hello")
    for text in ("Lives in Lyon", "Works as a pharmacist", "Sister Nadia lives in Porto"):
        await app.facts.add(NewFact(alice.id, "user_specific", text, "user"), clock.now())
    fake_openai.reply("Alice lives in Lyon and works as a pharmacist. Her sister is Alice, "
                      "from New York City. She enjoys hiking, cooking and video games. "
                      "Her sister Nadia lives in Porto.")
    clock.advance(hours=1)
    report = await run(app, "synthesis", alice)
    assert report.status == "ok", report.detail
    assert app.services is not None
    portrait = await app.services.portraits.latest(alice.id)
    assert portrait is not None and portrait.text == (
        "Alice lives in Lyon and works as a pharmacist. Her sister Nadia lives in Porto.")
    assert await refused(app, alice) == {(g.PORTRAIT, g.NAME): 1, (g.PORTRAIT, g.UNTRACED): 1}

    # A portrait of which nothing traces is not written: the old one stays.
    await app.facts.add(NewFact(alice.id, "user_specific", "Plays the cello", "user"),
                        clock.now())
    fake_openai.reply("She enjoys hiking and video games.")
    again = await run(app, "synthesis", alice)
    assert again.status == "ok" and "kept the old one" in again.detail
    kept = await app.services.portraits.latest(alice.id)
    assert kept is not None and kept.id == portrait.id


async def test_a_reflection_must_trace_to_episodes_or_facts(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    alice = await say(app, clock, "My marathon in Lyon is in April and my knee hurts")
    clock.advance(hours=1)
    fake_openai.responder = lambda body: ('{"facts": []}' if "DURABLE FACTS" in str(body)
                                          else None)
    assert (await run(app, "extract", alice)).status == "ok"
    fake_openai.responder = None
    fake_openai.reply("Alice seems to love hiking in the Alps every summer.\n"
                      "Alice's knee hurts before her Lyon marathon in April.")
    report = await run(app, "dmn", alice)
    assert report.status == "ok", report.detail
    assert await facts_of(app, alice, "reflection") == [
        "Alice's knee hurts before her Lyon marathon in April."]
    assert await refused(app, alice) == {(g.REFLECTIONS, g.NAME): 1}


async def test_a_discovery_says_only_what_its_result_says(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI,
        web: WebSources) -> None:
    web.results["climbing"] = [
        {"title": "Lyon bouldering contest", "url": "https://ex.org/contest",
         "content": "A bouldering contest in Lyon on 20 January."},
        {"title": "Chalk review", "url": "https://ex.org/chalk", "content": "Chalk compared."}]
    app = await make_app(searxng_url=web.base_url)
    alice = await say(app, clock, "hi")
    assert app.services is not None
    await app.services.portraits.save(alice.id, "Alice climbs and lives in Lyon.", "seed",
                                      clock.now())

    def responder(body: dict[str, Any]) -> str | None:
        text = str(body["messages"])
        if "choose up to three web search queries" in text:
            return json.dumps({"queries": ["climbing Lyon"]})
        if "Pick the results" in text:
            return json.dumps({"findings": [
                {"n": 1, "note": "A bouldering contest in Lyon on 3 March."},
                {"n": 2, "note": "Chalk compared in a review."}]})
        return None

    fake_openai.responder = responder
    clock.advance(hours=1)
    report = await run(app, "research", alice)
    assert report.status == "ok" and "1 discoveries kept" in report.detail, report.detail
    assert [f.url for f in await app.facts.repo.for_owner(alice.id, kinds=["discovery"])] == [
        "https://ex.org/chalk"]
    assert await refused(app, alice) == {(g.DISCOVERIES, g.NUMBER): 1}


async def test_a_place_habit_rests_on_what_was_written_there(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    gym = Location(45.7601, 4.8402)
    for _ in range(2):
        clock.set(clock.now().replace(hour=19))
        alice = await say(app, clock, "at the climbing gym", location=gym)
        clock.advance(days=7)
    await say(app, clock, "somewhere once", location=Location(10.0, 10.0))
    fake_openai.responder = lambda body: json.dumps({"places": [
        {"habit": "usually at the swimming pool on Monday evenings", "lat": 45.760,
         "lon": 4.840},
        {"habit": "somewhere once on Mondays", "lat": 10.0, "lon": 10.0},
        {"habit": "at the climbing gym on Monday evenings", "lat": 45.760, "lon": 4.840}],
    }) if "location habits" in str(body["messages"]) else None
    clock.advance(hours=2)
    report = await run(app, "geo", alice)
    assert report.status == "ok", report.detail
    assert await facts_of(app, alice, "place") == [
        "at the climbing gym on Monday evenings (near 45.760, 4.840)"]
    assert await refused(app, alice) == {(g.PLACES, g.NOT_SAID): 1, (g.PLACES, g.UNCITED): 1}
