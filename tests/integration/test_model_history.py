"""What a turn's prompt carries of the channel's history (`strata.bot.history_view`): not the
bot's code-written replies, not its earlier answers to the person's questions about themselves
where recall runs (recall brings the person's own words instead); the transcript keeps
everything."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.types import Role, RowKind
from tests.fakes.openai_server import FakeOpenAI

from .test_remind_words import no_tools
from .test_turns import msg

WRONG = "My job is to help people as a software engineer at a bank."


def prompt_text(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content") or "" for m in body["messages"])


def history_of(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The request's user and assistant messages before its last one (the message)."""
    return [(m["role"], m.get("content") or "") for m in body["messages"][:-1]
            if m["role"] in ("user", "assistant")]


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[App]:
    application = await App.create(no_tools(settings), clock=clock)
    yield application
    await application.close()


async def say(app: App, clock: ManualClock, text: str) -> str:
    clock.advance(minutes=1)
    result = await app.processor.handle(msg(text, clock=clock))
    assert result is not None and not result.failed
    return result.reply


async def test_a_code_written_confirmation_is_not_in_the_models_history(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    confirmed = await say(app, clock, "remind me in 2 minutes to stretch")
    assert confirmed.startswith("Reminder #1 set for")
    assert fake_openai.chat_requests() == []  # code, not the model, answered
    fake_openai.reply("Noted, a pharmacist.")
    await say(app, clock, "I work as a pharmacist")
    [body] = fake_openai.chat_requests()
    # Neither the confirmation nor the request it answered is shown as the conversation:
    # the model never sees a "Reminder #1 set for …" line as its own words to copy.
    assert history_of(body) == []
    assert "Reminder #1 set" not in prompt_text(body)
    # The stored transcript keeps every row.
    rows = await app.transcript.for_channel(1)
    said = [r.content for r in rows if r.kind is RowKind.MESSAGE]
    assert said == ["remind me in 2 minutes to stretch", confirmed, "I work as a pharmacist",
                    "Noted, a pharmacist."]


async def test_the_bots_answer_about_the_person_is_not_shown_again(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    fake_openai.reply("Good to know.", WRONG, "You are a pharmacist.")
    await say(app, clock, "I'm a pharmacist, mostly night shifts at the hospital.")
    assert await say(app, clock, "What is my job?") == WRONG
    await say(app, clock, "What is my job?")
    body = fake_openai.chat_requests()[-1]
    # The earlier wrong answer is gone with the question it answered; the person's own line
    # is there (in the history or in recall).
    assert WRONG not in prompt_text(body)
    assert "I'm a pharmacist, mostly night shifts" in prompt_text(body)
    assert history_of(body) == [
        ("user", "I'm a pharmacist, mostly night shifts at the hospital."),
        ("assistant", "Good to know.")]
    rows = await app.transcript.for_channel(1)
    assert [r.content for r in rows if r.role is Role.ASSISTANT] == [
        "Good to know.", WRONG, "You are a pharmacist."]


async def test_other_exchanges_stay_in_the_history(
        app: App, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """A question that is not about the person, and a statement, keep their answers."""
    fake_openai.reply("Paris.", "Nice.", "ok")
    await say(app, clock, "What is the capital of France?")
    await say(app, clock, "I like my new bike.")
    await say(app, clock, "thanks")
    body = fake_openai.chat_requests()[-1]
    assert history_of(body) == [
        ("user", "What is the capital of France?"), ("assistant", "Paris."),
        ("user", "I like my new bike."), ("assistant", "Nice.")]


async def test_without_recall_the_answer_stays(
        settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """Where recall does not run, the history is all the model has of the exchange."""
    off = no_tools(settings)
    off = off.model_copy(update={"recall": off.recall.model_copy(update={"enabled": False})})
    application = await App.create(off, clock=clock)
    try:
        fake_openai.reply("You are a pharmacist.", "ok")
        await say(application, clock, "What is my job?")
        await say(application, clock, "and my name?")
        body = fake_openai.chat_requests()[-1]
        assert history_of(body) == [("user", "What is my job?"),
                                    ("assistant", "You are a pharmacist.")]
    finally:
        await application.close()
