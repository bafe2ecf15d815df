"""The hypothetical turn (`strata.bot.hypothetical`, issue 37 item 1) over real HTTP to the
fake model server, on a real database: with `[recall] hypothetical` on, a question asked in
other words than were said brings back the person's line; the model's line is only a search
aid (never stored, never quoted); it is cached per owner and question; only questions get
one; and a model that hangs, fails or answers with a question leaves recall to the question
alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from strata.app.compose import App
from strata.bot.hypothetical import HypotheticalTurn, asks, clean_line
from strata.core.clock import ManualClock
from strata.core.config import load_settings
from strata.core.types import InboundMessage
from tests.conftest import strata_env
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import channel, filler, person, turns

BEAGLE = "We finally adopted a beagle puppy, we call him Biscuit."
LINE = "We adopted a puppy, we call him Rex."
QUESTION = "What is the name of my dog?"


@pytest.fixture
async def hinted_app(fake_openai: FakeOpenAI, db_target: Path | str,
                     clock: ManualClock) -> AsyncIterator[App]:
    env = strata_env(fake_openai, db_target)
    env["STRATA_RECALL_HYPOTHETICAL"] = "true"
    # The dog bridge finds "beagle" for "my dog" on its own: the line is measured without it.
    env["STRATA_RECALL_FACT_BRIDGES"] = "false"
    application = await App.create(load_settings(None, env=env), clock=clock)
    yield application
    await application.close()


def inbound(text: str, clock: ManualClock) -> InboundMessage:
    return InboundMessage(platform="console", room_id="ada/default", sender_id="ada",
                          sender_name="ada", text=text, ts=clock.now())


async def _remembers_the_beagle(app: App, clock: ManualClock) -> int:
    """Ada told of her beagle weeks ago in another chat of hers, among other turns."""
    ada = await person(app.db, "ada", clock)
    old = await channel(app.db, ada, "ada/old", clock)
    await turns(app.db, old, ada, [filler(i) for i in range(30)], clock, minutes=2)
    await turns(app.db, old, ada, [BEAGLE], clock, minutes=2)
    await turns(app.db, old, ada, [filler(i) for i in range(30, 60)], clock, minutes=2)
    assert app.row_indexer is not None
    await app.row_indexer.index_all()
    clock.advance(days=20)
    return ada.id


async def test_the_line_brings_back_what_the_person_said_and_is_never_stored(
        hinted_app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    owner = await _remembers_the_beagle(hinted_app, clock)
    fake_openai.reply(LINE, "Biscuit, your beagle.")
    result = await hinted_app.processor.handle(inbound(QUESTION, clock))
    await hinted_app.processor.drain()
    assert result is not None and result.reply == "Biscuit, your beagle."
    [record] = await hinted_app.recall_log.recent(owner)
    assert record.block is not None and BEAGLE in record.block, record.block
    assert "Rex" not in record.block
    first, reply = fake_openai.chat_requests()[:2]
    assert QUESTION in str(first["messages"][-1]["content"])  # the line, asked before recall
    assert BEAGLE in str(reply["messages"])  # the turn's prompt holds the recalled line
    rows = await hinted_app.transcript.for_owner(owner)
    assert not any("Rex" in r.content for r in rows)  # the guess is stored nowhere
    # Asked again: the line comes from the cache, the model only answers the turn.
    fake_openai.clear()
    clock.advance(minutes=5)
    await hinted_app.processor.handle(inbound(QUESTION, clock))
    assert len(fake_openai.chat_requests()) == 1


async def test_a_question_memory_answers_in_its_own_words_costs_no_line(
        hinted_app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    owner = await _remembers_the_beagle(hinted_app, clock)
    await hinted_app.processor.handle(inbound("What did we call the beagle puppy?", clock))
    assert len(fake_openai.chat_requests()) == 1  # the reply only: no line was needed
    [record] = await hinted_app.recall_log.recent(owner)
    assert record.block is not None and BEAGLE in record.block


async def test_a_statement_gets_no_line(hinted_app: App, fake_openai: FakeOpenAI,
                                        clock: ManualClock) -> None:
    await hinted_app.processor.handle(inbound("I repainted the hallway today.", clock))
    assert len(fake_openai.chat_requests()) == 1  # the reply only
    assert asks("so, where did I park?") and asks("Do you remember my sister")
    assert not asks("I went to Porto.")


async def test_the_line_fails_open(app: App, fake_openai: FakeOpenAI) -> None:
    writer = HypotheticalTurn(lambda _owner: app.chat, seconds=0.3)
    fake_openai.fail_next("hang", path="chat")
    assert await writer.line(1, QUESTION) is None  # no line in time: the question alone
    fake_openai.fail_next("status", status=400, path="chat")
    assert await writer.line(1, QUESTION) is None  # a model error: the same
    # Neither was remembered: the next turn asks again, and gets a line.
    fake_openai.reply(LINE)
    assert await writer.line(1, QUESTION) == LINE
    # Cached per owner and question: another person's same question asks the model again.
    fake_openai.clear()
    fake_openai.reply("My dog is called Max.")
    assert await writer.line(1, QUESTION) == LINE
    assert await writer.line(2, QUESTION) == "My dog is called Max."
    assert len(fake_openai.chat_requests()) == 1


async def test_an_unusable_answer_is_no_line_and_is_not_asked_again(
        app: App, fake_openai: FakeOpenAI) -> None:
    writer = HypotheticalTurn(lambda _owner: app.chat, seconds=5)
    fake_openai.reply("What dog do you mean?")
    assert await writer.line(1, QUESTION) is None
    assert await writer.line(1, QUESTION) is None
    assert len(fake_openai.chat_requests()) == 1
    assert clean_line('Line: "I drive a red Fiat."\nAnything else?') == "I drive a red Fiat."
    assert clean_line("  \n ") == ""
