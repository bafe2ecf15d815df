"""Reminders and scheduled prompts: the model's tools to set, list and cancel them (in the
person's time zone, which the person can set), and delivery by the runner. Zones and recurrence
(RFC 5545 RRULE text, computed by dateutil) are `strata.cognition.recurrence`.

Delivery is claim-then-deliver (see `strata.memory.store.services.reminders`): the runner claims
a due item,
records the message in the channel it came from (turn id `reminder:<id>:<due>`, so a redelivery
after a restart never stores it twice), sends it through the outbound registry to that channel's
platform, then completes it. A delivery later than `late_after_minutes` says so. A failed
delivery is retried with capped exponential backoff (`reminder_retry_minutes` …
`reminder_retry_max_minutes`); after `reminder_max_attempts` a one-off reminder is dead and a
recurring one skips to its next occurrence, and the person is told once, in the same channel.
A send cut off by a crash is repeated at most once (see `strata.memory.store.services.reminders`). A
scheduled prompt runs as a background turn on the person's muted `scheduled` channel and its answer
is delivered like a reminder. May import `bot` and `memory`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import Field

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.bot.outbound import DeliveryUnavailableError
from strata.bot.tool_args import RowId, ToolArgs, add_tool
from strata.bot.tools import ToolContext, ToolRegistry
from strata.cognition.backoff import retry_delay
from strata.cognition.recurrence import (
    ReminderInputError,
    describe_recurrence,
    local,
    next_occurrence,
    parse_recurrence,
    zone,
)
from strata.cognition.services import Services
from strata.core.clock import ensure_utc, to_iso
from strata.core.ports import Clock
from strata.core.types import ChannelKind, NewRow, Role
from strata.memory.store.persons import PersonRepo
from strata.memory.store.services.reminders import Reminder, ReminderRepo

log = logging.getLogger(__name__)

SCHEDULED_SOURCE = "scheduled"


def describe(ts: datetime, tz: str, now: datetime | None = None) -> str:
    """`Tue 6 Jan 09:00` in the person's zone (with the year when it is not this year's)."""
    lt = local(ts, tz)
    text = f"{lt:%a} {lt.day} {lt:%b} {lt:%H:%M}"
    if now is not None and local(now, tz).year != lt.year:
        text += f" {lt.year}"
    return text


def parse_when(when: str, tz: str, now: datetime) -> datetime:
    """A local date-time (`2026-01-06 09:00`, ISO with or without offset) → aware UTC."""
    text = when.strip().replace("T", " ")
    if not text:
        raise ReminderInputError("give the time as YYYY-MM-DD HH:MM in the person's time zone")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ReminderInputError(
            f"cannot read the time {when!r}; use YYYY-MM-DD HH:MM (the person's local time)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=zone(tz))
    return ensure_utc(parsed)


def reminder_line(r: Reminder, now: datetime) -> str:
    what = "reminder" if r.kind == "reminder" else "scheduled prompt"
    when = describe(r.due_at, r.timezone, now)
    if r.recurrence:
        when = f"{describe_recurrence(r.recurrence)}, next {when}"
    return f"#{r.id} {what} — {when}: {r.text}"


# -- tools ----------------------------------------------------------------------------------------

class ReminderArgs(ToolArgs):
    text: str = Field(description="what to remind them of")
    when: str = Field(default="", description="local YYYY-MM-DD HH:MM")
    in_minutes: float | None = Field(default=None, description="instead of when: minutes from now")


class PromptArgs(ToolArgs):
    prompt: str = Field(description="what to do each time")
    every: str = Field(default="day", description="day | weekday | monday … sunday")
    at: str = Field(description="local time of day, HH:MM")


class NoArgs(ToolArgs):
    pass


class ReminderIdArgs(ToolArgs):
    id: RowId = Field(description="the reminder's number, from list_reminders")


class TimezoneArgs(ToolArgs):
    timezone: str = Field(description="an IANA name like Europe/Paris")


@dataclass(frozen=True)
class ReminderPorts:
    """What the reminder tools and chat commands use (delivery uses the whole `Services`)."""

    persons: PersonRepo
    reminders: ReminderRepo
    clock: Clock


def room_of(ctx: ToolContext) -> int | None:
    """The channel a reminder tool is limited to: the room itself in a shared room (so the
    person's private reminders stay out of it), none in a private chat."""
    return ctx.channel.id if ctx.shared else None


@dataclass(frozen=True)
class ReminderTools:
    """The reminder, scheduled-prompt and time-zone tools: one method per tool."""

    services: ReminderPorts

    async def set_reminder(self, ctx: ToolContext, args: ReminderArgs) -> str:
        s = self.services
        person = await s.persons.get(ctx.person.id) or ctx.person
        now = s.clock.now()
        if not args.text:
            return "error: say what to remind the person of (text)"
        try:
            if args.in_minutes is not None:
                due = now + timedelta(minutes=args.in_minutes)
            else:
                due = parse_when(args.when, person.timezone, now)
        except (ReminderInputError, OverflowError) as exc:
            return f"error: {exc}"
        # A person's time zone is theirs: a shared room is told local times, not the zone.
        where = "their time zone" if ctx.shared else person.timezone
        if due <= now:
            return (f"error: {describe(due, person.timezone, now)} is in the past (it is now "
                    f"{describe(now, person.timezone)} in {where})")
        r = await s.reminders.add(owner_id=person.id, channel_id=ctx.channel.id, kind="reminder",
                                  text=args.text, due_at=due, timezone=person.timezone, now=now,
                                  turn_id=ctx.turn_id)
        return f"ok: reminder #{r.id} set for {describe(due, person.timezone, now)} ({where})"

    async def schedule_prompt(self, ctx: ToolContext, args: PromptArgs) -> str:
        s = self.services
        if ctx.channel.kind is not ChannelKind.PRIVATE:
            # Its answer is written from the person's own memory: never into a shared room.
            return "error: scheduled prompts can only be set in a private chat with me"
        person = await s.persons.get(ctx.person.id) or ctx.person
        now = s.clock.now()
        if not args.prompt:
            return "error: say what to do each time (prompt)"
        try:
            recurrence = parse_recurrence(args.every or "day", args.at)
            due = next_occurrence(recurrence, person.timezone, now)
        except ReminderInputError as exc:
            return f"error: {exc}"
        r = await s.reminders.add(owner_id=person.id, channel_id=ctx.channel.id, kind="prompt",
                                  text=args.prompt, due_at=due, timezone=person.timezone,
                                  now=now, recurrence=recurrence, turn_id=ctx.turn_id)
        return (f"ok: scheduled prompt #{r.id}, {describe_recurrence(recurrence)} "
                f"({person.timezone}); first {describe(due, person.timezone, now)}")

    async def list_reminders(self, ctx: ToolContext, args: NoArgs) -> str:
        s = self.services
        now = s.clock.now()
        items = await s.reminders.upcoming(ctx.person.id, channel_id=room_of(ctx))
        if not items:
            return "no reminders or scheduled prompts" + (" set in this room" if ctx.shared
                                                          else "")
        return "\n".join(reminder_line(r, now) for r in items)

    async def cancel_reminder(self, ctx: ToolContext, args: ReminderIdArgs) -> str:
        s = self.services
        if await s.reminders.cancel(ctx.person.id, args.id, channel_id=room_of(ctx)):
            return f"ok: #{args.id} cancelled"
        where = " set in this room" if ctx.shared else ""
        return f"error: there is no pending reminder #{args.id} of this person{where}"

    async def set_timezone(self, ctx: ToolContext, args: TimezoneArgs) -> str:
        s = self.services
        try:
            zone(args.timezone)
        except ReminderInputError as exc:
            return f"error: {exc}"
        await s.persons.set_timezone(ctx.person.id, args.timezone)
        return (f"ok: time zone set to {args.timezone}; it is now "
                f"{describe(s.clock.now(), args.timezone)} there")

    def register(self, tools: ToolRegistry) -> None:
        add_tool(tools, "set_reminder",
                 "Remind the person of something once, at a time in their own time zone. Give "
                 "`when` as local date and time YYYY-MM-DD HH:MM (see the current local time in "
                 "the context), or `in_minutes` for a relative time.", ReminderArgs,
                 self.set_reminder, shared=True)
        add_tool(tools, "schedule_prompt",
                 "Run a prompt regularly and send the person the answer, e.g. every morning at "
                 "08:00 a summary of their day. `every`: day, weekday, or a weekday name; `at`: "
                 "local HH:MM.", PromptArgs, self.schedule_prompt)
        add_tool(tools, "list_reminders",
                 "List the person's pending reminders and scheduled prompts with ids.", NoArgs,
                 self.list_reminders, shared=True)
        add_tool(tools, "cancel_reminder",
                 "Cancel one of the person's reminders or scheduled prompts by id.",
                 ReminderIdArgs, self.cancel_reminder, shared=True)
        add_tool(tools, "set_timezone",
                 "Set the person's time zone (IANA name like Europe/Paris).", TimezoneArgs,
                 self.set_timezone)


def register_tools(tools: ToolRegistry, services: ReminderPorts) -> None:
    """Add the reminder, scheduled-prompt and time-zone tools to a turn processor's tools."""
    ReminderTools(services).register(tools)


def register_commands(commands: CommandRouter, services: ReminderPorts) -> None:
    """`/timezone [NAME]` and `/reminders` chat commands."""
    s = services

    async def timezone_cmd(ctx: CommandContext) -> CommandReply:
        now = s.clock.now()
        if not ctx.args:
            tz = ctx.person.timezone
            return CommandReply(f"Your time zone is {tz} (it is {describe(now, tz)} there). "
                                "Change it with /timezone Europe/Paris (any IANA name).")
        try:
            zone(ctx.args)
        except ReminderInputError as exc:
            return CommandReply(str(exc))
        await s.persons.set_timezone(ctx.person.id, ctx.args)
        return CommandReply(f"Time zone set to {ctx.args}; it is {describe(now, ctx.args)} there.")

    async def reminders_cmd(ctx: CommandContext) -> CommandReply:
        now = s.clock.now()
        # In a shared room, only what was set there: the room saw it being set anyway.
        room = ctx.channel.id if ctx.channel.kind is ChannelKind.SHARED else None
        items = await s.reminders.upcoming(ctx.person.id, channel_id=room)
        if not items:
            return CommandReply("You have no reminders or scheduled prompts"
                                + (" set in this room." if room else "."))
        return CommandReply("\n".join(reminder_line(r, now) for r in items))

    commands.add("timezone", "show or set your time zone (/timezone Europe/Paris)", timezone_cmd)
    commands.add("reminders", "list your reminders and scheduled prompts (in a group: the "
                 "ones set there)", reminders_cmd, shared=True)


# -- delivery -------------------------------------------------------------------------------------

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
