"""Reminders and scheduled prompts, delivered by the runner. A chat sets them with the tools and
commands of `strata.bot.reminder_tools`; zones and recurrence (RFC 5545 RRULE text, computed by
dateutil) are `strata.core.recurrence`.

Delivery is claim-then-deliver (see `strata.memory.store.services.reminders`): the runner claims
a due item, records the message in the channel it came from (turn id `reminder:<id>:<due>`, so a
redelivery after a restart never stores it twice), sends it through the outbound registry to
that channel's platform, then completes it. A delivery later than `late_after_minutes` says so.
A failed delivery is retried with capped exponential backoff (`reminder_retry_minutes` …
`reminder_retry_max_minutes`); after `reminder_max_attempts` a one-off reminder is dead and a
recurring one skips to its next occurrence, and the person is told once, in the same channel. A
send cut off by a crash is repeated at most once (see `strata.memory.store.services.reminders`).
A scheduled prompt runs as a background turn on the person's muted `scheduled` channel and its
answer is delivered like a reminder. May import `bot` and `memory`.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from strata.bot.outbound import DeliveryUnavailableError
from strata.cognition.backoff import retry_delay
from strata.cognition.services import Services
from strata.core.clock import to_iso
from strata.core.recurrence import describe, next_occurrence
from strata.core.types import NewRow, Role
from strata.memory.store.services.reminders import Reminder

log = logging.getLogger(__name__)

SCHEDULED_SOURCE = "scheduled"


async def deliver_due(services: Services, now: datetime, *, runner: str | None = None) -> int:
    """Deliver every due reminder and scheduled prompt once (claimed for `runner`, the
    calling runner's id); return how many were delivered."""
    s = services
    delivered = 0
    for reminder in await s.reminders.due(now):
        channel = await s.channels.get(reminder.channel_id)
        if channel is not None and not s.outbound.can_send(channel.platform):
            continue  # its platform's adapter is not running (yet): it stays due, unclaimed
        if not await s.reminders.claim(reminder, now, runner):
            continue  # another delivery has it
        try:
            await deliver(services, reminder, now)
        except DeliveryUnavailableError as exc:
            log.info("reminder %d waits: %s", reminder.id, exc)
            await s.reminders.release(reminder.id)
        except Exception as exc:  # noqa: BLE001 - task boundary (runner); _failed logs it
            await _failed(services, reminder, exc, now)
        else:
            delivered += 1
    return delivered


async def _failed(services: Services, reminder: Reminder, exc: Exception,
                  now: datetime) -> None:
    """Count a failed delivery: back off, or give up after too many and tell the person."""
    s, cfg = services, services.settings.cognition
    attempts = reminder.attempts + 1
    error = f"{type(exc).__name__}: {exc}"[:500]
    if attempts == 1:  # the traceback once; repeats of the same failure in one line
        log.exception("delivering %s %d failed (attempt 1)", reminder.kind, reminder.id)
    if attempts < cfg.reminder_max_attempts:
        wait = retry_delay(attempts, cfg.reminder_retry_minutes, cfg.reminder_retry_max_minutes)
        if attempts > 1:
            log.warning("delivering %s %d failed (attempt %d, next in %s): %s", reminder.kind,
                        reminder.id, attempts, wait, error)
        await s.reminders.failed(reminder, error, now + wait)
        return
    log.warning("giving up %s %d after %d attempts: %s", reminder.kind, reminder.id, attempts,
                error)
    if reminder.recurrence:  # this occurrence is lost; the next one is tried afresh
        await s.reminders.complete(
            reminder, now, next_occurrence(reminder.recurrence, reminder.timezone, now))
    else:
        await s.reminders.failed(reminder, error, None)
    await _tell_given_up(services, reminder, attempts, now)


async def _tell_given_up(services: Services, reminder: Reminder, attempts: int,
                         now: datetime) -> None:
    """Tell the person once, in the reminder's channel, that it could not be delivered.

    The notice is stored in the channel first (the next conversation there shows it even if
    the platform refuses this message too), then sent once, best effort.
    """
    s = services
    channel = await s.channels.get(reminder.channel_id)
    if channel is None:
        return
    what = "reminder" if reminder.kind == "reminder" else "scheduled prompt"
    when = describe(reminder.due_at, reminder.timezone, now)
    text = (f"I could not deliver your {what} for {when} after {attempts} attempts, so I "
            f"stopped trying: “{reminder.text[:200]}”.")
    if reminder.recurrence:
        text += " The next one is still scheduled."
    turn_id = f"reminder-given-up:{reminder.id}:{to_iso(reminder.due_at)}"
    if await s.transcript.by_turn(turn_id):
        return  # told already
    await s.transcript.append([NewRow(
        channel_id=channel.id, person_id=None, ts=now, source=SCHEDULED_SOURCE,
        role=Role.ASSISTANT, content=text, turn_id=turn_id,
    )])
    await s.reminders.told_dead(reminder.id, now)
    try:
        await s.outbound.send(channel.platform, channel.room_ref, text)
    except Exception:  # task boundary: the stored notice stands; never retried
        log.warning("telling the person about %s %d failed", what, reminder.id, exc_info=True)


async def deliver(services: Services, reminder: Reminder, now: datetime) -> None:
    """Send one claimed reminder to the channel it came from, record it, complete it."""
    s = services
    channel = await s.channels.get(reminder.channel_id)
    person = await s.persons.get(reminder.owner_id)
    if channel is None or person is None:
        await s.reminders.complete(reminder, now, None)  # its channel is gone: nothing to do
        return
    if not s.outbound.can_send(channel.platform):
        raise DeliveryUnavailableError(f"no {channel.platform} adapter is running")
    occurrence = to_iso(reminder.due_at)
    if reminder.kind == "prompt":
        result = await s.processor.handle_background(
            person, SCHEDULED_SOURCE, reminder.text,
            turn_id=f"scheduled:{reminder.id}:{occurrence}", history=False,
        )
        text = result.reply
    else:
        text = f"⏰ Reminder: {reminder.text}"
    if reminder.unconfirmed >= 2:
        # Two sends of this occurrence were cut off after they may have reached the
        # platform: a third could be a second duplicate. Count it as delivered.
        log.warning("%s %d: sent twice unconfirmed; not sending again", reminder.kind,
                    reminder.id)
        await s.reminders.complete(reminder, now, _next_due(reminder, now))
        return
    late = now - reminder.due_at
    if late > timedelta(minutes=s.settings.cognition.late_after_minutes):
        text = (f"(Late — this was due {describe(reminder.due_at, reminder.timezone, now)}; "
                f"I could not send it then.)\n{text}")
    turn_id = f"reminder:{reminder.id}:{occurrence}"
    if not await s.transcript.by_turn(turn_id):
        await s.transcript.append([NewRow(
            channel_id=channel.id, person_id=None, ts=now, source=SCHEDULED_SOURCE,
            role=Role.ASSISTANT, content=text, turn_id=turn_id,
        )])
    await s.reminders.sending(reminder.id, now)
    await s.outbound.send(channel.platform, channel.room_ref, text)
    await s.reminders.complete(reminder, now, _next_due(reminder, now))
    log.info("delivered %s %d to %s", reminder.kind, reminder.id, channel.platform)


def _next_due(reminder: Reminder, now: datetime) -> datetime | None:
    return (next_occurrence(reminder.recurrence, reminder.timezone, now)
            if reminder.recurrence else None)
