"""Chat commands (`/help`, `/memory`, `/forget`, …), handled by the turn processor.

Every platform gets the same commands because they are handled here, before the model sees
anything. A command is never stored in the transcript (so `/forget x` does not remember x).
Each capability registers its own commands on the `CommandRouter`. Imports `bot` leaf types.

A command acts on the speaker's own memory, so it is private by default: in a shared room only
the commands registered with `shared=True` run (they act on the room, or on nothing personal),
and the others answer that they work in a private chat. A new command is therefore safe in a
group without anyone having to remember it; `tests/integration/test_shared_room_privacy.py`
drives every registered command in a shared room to hold that.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from strata.core.types import Channel, ChannelKind, InboundMessage, Person


@dataclass(frozen=True, slots=True)
class CommandContext:
    msg: InboundMessage
    person: Person
    channel: Channel
    args: str


@dataclass(frozen=True, slots=True)
class CommandReply:
    text: str
    attachment: tuple[str, bytes] | None = None  # (file name, bytes), e.g. an export


Handler = Callable[[CommandContext], Awaitable[CommandReply]]

# What reads as a command someone meant to give: `/word` of two or more letters, digits or
# underscores, alone or followed by a space (`/remindme`, `/bogus x`). "/usr/bin is a
# folder", "/s" or "//" are ordinary messages and go to the model.
COMMAND_LIKE = re.compile(r"/([A-Za-z][A-Za-z0-9_]{1,31})(?:@\w+)?(?:\s|$)")


@dataclass
class Command:
    name: str
    summary: str
    handler: Handler
    shared: bool = False  # runs in a shared room (it reads and writes nothing private)


@dataclass
class CommandRouter:
    commands: dict[str, Command] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.add("help", "list the commands", self._help, shared=True)

    def add(self, name: str, summary: str, handler: Handler, *, shared: bool = False) -> None:
        self.commands[name] = Command(name, summary, handler, shared)

    def menu(self) -> tuple[tuple[str, str], ...]:
        """(name, summary) of every command, in the order registered: a platform's command
        menu (Telegram's "/" menu, Discord's slash commands) is built from this."""
        return tuple((c.name, c.summary) for c in self.commands.values())

    @staticmethod
    def parse(text: str) -> tuple[str, str] | None:
        """(`name`, `args`) if `text` is a command like `/forget cats` (or `/forget@bot cats`)."""
        stripped = text.strip()
        if not stripped.startswith("/") or len(stripped) < 2 or not stripped[1].isalpha():
            return None
        head, _, args = stripped[1:].partition(" ")
        name = head.split("@", 1)[0].lower()
        return name, args.strip()

    def find(self, text: str) -> tuple[Command, str] | None:
        parsed = self.parse(text)
        if parsed is None or parsed[0] not in self.commands:
            return None
        return self.commands[parsed[0]], parsed[1]

    def unknown(self, text: str) -> str | None:
        """The name in `text` when it reads as a command (`COMMAND_LIKE`) that is not one."""
        match = COMMAND_LIKE.match(text.strip())
        if match is None or match.group(1).lower() in self.commands:
            return None
        return match.group(1).lower()

    async def _help(self, ctx: CommandContext) -> CommandReply:
        shared = ctx.channel.kind is ChannelKind.SHARED
        lines = ["Commands:"]
        for cmd in sorted(self.commands.values(), key=lambda c: c.name):
            if cmd.shared or not shared:
                lines.append(f"/{cmd.name} — {cmd.summary}")
        if shared:
            lines.append("The others (/memory, /forget, /export, …) work in a private chat "
                         "with me.")
        return CommandReply("\n".join(lines))
