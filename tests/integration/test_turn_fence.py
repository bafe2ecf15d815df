"""A stale turn holder writes nothing after another process took its channel over.

Process one claims a channel (the lease `turn:<channel id>`) and waits on its model; it stalls
past its lease (the injected clock moves on), process two takes the channel over and answers
the turn; then one's model answers. Every write of one's turn checks the lease's fence in the
write's own transaction, so one stores no reply, removes no queue entry and shows nothing;
two's reply is the one kept. Each process is its own `App` with its own `Database` over one
SQLite file or one PostgreSQL database, as separate processes would be; they share the clock
(which is how a lease runs out here) and one's model is a fake of its own, whose closed gate
is the stall. Killed holders (SIGKILL, real processes): test_turn_takeover.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.errors import WriteRefusedError
from strata.core.identity import ProcessIdentity
from strata.core.types import Intake
from tests.conftest import TEST_DIM
from tests.fakes.openai_server import FakeOpenAI
from tests.integration.conftest import AppFactory

from .test_scheduler import Room, run_queued
from .test_turn_takeover import until
from .test_turns import msg

TEXT = "please remember my dentist is on Friday"


@pytest.fixture
async def stalling(settings: Settings, clock: ManualClock) -> AsyncIterator[
        tuple[App, FakeOpenAI]]:
    """Process one: an app whose model is a fake of its own, answering 'stale answer'."""
    with FakeOpenAI(dim=TEST_DIM) as model:
        model.responder = lambda body: "stale answer"
        own = settings.model_copy(update={
            "llm": settings.llm.model_copy(update={"base_url": model.base_url})})
        app = await App.create(own, clock=clock, identity=ProcessIdentity.mint("one"))
        try:
            yield app, model
        finally:
            await app.close()


async def assistant_rows(app: App) -> list[str]:
    rows = await app.db.fetchall(
        "SELECT content FROM transcript WHERE role = 'assistant' ORDER BY id")
    return [str(r[0]) for r in rows]


def past_the_lease(app: App) -> timedelta:
    return timedelta(seconds=app.settings.bot.turn_lease_seconds + 1)


async def test_a_queued_turn_taken_over_mid_reply_is_stored_and_shown_once(
        make_app: AppFactory, stalling: tuple[App, FakeOpenAI], clock: ManualClock) -> None:
    one, slow = stalling
    two = await make_app()
    slow.close_gate()
    assert await one.turns().submit(msg(TEXT, clock=clock, message_id="m1")) is Intake.QUEUED
    shown_one = Room()
    one.turns().attach(shown_one)
    await until("process one to ask its model", lambda: slow.gated)
    assert await one.db.fetchval(  # one holds the channel
        "SELECT holder FROM leases WHERE name LIKE 'turn:%'") == one.turns().claims.holder

    clock.advance(past_the_lease(one))  # one stalls past its lease
    shown_two = Room()
    await run_queued(two.turns(), shown_two)  # two takes the channel and answers
    assert [text for _, text in shown_two.shown] == [f"You said: {TEXT}"]

    slow.open_gate()  # one's model answers after the takeover
    await one.turns().idle("console")
    await one.turns().detach(shown_one, 5)

    assert shown_one.shown == []  # one shows nothing
    assert await assistant_rows(one) == [f"You said: {TEXT}"]  # and stores nothing
    assert await one.db.fetchval("SELECT count(*) FROM turn_queue") == 0
    assert await one.db.fetchval("SELECT count(*) FROM leases") == 0  # two gave it back


async def test_a_console_turn_taken_over_mid_reply_is_refused(
        make_app: AppFactory, stalling: tuple[App, FakeOpenAI], clock: ManualClock) -> None:
    """A turn run at once (`TurnProcessor.handle`, the console's path): one's late reply is
    refused with `WriteRefusedError` and two's turn in the same channel is kept whole."""
    one, slow = stalling
    two = await make_app()
    slow.close_gate()
    first = asyncio.create_task(one.processor.handle(msg("hello from before", clock=clock)))
    await until("process one to ask its model", lambda: slow.gated)
    clock.advance(past_the_lease(one))
    answered = await two.processor.handle(msg(TEXT, clock=clock))
    assert answered is not None and answered.reply == f"You said: {TEXT}"
    slow.open_gate()
    with pytest.raises(WriteRefusedError):
        await asyncio.wait_for(first, 30)
    assert await assistant_rows(one) == [f"You said: {TEXT}"]
    user_rows = await one.db.fetchall(
        "SELECT content FROM transcript WHERE role = 'user' ORDER BY id")
    # One stored the person's message while it held the channel; that stays.
    assert [str(r[0]) for r in user_rows] == ["hello from before", TEXT]
