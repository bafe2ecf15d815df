"""Reminders and scheduled prompts as a chat sets them: the model's tools to set, list and
cancel them and to set the person's time zone, and the `/timezone` and `/reminders` commands.
Times are read and shown in the person's zone (`strata.core.recurrence`). The runner
delivers what they set (`strata.cognition.reminder_delivery`); a reminder set from the
person's own words uses the same tool (`strata.bot.remind_requests`).
Imports `bot`, `memory` and `core`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import Field

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.bot.tool_args import RowId, ToolArgs, add_tool
from strata.bot.tools import ToolContext, ToolRegistry
from strata.core.clock import ensure_utc
from strata.core.ports import Clock
from strata.core.recurrence import (
    ReminderInputError,
    describe,
    describe_recurrence,
    next_occurrence,
    parse_recurrence,
    zone,
)
from strata.core.types import ChannelKind
from strata.memory.store.persons import PersonRepo
from strata.memory.store.services.reminders import Reminder, ReminderRepo


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
