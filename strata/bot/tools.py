"""The functions the model may call in a turn (`ToolRegistry`), and what each call knows of
its turn (`ToolContext`).

Like a chat command, a tool is private by default: in a shared room the model is offered, and
may run, only the tools added with `shared=True`, whose handlers act on the room
(`ToolContext.shared`). So a new tool cannot reach a person's private memory from a group.
Typed arguments for a tool come from `strata.bot.tool_args`.

A model too small to call tools (the embedded default) is offered none; for the few requests
people make in set phrases ("remind me in 2 minutes to stretch"), a *words reader* added here
reads the message itself and names the tool call it asks for (`WordsRequest`). The call runs
through `run` like a model's, so it is checked and recorded the same way.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from strata.core.types import WORDS_CALL_PREFIX, Channel, ChannelKind, Person, ToolCall, ToolSpec

ToolHandler = Callable[["ToolContext", dict[str, Any]], Awaitable[str]]
WordsReader = Callable[["ToolContext", str], Awaitable["WordsRequest | None"]]


@dataclass(frozen=True, slots=True)
class ToolContext:
    person: Person
    channel: Channel
    turn_id: str

    @property
    def shared(self) -> bool:
        """Whether the turn is in a shared room: a tool that runs there acts on the room's
        scope only, and says nothing of the speaker's private memory."""
        return self.channel.kind is ChannelKind.SHARED


# The id of a tool call read from the words by code (`WORDS_CALL_PREFIX`): the turn's reply is
# code's too, which the model's history (`strata.bot.history_view`) and the episode summaries
# (`strata.memory.lifecycle.code_lines`) leave out.
def words_call_id() -> str:
    return f"{WORDS_CALL_PREFIX}{uuid.uuid4().hex[:12]}"


def is_words_call(call_id: str) -> bool:
    return call_id.startswith(WORDS_CALL_PREFIX)


@dataclass(frozen=True, slots=True)
class WordsRequest:
    """A request read from the person's words by code, not by a model: the tool call it asks
    for (None: nothing to run, the reply says why) and the reply, worded from the call's
    result (given "" when there is no call)."""

    call: ToolCall | None
    reply: Callable[[str], str]


@dataclass
class ToolRegistry:
    """Functions the model may call in a turn, by name (private unless added `shared`)."""

    specs: dict[str, ToolSpec] = field(default_factory=dict)
    handlers: dict[str, ToolHandler] = field(default_factory=dict)
    shared: set[str] = field(default_factory=set)
    readers: list[WordsReader] = field(default_factory=list)

    def add(self, spec: ToolSpec, handler: ToolHandler, *, shared: bool = False) -> None:
        self.specs[spec.name] = spec
        self.handlers[spec.name] = handler
        if shared:
            self.shared.add(spec.name)

    def add_reader(self, reader: WordsReader) -> None:
        """Read requests from the words of a turn whose model is offered no tools."""
        self.readers.append(reader)

    async def read(self, ctx: ToolContext, text: str) -> WordsRequest | None:
        """The first request a words reader finds in `text`, if any."""
        for reader in self.readers:
            found = await reader(ctx, text)
            if found is not None:
                return found
        return None

    def offered(self, channel: Channel) -> list[ToolSpec]:
        """The tools the model may call in a turn on `channel`."""
        if channel.kind is not ChannelKind.SHARED:
            return list(self.specs.values())
        return [s for name, s in self.specs.items() if name in self.shared]

    async def run(self, ctx: ToolContext, call: ToolCall) -> str:
        handler = self.handlers.get(call.name)
        if handler is None:
            return f"error: there is no tool named {call.name!r}"
        if ctx.shared and call.name not in self.shared:
            return f"error: {call.name} only works in a private chat with me"
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return "error: the arguments were not valid JSON"
        if not isinstance(args, dict):
            return "error: the arguments must be a JSON object"
        return await handler(ctx, args)
