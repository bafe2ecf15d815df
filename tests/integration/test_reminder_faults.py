"""Reminders whose delivery fails: attempts, backoff, a dead state the person is told about
once, no starvation of new reminders, and at most one duplicate after a crash mid-delivery.

Real database, the fake model server, a recording outbound sender, an injected clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.identity import ProcessIdentity
from strata.memory.store.services.reminders import Reminder

from .test_turns import msg

NINE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # the clock fixture's start


class Platform:
    """An outbound sender that refuses texts containing `refuse` and records the rest."""

    def __init__(self, refuse: str = "\0") -> None:
        self.refuse = refuse
        self.sent: list[str] = []
        self.refused: list[str] = []

    async def send(self, room: str, text: str) -> list[str]:
        if self.refuse in text:
            self.refused.append(text)
            raise RuntimeError("400 Bad Request: chat not found")
        self.sent.append(text)
        return [str(len(self.sent))]


@pytest.fixture
async def apps() -> AsyncIterator[list[App]]:
    opened: list[App] = []
    yield opened
    for a in opened:
        await a.close()


async def open_app(apps: list[App], settings: Settings, clock: ManualClock,
                   platform: Platform, **cognition: object) -> App:
    s = settings.model_copy(update={
        "episodes": settings.episodes.model_copy(update={"use_model": False}),
        "cognition": settings.cognition.model_copy(update=cognition)})
    # Each opening is a new process (a restart or a crash): a new identity, as after a real one.
    app = await App.create(s, clock=clock, identity=ProcessIdentity.mint())
    apps.append(app)
    app.outbound.register("console", platform.send)
    return app


async def remind(app: App, clock: ManualClock, text: str, due: datetime) -> Reminder:
    """A reminder of alice's (she has said hello once) in her console channel."""
    person = await app.persons.find("alice")
    if person is None:
        await app.processor.handle(msg("hello", clock=clock))
        await app.processor.drain()
        person = await app.persons.find("alice")
    assert person is not None
    channel_id = await app.db.fetchval("SELECT id FROM channels WHERE room_ref = 'alice/default'")
    return await app.services.reminders.add(
        owner_id=person.id, channel_id=channel_id, kind="reminder", text=text, due_at=due,
        timezone="UTC", now=clock.now())


async def test_a_reminder_that_keeps_failing_backs_off_then_dies_and_the_person_is_told_once(
        apps: list[App], settings: Settings, clock: ManualClock) -> None:
    platform = Platform(refuse="⏰ Reminder: water the plants")
    app = await open_app(apps, settings, clock, platform, reminder_retry_minutes=1.0,
                         reminder_retry_max_minutes=3.0, reminder_max_attempts=4)
    assert app.runner is not None
    r = await remind(app, clock, "water the plants", NINE + timedelta(minutes=30))
    clock.set(NINE + timedelta(minutes=30))
    attempts_at = []
    for _ in range(12):  # a tick a minute for 12 minutes
        before = len(platform.refused)
        await app.runner.tick()
        if len(platform.refused) > before:
            attempts_at.append(int((clock.now() - NINE).total_seconds() // 60))
        clock.advance(minutes=1)
    # Waits of 1, 2, then 3 minutes (capped); the 4th failure is the last.
    assert attempts_at == [30, 31, 33, 36]
    got = await app.services.reminders.get(r.id)
    assert got is not None and got.state == "dead" and got.attempts == 4
    assert "chat not found" in (got.last_error or "")
    notices = [t for t in platform.sent if "could not deliver" in t]
    assert len(notices) == 1 and "water the plants" in notices[0]
    rows = [row for row in await app.transcript.for_channel(r.channel_id)
            if "could not deliver" in row.content]
    assert len(rows) == 1  # the next conversation sees it too


async def test_broken_reminders_never_starve_a_new_one(
        apps: list[App], settings: Settings, clock: ManualClock) -> None:
    platform = Platform(refuse="broken")
    app = await open_app(apps, settings, clock, platform)
    assert app.runner is not None
    for i in range(100):
        await remind(app, clock, f"broken {i}", NINE)
    await app.runner.tick()
    assert len(platform.refused) == 100
    await remind(app, clock, "take the cake out", NINE + timedelta(minutes=5))
    clock.set(NINE + timedelta(minutes=5))
    await app.runner.tick()
    assert "⏰ Reminder: take the cake out" in platform.sent


class AcceptThenCrash(Platform):
    """The platform accepts each message, then the process dies before it is marked sent."""

    def __init__(self) -> None:
        super().__init__()
        self.accepted = asyncio.Event()

    async def send(self, room: str, text: str) -> list[str]:
        self.sent.append(text)
        self.accepted.set()
        await asyncio.Event().wait()  # the process is killed here
        return []


async def crash_during_delivery(apps: list[App], settings: Settings, clock: ManualClock,
                                platform: AcceptThenCrash) -> None:
    app = await open_app(apps, settings, clock, platform)
    assert app.runner is not None
    platform.accepted.clear()
    tick = asyncio.create_task(app.runner.tick())
    await platform.accepted.wait()
    tick.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tick
    await app.close()
    apps.remove(app)


async def set_then_stop(apps: list[App], settings: Settings, clock: ManualClock,
                        text: str) -> Reminder:
    """A reminder for 09:10 set by a process that then stops; the clock moves to 09:10."""
    first = await open_app(apps, settings, clock, Platform())
    r = await remind(first, clock, text, NINE + timedelta(minutes=10))
    await first.close()
    apps.remove(first)
    clock.set(NINE + timedelta(minutes=10))
    return r


async def restart_and_tick(apps: list[App], settings: Settings,
                           clock: ManualClock) -> tuple[Platform, App]:
    """A new process with a working platform, ticking once a minute for three minutes."""
    platform = Platform()
    app = await open_app(apps, settings, clock, platform)
    assert app.runner is not None
    for _ in range(3):
        await app.runner.tick()
        clock.advance(minutes=1)
    return platform, app


async def test_a_crash_between_accept_and_delivered_costs_at_most_one_duplicate(
        apps: list[App], settings: Settings, clock: ManualClock) -> None:
    """At-least-once delivery: a send the process could not confirm is repeated once; a
    second crash in the same place is not repeated again."""
    r = await set_then_stop(apps, settings, clock, "call the plumber")
    crashing = AcceptThenCrash()
    await crash_during_delivery(apps, settings, clock, crashing)  # the original send
    await crash_during_delivery(apps, settings, clock, crashing)  # its one repeat
    assert crashing.sent == ["⏰ Reminder: call the plumber"] * 2

    clock.advance(minutes=1)
    platform, app = await restart_and_tick(apps, settings, clock)
    assert platform.sent == []  # no second duplicate
    got = await app.services.reminders.get(r.id)
    assert got is not None and got.state == "delivered"


async def test_one_crash_mid_delivery_is_repeated_once(
        apps: list[App], settings: Settings, clock: ManualClock) -> None:
    r = await set_then_stop(apps, settings, clock, "feed the cat")
    crashing = AcceptThenCrash()
    await crash_during_delivery(apps, settings, clock, crashing)
    platform, app = await restart_and_tick(apps, settings, clock)
    assert crashing.sent == ["⏰ Reminder: feed the cat"]
    assert platform.sent == ["⏰ Reminder: feed the cat"]  # the one duplicate
    got = await app.services.reminders.get(r.id)
    assert got is not None and got.state == "delivered"


async def test_a_recurring_reminder_that_keeps_failing_skips_to_its_next_occurrence(
        apps: list[App], settings: Settings, clock: ManualClock) -> None:
    platform = Platform(refuse="⏰ Reminder: stretch")
    app = await open_app(apps, settings, clock, platform, reminder_retry_minutes=1.0,
                         reminder_retry_max_minutes=1.0, reminder_max_attempts=2)
    assert app.runner is not None
    r = await remind(app, clock, "stretch", NINE + timedelta(minutes=30))
    await app.db.execute_write(
        "UPDATE reminders SET recurrence = 'FREQ=DAILY;BYHOUR=9;BYMINUTE=30' WHERE id = ?",
        (r.id,))
    clock.set(NINE + timedelta(minutes=30))
    for _ in range(4):
        await app.runner.tick()
        clock.advance(minutes=1)
    assert len(platform.refused) == 2
    got = await app.services.reminders.get(r.id)
    assert got is not None and got.state == "pending" and got.attempts == 0
    assert got.due_at == NINE + timedelta(days=1, minutes=30)
    notices = [t for t in platform.sent if "could not deliver" in t]
    assert len(notices) == 1 and "next one is still scheduled" in notices[0]
