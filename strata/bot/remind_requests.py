"""Reminders set from the person's own words, with no model deciding: "remind me in 2 minutes
to stretch" in a chat whose model is offered no tools (the embedded default: see
`strata.bot.model_turn`), and the `/remind` command on every platform.

The words are read by `strata.bot.remind_words` in the person's time zone; the reminder
is set by the same `set_reminder` tool a model would call (as a recorded tool call in a chat
turn), and the reply is the tool's own confirmation, with the exact local time. A message the
grammar cannot read goes to the model as any other. Imports `bot` and `core`.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from strata.bot.commands import CommandContext, CommandReply, CommandRouter
from strata.bot.remind_words import ReminderRequest, read_message, read_spec
from strata.bot.reminder_tools import ReminderArgs, ReminderPorts, ReminderTools
from strata.bot.tools import ToolContext, ToolRegistry, WordsRequest, words_call_id
from strata.core.recurrence import local
from strata.core.types import Person, ToolCall

USAGE = ("Say when, then what, in your own time zone (/timezone shows it): "
         "/remind in 2 minutes stretch, /remind tomorrow at 9 call mum, "
         "/remind at 18:30 take the pills, /remind on Friday at 10 pay the rent.")
ASK_WHAT = "What should I remind you of? Say it after the time, e.g. “remind me in 10 minutes " \
    "to stretch”."


def confirmation(result: str, text: str) -> str:
    """The reply to a reminder request: the tool's result in words (it names the reminder's
    number and its local time), or why it was not set."""
    if result.startswith("ok: "):
        done = result.removeprefix("ok: ")
        return f"{done[:1].upper()}{done[1:]}: {text}. /reminders lists your reminders."
    return f"I did not set that reminder: {result.removeprefix('error: ')}."


def arguments(request: ReminderRequest) -> ReminderArgs:
    """The `set_reminder` arguments of a request read from words."""
    if request.in_minutes is not None:
        return ReminderArgs(text=request.text, in_minutes=request.in_minutes)
    return ReminderArgs(text=request.text, when=request.when or "")


class RemindWords:
    """The words reader and the `/remind` command, over the reminder tools."""

    def __init__(self, ports: ReminderPorts) -> None:
        self.ports = ports
        self.tools = ReminderTools(ports)

    async def _local_now(self, person: Person) -> datetime:
        current = await self.ports.persons.get(person.id) or person
        return local(self.ports.clock.now(), current.timezone).replace(tzinfo=None)

    async def read(self, ctx: ToolContext, text: str) -> WordsRequest | None:
        """A `ToolRegistry` words reader: "remind me …" as a `set_reminder` call."""
        request = read_message(text, await self._local_now(ctx.person))
        if request is None:
            return None
        if not request.text:
            return WordsRequest(None, lambda _: ASK_WHAT)
        args = arguments(request).model_dump(exclude_defaults=True)
        call = ToolCall(words_call_id(), "set_reminder", json.dumps(args))
        return WordsRequest(call, lambda result: confirmation(result, request.text))

    async def remind(self, ctx: CommandContext) -> CommandReply:
        """`/remind <when> <what>`."""
        if not ctx.args:
            return CommandReply(USAGE)
        request = read_spec(ctx.args, await self._local_now(ctx.person), command=True)
        if request is None:
            return CommandReply(f"I could not read when. {USAGE}")
        if not request.text:
            return CommandReply(ASK_WHAT)
        tool_ctx = ToolContext(ctx.person, ctx.channel, f"remind:{uuid.uuid4().hex}")
        result = await self.tools.set_reminder(tool_ctx, arguments(request))
        return CommandReply(confirmation(result, request.text))

    def register(self, tools: ToolRegistry, commands: CommandRouter) -> None:
        tools.add_reader(self.read)
        commands.add("remind", "/remind in 2 minutes stretch, /remind tomorrow at 9 call mum: "
                     "set a reminder", self.remind, shared=True)
