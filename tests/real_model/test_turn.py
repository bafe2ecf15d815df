"""A full turn with the real embedded model, and memory across two runs of the app."""

from __future__ import annotations

from strata.app.compose import App
from strata.bot.embedded import EMBEDDED_DIM
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.types import InboundMessage, Role


def said(text: str, clock: ManualClock, user: str = "alice") -> InboundMessage:
    return InboundMessage(platform="console", room_id=f"{user}/default", sender_id=user,
                          sender_name=user, text=text, ts=clock.now())


async def test_the_embedded_model_was_started_and_announced(
        lane: tuple[Settings, list[str]]) -> None:
    settings, notices = lane
    assert settings.llm.base_url.startswith("http://127.0.0.1:")
    # EMBEDDED_DIM is what `strata db migrate` gives a new database before the first chat.
    assert settings.embed.dim == EMBEDDED_DIM == 384 and settings.llm.context_tokens == 4096
    # One line says what runs; the chat model loads on the first request that needs it, and
    # one more line says so then.
    assert "SmolLM2-135M-Instruct" in notices[0] and "384 dims" in notices[0]
    assert "loaded when a reply or job first needs it" in notices[0]
    assert all(n.startswith("loaded SmolLM2-135M-Instruct") and "4,096-token window" in n
               for n in notices[1:]) and len(notices) <= 2, notices
    assert settings.bot.max_tool_rounds == 2  # configured: kept (the default is off)


async def test_a_turn_is_answered_and_stored(lane_app: App, lane_clock: ManualClock) -> None:
    result = await lane_app.processor.handle(said("Hi! My name is Alice.", lane_clock))
    assert result is not None and not result.failed and result.reply.strip()
    person = await lane_app.persons.find("alice")
    assert person is not None
    rows = await lane_app.transcript.for_owner(person.id)
    assert [r.role for r in rows] == [Role.USER, Role.ASSISTANT]
    assert rows[1].content == result.reply


async def test_a_later_run_recalls_what_an_earlier_run_was_told(
        lane_settings: Settings, lane_clock: ManualClock) -> None:
    first = await App.create(lane_settings, clock=lane_clock)
    try:
        told = await first.processor.handle(
            said("I adopted a beagle called Pepper last week.", lane_clock))
        assert told is not None and not told.failed
        await first.processor.drain()
    finally:
        await first.close()
    lane_clock.advance(days=2)
    second = await App.create(lane_settings, clock=lane_clock)
    try:
        person = await second.persons.find("alice")
        assert person is not None and second.recall is not None
        # The earlier run's words are found by the real embedder and keyword search (the
        # answer's prose is not asserted: a 135M model may get it wrong).
        found = await second.recall.search(person.id, "What is the name of my beagle?",
                                           lane_clock.now())
        assert any("Pepper" in item.text for item in found.items), found
        answer = await second.processor.handle(
            said("What is the name of my beagle?", lane_clock))
        assert answer is not None and not answer.failed and answer.reply.strip()
    finally:
        await second.close()
