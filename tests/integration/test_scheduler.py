"""The turn scheduler in one process, on the real processor, database and fake model: queued
turns run in order per channel with later messages out of earlier prompts, and a turn whose
reply was stored before a crash is shown from the transcript without asking the model again,
and a queued entry is run as the processor says it stands now.
(Several processes and kills: test_turn_takeover.py.)"""

from __future__ import annotations

from strata.adapters.runtime import ReplyOps
from strata.app.compose import App
from strata.bot.scheduler import TurnScheduler
from strata.core.clock import ManualClock
from strata.core.types import InboundMessage, Intake, NewRow, ReplyKey, Role
from strata.memory.coordination.turn_queue import QueuedTurn
from tests.fakes.openai_server import FakeOpenAI, last_user_text

from .test_turns import msg


class Room:
    """A platform's reply side that records what each room was shown."""

    platform = "console"

    def __init__(self) -> None:
        self.shown: list[tuple[str, str]] = []

    def room(self, msg: InboundMessage, reply_to: str | None,
             once: ReplyKey | None = None) -> ReplyOps:
        async def send(text: str) -> str:
            self.shown.append((msg.room_id, text))
            return str(len(self.shown))

        return ReplyOps(send=send, limit=4096)


async def queued_entry(app: App, line: InboundMessage) -> QueuedTurn:
    """Submit `line` and give its queue entry."""
    turns = app.turns()
    assert await turns.submit(line) is Intake.QUEUED
    channel = await app.channels.by_ref("console", line.room_id)
    assert channel is not None
    [entry] = await turns.queue.for_channel(channel.id)
    return entry


async def run_queued(scheduler: TurnScheduler, room: Room) -> None:
    scheduler.attach(room)
    try:
        await scheduler.idle(room.platform)
    finally:
        await scheduler.detach(room, 5)


async def test_queued_turns_run_in_order_and_later_ones_stay_out_of_earlier_prompts(
    app: App, fake_openai: FakeOpenAI, clock: ManualClock,
) -> None:
    turns = app.turns()
    for n, text in enumerate(("one", "two", "three")):
        assert await turns.submit(msg(text, clock=clock, message_id=f"m{n}")) is Intake.QUEUED
    room = Room()
    await run_queued(turns, room)
    assert [text for _, text in room.shown] == [
        "You said: one", "You said: two", "You said: three"]
    prompts = fake_openai.chat_requests()
    assert [last_user_text(p) for p in prompts] == ["one", "two", "three"]
    assert "two" not in str(prompts[0]["messages"]) and "three" not in str(
        prompts[1]["messages"])


async def test_a_reply_stored_before_a_crash_is_shown_without_asking_the_model(
    app: App, fake_openai: FakeOpenAI, clock: ManualClock,
) -> None:
    turns = app.turns()
    line = msg("what did I say?", clock=clock, message_id="m1")
    queued = await queued_entry(app, line)
    # The process that ran the turn stored its reply and died before showing it.
    await app.transcript.append([NewRow(queued.channel_id, None, clock.now(), "user",
                                        Role.ASSISTANT, "You said it twice.", queued.turn_id)])
    room = Room()
    await run_queued(turns, room)
    assert [text for _, text in room.shown] == ["You said it twice."]
    assert fake_openai.chat_requests() == []
    assert await turns.submit(line) is Intake.RECORDED  # delivered again: answered already


async def test_the_scheduler_asks_the_processor_what_a_queued_turn_is_now(
    app: App, clock: ManualClock,
) -> None:
    """A queued entry is run as the processor says it stands now: its person and channel as
    stored, or nothing once the person was forgotten (a wipe in another process after this
    one read the queue)."""
    entry = await queued_entry(app, msg("remember the cat", clock=clock, message_id="m1"))
    accepted = await app.processor.queued(entry)
    assert accepted is not None
    assert (accepted.turn_id, accepted.channel.id, accepted.person.id, accepted.stored) == (
        entry.turn_id, entry.channel_id, entry.person_id, True)
    await app.forgetter.wipe(entry.person_id)
    assert await app.processor.queued(entry) is None
