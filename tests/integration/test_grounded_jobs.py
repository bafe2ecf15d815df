"""Every model-written memory goes through the grounding rule before it is stored
(strata.memory.checks.grounding): the fake model answers what a small model really wrote (the
prompt's placeholder, tool names, a portrait of someone else) beside grounded items, and only
those are stored, citing what they rest on; each refusal is counted per layer and reason.
(Places, reflections and discoveries: in test_cognition_jobs.py.)"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.types import Person, Role
from strata.memory.checks import grounding as g
from strata.memory.rules.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI

from .test_cognition_jobs import refused, run, say

AppFactory = Callable[..., Awaitable[App]]


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

