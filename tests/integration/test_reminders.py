"""Reminders and scheduled prompts: set in chat by the model's tool call, delivered by the
runner at their time to the channel they came from, exactly once, late with a note after a
restart; time zones; the ambient snapshot in the prompt."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.identity import ProcessIdentity
from tests.fakes.openai_server import FakeOpenAI, Reply

from .test_turns import msg

NINE = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # the clock fixture's start (a Monday)


class Inbox:
    """An outbound sender that records what was delivered where."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def send(self, room: str, text: str) -> list[str]:
        self.sent.append((room, text))
        return [str(len(self.sent))]


@pytest.fixture
async def apps(settings: Settings, clock: ManualClock) -> AsyncIterator[list[App]]:
    opened: list[App] = []
    yield opened
    for a in opened:
        await a.close()


def quiet(settings: Settings) -> Settings:
    """Extractive episodes: after-turn work makes no model call that could take a scripted
    reply meant for a turn."""
    return settings.model_copy(
        update={"episodes": settings.episodes.model_copy(update={"use_model": False})})


async def open_app(apps: list[App], settings: Settings, clock: ManualClock) -> tuple[App, Inbox]:
    # Each opening is a new process (a restart): a new identity, as after a real one.
    app = await App.create(quiet(settings), clock=clock, identity=ProcessIdentity.mint())
    apps.append(app)
    inbox = Inbox()
    app.outbound.register("console", inbox.send)
    return app, inbox


async def test_reminder_set_in_chat_is_delivered_at_its_time_to_the_same_channel(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, inbox = await open_app(apps, settings, clock)
    assert app.runner is not None
    fake_openai.reply(
        Reply(tool_calls=[("set_reminder", {"text": "call mum", "when": "2026-01-05 10:30"})]),
        "I'll remind you at 10:30.")
    result = await app.processor.handle(msg("remind me at 10:30 to call mum", clock=clock))
    assert result is not None and result.reply == "I'll remind you at 10:30."
    tool_result = fake_openai.chat_requests()[-1]["messages"][-1]["content"]
    assert tool_result.startswith("ok: reminder #1 set for Mon 5 Jan 10:30")
    await app.processor.handle(msg("/reminders", clock=clock))

    clock.set(datetime(2026, 1, 5, 10, 29, tzinfo=UTC))
    await app.runner.tick()
    assert inbox.sent == []
    clock.set(datetime(2026, 1, 5, 10, 30, tzinfo=UTC))
    await app.runner.tick()
    assert inbox.sent == [("alice/default", "⏰ Reminder: call mum")]
    clock.advance(minutes=1)
    await app.runner.tick()
    assert len(inbox.sent) == 1
    # The delivery is part of the conversation (muted as memory): the next turn sees it.
    await app.processor.handle(msg("done, thanks", clock=clock))
    assert "⏰ Reminder: call mum" in str(fake_openai.chat_requests()[-1]["messages"])
    rows = await app.transcript.for_channel(1)
    delivered = [r for r in rows if r.content == "⏰ Reminder: call mum"]
    assert len(delivered) == 1 and delivered[0].source == "scheduled"


async def test_reminder_times_are_in_the_persons_time_zone(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, inbox = await open_app(apps, settings, clock)
    assert app.runner is not None
    answer = await app.processor.handle(msg("/timezone Europe/Paris", clock=clock))
    assert answer is not None and "Europe/Paris" in answer.reply and "10:00" in answer.reply
    bad = await app.processor.handle(msg("/timezone Mars/Olympus", clock=clock))
    assert bad is not None and "unknown time zone" in bad.reply
    # A name longer than a file name may be (the fuzz case found it): OSError from tzdata.
    for name in ("word " * 60, "\U0001f642" * 100):
        long = await app.processor.handle(msg(f"/timezone {name}", clock=clock))
        assert long is not None and "unknown time zone" in long.reply
    fake_openai.reply(
        Reply(tool_calls=[("set_reminder", {"text": "stretch", "when": "2026-01-05 11:00"})]),
        "ok")
    await app.processor.handle(msg("remind me at 11 to stretch", clock=clock))
    reminder = (await app.services.reminders.upcoming(1))[0]
    assert reminder.due_at == datetime(2026, 1, 5, 10, 0, tzinfo=UTC)  # 11:00 in Paris
    # The model sees the local time in the ambient snapshot.
    ambient = str(fake_openai.chat_requests()[0]["messages"])
    assert "Monday 05 January 2026, 10:00 (Europe/Paris)" in ambient
    clock.set(datetime(2026, 1, 5, 10, 0, tzinfo=UTC))
    await app.runner.tick()
    assert inbox.sent == [("alice/default", "⏰ Reminder: stretch")]


async def test_reminder_tool_refuses_bad_input_clearly(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, _ = await open_app(apps, settings, clock)
    fake_openai.reply(
        Reply(tool_calls=[("set_reminder", {"text": "x", "when": "yesterday-ish"}),
                          ("set_reminder", {"text": "x", "when": "2026-01-05 08:00"}),
                          ("cancel_reminder", {"id": 99})]),
        "sorry")
    await app.processor.handle(msg("remind me", clock=clock))
    results = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]
               if m["role"] == "tool"]
    assert results[0].startswith("error: cannot read the time")
    assert results[1].startswith("error: Mon 5 Jan 08:00 is in the past")
    assert results[2] == "error: there is no pending reminder #99 of this person"
    assert await app.services.reminders.upcoming(1) == []


async def test_list_and_cancel_only_touch_the_persons_own_reminders(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, _ = await open_app(apps, settings, clock)
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "alice thing",
                                                          "in_minutes": 60})]), "ok")
    await app.processor.handle(msg("remind me in an hour", user="alice", clock=clock))
    fake_openai.reply(Reply(tool_calls=[("list_reminders", {}), ("cancel_reminder", {"id": 1})]),
                      "ok")
    await app.processor.handle(msg("what reminders do I have? cancel #1", user="bob",
                                   clock=clock))
    results = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]
               if m["role"] == "tool"]
    assert results == ["no reminders or scheduled prompts",
                       "error: there is no pending reminder #1 of this person"]
    fake_openai.reply(Reply(tool_calls=[("cancel_reminder", {"id": 1})]), "ok")
    await app.processor.handle(msg("cancel it", user="alice", clock=clock))
    alice = await app.persons.find("alice")
    assert alice is not None
    assert [r.state for r in await app.services.reminders.for_owner(alice.id)] == ["cancelled"]


async def test_restart_between_due_and_delivered_delivers_exactly_once(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, _ = await open_app(apps, settings, clock)
    assert app.runner is not None
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "water the plants",
                                                          "when": "2026-01-05 09:30"})]), "ok")
    await app.processor.handle(msg("remind me at 9:30 to water the plants", clock=clock))

    # The process dies while delivering: the reminder is claimed, the send never completes.
    hung = asyncio.Event()

    async def send_hangs(room: str, text: str) -> list[str]:
        hung.set()
        await asyncio.Event().wait()
        return []

    app.outbound.register("console", send_hangs)
    clock.set(datetime(2026, 1, 5, 9, 30, tzinfo=UTC))
    tick = asyncio.create_task(app.runner.tick())
    await hung.wait()
    tick.cancel()
    with pytest.raises(asyncio.CancelledError):
        await tick
    assert [r.state for r in await app.services.reminders.for_owner(1)] == ["claimed"]
    await app.close()
    apps.remove(app)

    # A new process, an hour later.
    clock.set(datetime(2026, 1, 5, 10, 30, tzinfo=UTC))
    app2, inbox = await open_app(apps, settings, clock)
    assert app2.runner is not None
    await app2.runner.tick()
    await app2.runner.tick()
    clock.advance(minutes=5)
    await app2.runner.tick()
    assert len(inbox.sent) == 1
    room, text = inbox.sent[0]
    assert room == "alice/default"
    assert text.startswith("(Late — this was due Mon 5 Jan 09:30") and "water the plants" in text
    rows = [r for r in await app2.transcript.for_channel(1) if "water the plants" in r.content
            and r.role.value == "assistant" and r.source == "scheduled"]
    assert len(rows) == 1
    assert [r.state for r in await app2.services.reminders.for_owner(1)] == ["delivered"]


async def test_reminder_due_while_the_process_was_down_comes_late_once(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, _ = await open_app(apps, settings, clock)
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "pay rent",
                                                          "when": "2026-01-05 12:00"})]), "ok")
    await app.processor.handle(msg("remind me at noon to pay rent", clock=clock))
    await app.close()
    apps.remove(app)
    clock.set(datetime(2026, 1, 6, 8, 0, tzinfo=UTC))
    app2, inbox = await open_app(apps, settings, clock)
    assert app2.runner is not None
    for _ in range(3):
        await app2.runner.tick()
        clock.advance(minutes=1)
    assert len(inbox.sent) == 1 and inbox.sent[0][1].startswith("(Late — this was due")


async def test_no_adapter_for_the_platform_keeps_the_reminder_due(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app = await App.create(quiet(settings), clock=clock)
    apps.append(app)
    assert app.runner is not None
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "stand up",
                                                          "in_minutes": 5})]), "ok")
    await app.processor.handle(msg("remind me in 5 minutes to stand up", clock=clock))
    clock.advance(minutes=6)
    await app.runner.tick()
    assert [r.state for r in await app.services.reminders.for_owner(1)] == ["pending"]
    inbox = Inbox()
    app.outbound.register("console", inbox.send)
    await app.runner.tick()
    assert inbox.sent == [("alice/default", "⏰ Reminder: stand up")]


async def test_scheduled_prompt_recurs_as_a_muted_background_turn(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, inbox = await open_app(apps, settings, clock)
    assert app.runner is not None
    fake_openai.reply(
        Reply(tool_calls=[("schedule_prompt", {"prompt": "a summary of my day",
                                               "every": "weekday", "at": "08:00"})]),
        "Every weekday at 8.")
    await app.processor.handle(msg("every weekday at 8, a summary of my day", clock=clock))
    person = await app.persons.find("alice")
    assert person is not None
    active = person.last_active_at
    r = (await app.services.reminders.upcoming(person.id))[0]
    assert r.kind == "prompt" and r.due_at == datetime(2026, 1, 6, 8, 0, tzinfo=UTC)

    fake_openai.reply("Today: dentist at 14:00.")
    clock.set(datetime(2026, 1, 6, 8, 0, tzinfo=UTC))
    await app.runner.tick()
    assert inbox.sent == [("alice/default", "Today: dentist at 14:00.")]
    asked = [r["messages"][-1]["content"] for r in fake_openai.chat_requests()]
    assert asked.count("a summary of my day") == 1
    channels = {c.source: c for c in await app.channels.for_owner(person.id)}
    rows = await app.transcript.for_channel(channels["scheduled"].id)
    assert {row.source for row in rows} == {"scheduled"} and len(rows) == 2
    again = await app.persons.get(person.id)
    assert again is not None and again.last_active_at == active
    r = (await app.services.reminders.upcoming(person.id))[0]
    assert r.due_at == datetime(2026, 1, 7, 8, 0, tzinfo=UTC) and r.deliveries == 1
    # Friday's run is followed by Monday's, not Saturday's.
    for day in (7, 8, 9):
        clock.set(datetime(2026, 1, day, 8, 0, tzinfo=UTC))
        await app.runner.tick()
    r = (await app.services.reminders.upcoming(person.id))[0]
    assert r.due_at == datetime(2026, 1, 12, 8, 0, tzinfo=UTC) and len(inbox.sent) == 4


async def test_ambient_snapshot_in_private_prompts_and_not_in_shared_rooms(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    from strata.core.types import Location

    app, _ = await open_app(apps, settings, clock)
    await app.processor.handle(msg("at the gym", clock=clock, location=Location(48.85, 2.35)))
    fake_openai.reply(Reply(tool_calls=[("set_reminder", {"text": "buy chalk",
                                                          "when": "2026-01-05 18:00"})]), "ok")
    clock.advance(hours=2)
    await app.processor.handle(msg("remind me at 6pm to buy chalk", clock=clock))
    clock.advance(minutes=10)
    await app.processor.handle(msg("what's up?", clock=clock))
    sent = str(fake_openai.chat_requests()[-1]["messages"])
    assert "Monday 05 January 2026, 11:10 (UTC)" in sent
    assert "They last wrote 10 minutes ago" in sent
    assert "Last known location: 48.8500, 2.3500 (2 hours ago)" in sent
    assert "#1 Mon 5 Jan 18:00: buy chalk" in sent
    await app.processor.handle(msg("hello room", clock=clock, is_private=False,
                                   room_id="group", room_name="group"))
    shared = str(fake_openai.chat_requests()[-1]["messages"])
    assert "buy chalk" not in shared and "48.85" not in shared
    assert "Current time: Monday 05 January 2026, 11:10 UTC" in shared


def test_recurrence_is_dst_safe() -> None:
    from strata.core.recurrence import next_occurrence, parse_recurrence

    rec = parse_recurrence("day", "8:00")
    assert rec == "FREQ=DAILY;BYHOUR=8;BYMINUTE=0;BYSECOND=0"  # RFC 5545 RRULE text
    # Paris switches to summer time on 29 March 2026: 08:00 local is 07:00 UTC before, 06:00 after.
    before = next_occurrence(rec, "Europe/Paris", datetime(2026, 3, 28, 7, 30, tzinfo=UTC))
    after = next_occurrence(rec, "Europe/Paris", before)
    assert before == datetime(2026, 3, 29, 6, 0, tzinfo=UTC)
    assert after == datetime(2026, 3, 30, 6, 0, tzinfo=UTC)




async def test_reminder_in_a_shared_room_is_delivered_there_but_prompts_stay_private(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, inbox = await open_app(apps, settings, clock)
    assert app.runner is not None
    fake_openai.reply(Reply(tool_calls=[
        ("set_reminder", {"text": "team call", "in_minutes": 10}),
        ("schedule_prompt", {"prompt": "summarise my private notes", "at": "08:00"})]), "ok")
    await app.processor.handle(msg("remind us in 10 minutes about the team call", clock=clock,
                                   is_private=False, room_id="group", room_name="group"))
    results = [m["content"] for m in fake_openai.chat_requests()[-1]["messages"]
               if m["role"] == "tool"]
    assert results[1] == "error: schedule_prompt only works in a private chat with me"
    clock.advance(minutes=10)
    await app.runner.tick()
    assert inbox.sent == [("group", "⏰ Reminder: team call")]


async def test_tool_schemas_come_from_their_models_and_bad_arguments_are_named(
        apps: list[App], settings: Settings, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    app, _ = await open_app(apps, settings, clock)
    fake_openai.reply(
        Reply(tool_calls=[("set_reminder", {"text": "x", "in_minutes": "soon"}),
                          ("set_reminder", {"when": "2026-01-06 09:00"}),
                          ("cancel_reminder", {"id": "#7"}),
                          ("remember", {"text": "  "}),
                          ("forget_fact", {"fact_id": "#3"})]),
        "sorry")
    await app.processor.handle(msg("remind me", clock=clock))
    request = fake_openai.chat_requests()[-1]
    results = [m["content"] for m in request["messages"] if m["role"] == "tool"]
    assert results[0] == ("error: the arguments for set_reminder do not fit: in_minutes: Input "
                          "should be a valid number, unable to parse string as a number "
                          "(got 'soon')")
    assert results[1] == "error: the arguments for set_reminder do not fit: text: Field required"
    assert results[2] == "error: there is no pending reminder #7 of this person"  # "#7" read
    assert results[3].startswith("error: the arguments for remember do not fit: text: String "
                                 "should have at least 1 character")
    assert results[4] == "error: no such remembered fact"
    assert await app.services.reminders.upcoming(1) == []
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in request["tools"]}
    assert tools["set_reminder"] == {
        "type": "object", "required": ["text"], "properties": {
            "text": {"type": "string", "description": "what to remind them of"},
            "when": {"type": "string", "default": "", "description": "local YYYY-MM-DD HH:MM"},
            "in_minutes": {"type": "number",
                           "description": "instead of when: minutes from now"}}}
    assert tools["remember"]["properties"]["kind"]["enum"][0] == "user_specific"
    assert tools["list_reminders"] == {"type": "object", "properties": {}}
