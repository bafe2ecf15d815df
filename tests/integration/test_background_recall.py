"""Background channels never run turn-zero recall (docs/lifecycle.md §5): no
user is present, and a DMN reflection fed by recalled memories would feed on itself. A job
that needs memory states its inputs instead (the DMN: portrait, recent episodes, new facts).
Real turns through the turn processor, real SQLite, the fake model server."""

from __future__ import annotations

from typing import Any

import pytest

from strata.app.compose import App
from strata.bot.background import BACKGROUND_PLATFORM
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.clock import ManualClock
from strata.core.types import ChannelKind, Person
from strata.memory.rules.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI

from .conftest import AppFactory
from .test_turns import msg

FACT = "Alice's cat is called Miso and loves tuna"
QUESTION = "what does my cat Miso love to eat, tuna?"
# Every background source: the runner's jobs, scheduled prompts, delegates, external agents.
SOURCES = ("dmn", "research", "scheduled", "delegate:planner", "external-agent:mailbot",
           "job:synthesis", "job:patterns")


def memory_blocks(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"]
            if m["role"] == "system" and MEMORY_PREAMBLE in str(m["content"])]


async def alice_with_a_fact(app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> Person:
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(msg("hello", clock=clock))
    alice = await app.persons.find("alice")
    assert alice is not None
    await app.facts.add(NewFact(alice.id, "user_specific", FACT, "user"), clock.now())
    return alice


@pytest.mark.parametrize("legacy_row", [False, True], ids=["new", "stored-with-seed-on"])
@pytest.mark.parametrize("source", SOURCES)
async def test_no_background_source_runs_turn_zero_recall(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock, source: str,
        legacy_row: bool) -> None:
    alice = await alice_with_a_fact(app, fake_openai, clock)
    # The same question in the person's chat recalls the fact (so the check below can fail).
    fake_openai.clear()
    await app.processor.handle(msg(QUESTION, clock=clock))
    [chat] = [r for r in fake_openai.chat_requests() if QUESTION in str(r["messages"][-1])]
    assert any("loves tuna" in b for b in memory_blocks(chat))

    if legacy_row:  # a channel stored before migration 0008, with memory_seed still on
        channel = await app.channels.get_or_create(
            platform=BACKGROUND_PLATFORM, room_ref=f"{alice.id}/{source}", owner_id=alice.id,
            kind=ChannelKind.BACKGROUND, source=source, now=clock.now(), memory_seed=True)
        assert channel.memory_seed
    fake_openai.clear()
    result = await app.processor.handle_background(alice, source, QUESTION)
    assert result.reply == "ok"
    [background] = fake_openai.chat_requests()
    assert QUESTION in str(background["messages"][-1]["content"])
    assert memory_blocks(background) == []
    assert "loves tuna" not in str(background["messages"])
    stored = await app.channels.get(result.channel_id)
    assert stored is not None and stored.kind is ChannelKind.BACKGROUND
    assert stored.memory_seed is False or legacy_row


async def test_the_dmn_states_its_inputs_portrait_recent_episodes_new_facts(
        make_app: AppFactory, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await make_app()
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(msg("My marathon in Lyon is in April", clock=clock))
    await app.processor.drain()
    alice = await app.persons.find("alice")
    assert alice is not None and app.runner is not None
    await app.services.portraits.save(alice.id, "Alice runs marathons.", "seed", clock.now())
    await app.facts.add(NewFact(alice.id, "user_specific", FACT, "user"), clock.now())
    clock.advance(hours=1)
    fake_openai.responder = lambda body: ('{"facts": []}' if "DURABLE FACTS" in str(body)
                                          else None)
    extracted = await app.runner.run_job(app.runner.registry.get("extract"), alice)
    assert extracted.status == "ok", extracted.detail  # the conversation became an episode
    fake_openai.clear()
    fake_openai.reply("Alice may want to plan her Lyon trip and a cat-sitter for Miso.")
    report = await app.runner.run_job(app.runner.registry.get("dmn"), alice)
    assert report.status == "ok", report.detail
    [body] = fake_openai.chat_requests()
    sent = "\n".join(str(m["content"]) for m in body["messages"])
    assert memory_blocks(body) == []  # nothing pulled in by the user-facing recall …
    assert "Alice runs marathons." in sent  # … the portrait,
    assert "Lyon" in sent  # the recent episode,
    assert FACT in sent  # and the new fact are stated explicitly

    # The next run with nothing new does not call the model; a fact learned since is new.
    clock.advance(hours=1)
    fake_openai.clear()
    again = await app.runner.run_job(app.runner.registry.get("dmn"), alice)
    assert again.status == "skipped" and fake_openai.chat_requests() == []
    await app.facts.add(NewFact(alice.id, "place", "Alice trains in the Parc de la Tête d'Or",
                                "user"), clock.now())
    fake_openai.reply("Alice trains in a park.")
    third = await app.runner.run_job(app.runner.registry.get("dmn"), alice)
    assert third.status == "ok", third.detail
    [body] = fake_openai.chat_requests()
    sent = "\n".join(str(m["content"]) for m in body["messages"])
    assert "Parc de la Tête d'Or" in sent and FACT not in sent  # only what is new
