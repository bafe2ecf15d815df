"""Per-kind fact decay that acts (strata.memory.rules.decay.FACT_DECAY): a faded fact is not
injected at turn zero and the decay job deletes it after its kind's grace; a long-lived kind is
still injected a year on. Real turns through the turn processor, real SQLite, the fake model server,
an injected clock."""

from __future__ import annotations

import pytest

from strata.app.compose import App
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage
from strata.memory.rules.fact_types import NewFact
from tests.fakes.openai_server import FakeOpenAI

DISCOVERY = "The Lumen jazz club in Leipzig opened a rooftop stage"
USER_FACT = "Alice's sister Beatrix lives in Lisbon and teaches violin"


def ask(text: str, clock: ManualClock) -> InboundMessage:
    return InboundMessage("console", "alice/default", "alice", text, clock.now(),
                          sender_name="alice")


async def injected(app: App, fake_openai: FakeOpenAI, clock: ManualClock, text: str) -> str:
    """The recalled-memory block the model got for `text` ("" when nothing was injected)."""
    fake_openai.clear()
    fake_openai.responder = lambda body: "ok"
    result = await app.processor.handle(ask(text, clock))
    assert result is not None and not result.failed
    request = next(r for r in fake_openai.chat_requests()
                   if text in str(r["messages"][-1]["content"]))
    return "\n".join(str(m["content"]) for m in request["messages"]
                     if m["role"] == "system" and MEMORY_PREAMBLE in str(m["content"]))


@pytest.mark.parametrize(("age_days", "recalled"), [(3, True), (120, False)])
async def test_an_old_discovery_fades_out_a_year_old_user_fact_stays(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock, age_days: int,
        recalled: bool) -> None:
    fake_openai.responder = lambda body: "ok"
    await app.processor.handle(ask("hello", clock))  # alice and her channel exist
    alice = await app.persons.find("alice")
    assert alice is not None
    user_fact = await app.facts.add(NewFact(alice.id, "user_specific", USER_FACT, "user"),
                                    clock.now())
    clock.advance(days=365 - age_days)
    discovery = await app.facts.add(NewFact(alice.id, "discovery", DISCOVERY, "research",
                                            url="https://example.org/lumen"), clock.now())
    assert user_fact.fact_id and discovery.fact_id
    clock.advance(days=age_days)

    # A fresh discovery is recalled for the question; 120 days on it is not injected …
    block = await injected(app, fake_openai, clock, "what about the Lumen jazz club rooftop?")
    assert ("rooftop stage" in block) is recalled
    # … while the user_specific fact, a year old and never recalled since, still is.
    assert "Beatrix lives in Lisbon" in await injected(
        app, fake_openai, clock, "where does my sister Beatrix live, Lisbon?")

    # The decay job's fact pass deletes the faded discovery and keeps the user fact.
    _, purged = await app.facts.repo.decay(clock.now(), alice.id)
    assert purged == (0 if recalled else 1)
    assert (await app.facts.repo.get(discovery.fact_id) is None) is not recalled
    assert await app.facts.repo.get(user_fact.fact_id) is not None
