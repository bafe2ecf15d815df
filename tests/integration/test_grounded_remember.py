"""The model's `remember` and `correct_memory` keep only what the person said: the text is
checked against the person's own recent lines (not the bot's, not a question) before it is
stored, and a refusal is counted by reason; `/remember` keeps the person's own words as
typed."""

from __future__ import annotations

from strata.app.compose import App
from strata.bot.memory_tools import REMEMBER_LAYER
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, RowKind
from tests.fakes.openai_server import FakeOpenAI, Reply

from .test_memory_controls import say
from .test_turns import msg


async def facts_of(app: App, user: str = "alice") -> list[str]:
    person = await app.persons.find(user)
    assert person is not None
    return [f.text for f in await app.facts.repo.for_owner(person.id)]


async def tool_results(app: App) -> list[str]:
    person = await app.persons.find("alice")
    assert person is not None
    return [r.content for r in await app.transcript.for_owner(person.id)
            if r.kind is RowKind.TOOL_RESULT]


async def test_a_fact_the_person_said_is_kept_citing_their_line(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    fake_openai.reply("Noted.")
    await say(app, clock, "I'm a pharmacist, mostly night shifts at the hospital.")
    fake_openai.reply(Reply(tool_calls=[("remember", {"text": "Works as a pharmacist at "
                                                      "the hospital", "kind": "user_specific"})]),
                      "ok")
    await say(app, clock, "please remember that")
    assert await facts_of(app) == ["Works as a pharmacist at the hospital"]
    person = await app.persons.find("alice")
    assert person is not None
    [fact] = await app.facts.repo.for_owner(person.id)
    sources = await app.facts.repo.sources(fact.id)
    cited = [await app.transcript.get(i) for i in sources.row_ids]
    assert [r.content for r in cited if r is not None] == [
        "I'm a pharmacist, mostly night shifts at the hospital."]


async def test_a_fact_nobody_said_is_refused_counted_and_not_claimed(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    fake_openai.reply(Reply(tool_calls=[("remember", {"text": "Enjoys hiking, cooking and "
                                                      "video games"})]),
                      "I've saved that you enjoy hiking.")
    result = await say(app, clock, "The weather is grey again.")
    assert await facts_of(app) == []
    [tool] = await tool_results(app)
    assert "nothing was stored: not in the person's words" in tool
    # The reply may not say it saved what was refused.
    assert "saved" not in result.reply and "did not store" in result.reply
    person = await app.persons.find("alice")
    assert person is not None
    counts = await app.repos.refusals.for_owner(person.id)
    assert [(c.layer, c.reason, c.count) for c in counts] == [
        (REMEMBER_LAYER, "not in the person's words", 1)]


async def test_the_bots_words_and_the_persons_question_ground_nothing(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    fake_openai.reply("You might enjoy hiking in the Alps, lots of people love hiking there.")
    await say(app, clock, "Do I like hiking in the Alps?")
    fake_openai.reply(Reply(tool_calls=[("remember", {"text": "Likes hiking in the Alps"})]),
                      "ok")
    await say(app, clock, "ok")
    assert await facts_of(app) == []


async def test_another_persons_line_in_a_room_grounds_nothing(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    """In a shared room only the speaker's own lines count."""
    def in_room(text: str, user: str) -> InboundMessage:
        clock.advance(seconds=30)
        return msg(text, user=user, clock=clock, is_private=False, room_id="group",
                   room_name="group")

    fake_openai.reply("Nice.")
    await app.processor.handle(in_room("I keep bees on my roof.", "bob"))
    fake_openai.reply(Reply(tool_calls=[("remember", {"text": "Keeps bees on the roof"})]), "ok")
    asked = in_room("remember that", "alice")
    await app.processor.handle(asked)
    _, room = await app.processor.resolve(asked)
    rows = await app.transcript.for_channel(room.id)
    [tool] = [r.content for r in rows if r.kind is RowKind.TOOL_RESULT]
    assert "nothing was stored" in tool
    assert await app.facts.repo.for_owner(room.owner_id) == []


async def test_a_correction_nobody_said_leaves_the_old_fact(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    await say(app, clock, "/remember I live in Porto")
    [kept] = await facts_of(app)
    person = await app.persons.find("alice")
    assert person is not None
    [fact] = await app.facts.repo.for_owner(person.id)
    fake_openai.reply(Reply(tool_calls=[("correct_memory", {"fact_id": fact.id,
                                                            "text": "Lives in Berlin"})]), "ok")
    await say(app, clock, "that one is old")
    assert await facts_of(app) == [kept]
    fake_openai.reply(Reply(tool_calls=[("correct_memory", {"fact_id": fact.id,
                                                            "text": "Lives in Lyon"})]), "ok")
    await say(app, clock, "No, I moved to Lyon in May.")
    assert await facts_of(app) == ["Lives in Lyon"]


async def test_slash_remember_keeps_the_words_as_typed(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    result = await say(app, clock, "/remember my locker code is 4412")
    assert result.reply.startswith("Kept as fact #")
    assert await facts_of(app) == ["my locker code is 4412"]
    assert fake_openai.chat_requests() == []  # no model read it
    assert (await say(app, clock, "/remember")).reply.startswith("Say what to keep")
    await say(app, clock, "/pause")
    assert "kept nothing" in (await say(app, clock, "/remember I like tea")).reply
    assert await facts_of(app) == ["my locker code is 4412"]
