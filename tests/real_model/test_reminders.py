"""Reminders on the default install's path: the embedded model offered no tools (as
`strata.bot.embedded` sets it unless configured), "remind me …" read from the words and
delivered, and a real reply that claims nothing no tool did."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from strata.app.compose import App
from strata.bot.reply_checks import check_reply
from strata.core.clock import ManualClock
from strata.core.config import Settings
from tests.integration.test_remind_words import delivered_after
from tests.integration.test_reminders import Inbox

from .test_turn import said


@pytest.fixture
async def default_app(lane_settings: Settings,
                      lane_clock: ManualClock) -> AsyncIterator[tuple[App, Inbox]]:
    # The lane offers tools to measure the model; the default install offers none.
    settings = lane_settings.model_copy(update={
        "bot": lane_settings.bot.model_copy(update={"max_tool_rounds": 0})})
    application = await App.create(settings, clock=lane_clock)
    inbox = Inbox()
    application.outbound.register("console", inbox.send)
    yield application, inbox
    await application.close()


async def test_remind_me_in_two_minutes_arrives_on_the_default_path(
        default_app: tuple[App, Inbox], lane_clock: ManualClock) -> None:
    application, inbox = default_app
    assert application.runner is not None
    result = await application.processor.handle(
        said("remind me in 2 minutes to stretch", lane_clock))
    assert result is not None and not result.failed
    assert result.reply.startswith("Reminder #1 set for Mon 5 Jan 09:02 (UTC): stretch.")
    assert await delivered_after(application, lane_clock, inbox, 2) == [
        ("alice/default", "⏰ Reminder: stretch")]


async def test_a_real_reply_claims_no_reminder_it_did_not_set(
        default_app: tuple[App, Inbox], lane_clock: ManualClock) -> None:
    application, _ = default_app
    # No time the grammar reads: the real model answers, with no tools to call.
    result = await application.processor.handle(
        said("Please remind me someday to call my mum.", lane_clock))
    assert result is not None and not result.failed and result.reply.strip()
    person = await application.persons.find("alice")
    assert person is not None
    assert await application.services.reminders.upcoming(person.id) == []
    # Whatever the model wrote, what reached the person claims no action and echoes nothing.
    assert check_reply(result.reply, (), [application.settings.bot.persona]).caught == ()
