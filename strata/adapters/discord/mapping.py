"""Discord events → `InboundMessage`. Pure: reads attributes of discord.py objects, no I/O.

Strata talks on Discord in direct messages only (docs/platforms.md): a DM is a turn in the sender's
private channel, keyed by the DM channel id. Guild messages, the bot's own messages (Discord
echoes them back), other bots' and system messages are not turns: `to_inbound` returns None for
them, and `mentions_bot` lets the adapter point someone who mentions the bot in a server to DMs.
A slash command becomes the same text command (`/forget cats`) the turn processor already knows.
Imports `strata.core.types` and discord.py only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import discord

from strata.core.types import InboundMessage

PLATFORM = "discord"

# Only what a person typed; joins, pins, thread notices and the like are not turns.
_USER_MESSAGE_TYPES = frozenset({discord.MessageType.default, discord.MessageType.reply})

# Slash command names Discord accepts (lower case, 1–32 word characters or dashes).
_COMMAND_NAME = re.compile(r"^[-_a-z0-9]{1,32}$")


def display_name(user: discord.abc.User) -> str:
    """The name a person chose to be shown (global display name), else their username."""
    return user.global_name or user.name


def is_direct(message: discord.Message) -> bool:
    return message.guild is None and isinstance(message.channel, discord.DMChannel)


def _is_person(author: discord.abc.User, bot_id: int) -> bool:
    return author.id != bot_id and not author.bot and not author.system


def message_text(message: discord.Message) -> str:
    """The content, plus one line per attachment (the model cannot open files, but the
    transcript should say that something was sent)."""
    lines = [message.content] if message.content else []
    for att in message.attachments:
        lines.append(f"[attached file: {att.filename}]")
    return "\n".join(lines)


def to_inbound(message: discord.Message, *, bot_id: int) -> InboundMessage | None:
    """The turn for a DM from a person; None for anything Strata does not answer."""
    if not is_direct(message) or not _is_person(message.author, bot_id):
        return None
    if message.type not in _USER_MESSAGE_TYPES:
        return None
    ref = message.reference
    return InboundMessage(
        platform=PLATFORM,
        room_id=str(message.channel.id),
        sender_id=str(message.author.id),
        sender_name=display_name(message.author),
        text=message_text(message),
        ts=message.created_at,
        is_private=True,
        addressed_to_bot=True,
        message_id=str(message.id),
        reply_to=str(ref.message_id) if ref is not None and ref.message_id else None,
    )


def mentions_bot(message: discord.Message, *, bot_id: int) -> bool:
    """A person addressed the bot in a server (by mention or by replying to it)."""
    if is_direct(message) or not _is_person(message.author, bot_id):
        return False
    if any(user.id == bot_id for user in message.mentions):
        return True
    resolved = message.reference.resolved if message.reference is not None else None
    return isinstance(resolved, discord.Message) and resolved.author.id == bot_id


def command_text(name: str, args: str = "") -> str:
    """The text command a slash command stands for: `/forget` + `cats` → `/forget cats`."""
    return f"/{name} {args.strip()}".rstrip()


def interaction_to_inbound(interaction: discord.Interaction, text: str) -> InboundMessage | None:
    """The turn for a slash command used in a DM; None in a server (DMs only)."""
    if interaction.guild_id is not None or interaction.channel_id is None:
        return None
    return InboundMessage(
        platform=PLATFORM,
        room_id=str(interaction.channel_id),
        sender_id=str(interaction.user.id),
        sender_name=display_name(interaction.user),
        text=text,
        ts=interaction.created_at,
        is_private=True,
        addressed_to_bot=True,
        message_id=str(interaction.id),
    )


def slash_commands(commands: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (name, description) pairs Discord accepts as slash commands, in order, deduplicated:
    names must be lower-case words of ≤ 32 characters; descriptions 1–100 characters."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for name, summary in commands:
        if not _COMMAND_NAME.match(name) or name in seen:
            continue
        seen.add(name)
        desc = (summary.strip() or name)[:100]
        out.append((name, desc))
    return out
