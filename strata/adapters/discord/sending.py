"""Talking back on Discord: the reply operations of a DM (`dm_ops`) and of a deferred slash
command's interaction (`interaction_ops`).

discord.py sleeps out REST 429s itself; a wait too long for it surfaces as `RateLimited`,
turned into `PlatformRateLimited` here (`rate_limited`) so streaming skips an edit and sends
are retried later. Files over Discord's upload limit are replaced by a note saying so.
Imports `strata.adapters.runtime`, `strata.core`, aiohttp and discord.py.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable
from typing import TypeVar

import aiohttp
import discord

from strata.adapters.once import keyed_send
from strata.adapters.runtime import ReplyOps
from strata.core.sending import PlatformRateLimited
from strata.core.types import ReplyKey

MESSAGE_LIMIT = 2000
# Discord shows "typing…" for about 10 s per trigger; refresh a little before it lapses.
TYPING_EVERY = 8.0
# Bots may upload 10 MiB per message without boosts; stay under it.
FILE_LIMIT = 8 * 1024 * 1024

# What can go wrong when talking to Discord (REST errors, connection problems).
PLATFORM_ERRORS = (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError)

Destination = discord.DMChannel | discord.PartialMessageable


def dm_ops(channel: Destination, edit_interval: float, once: ReplyKey | None = None) -> ReplyOps:
    """How to talk back in one DM: send, edit (at most every `edit_interval` s), typing, files.
    With `once` each message has a nonce from the queued turn (`strata.adapters.once`;
    discord.py sends it with `enforce_nonce`): a re-run after a crash, within Discord's few
    minutes, gets the messages the dead run sent instead of new ones."""

    async def send_keyed(text: str, nonce: str | None) -> str:
        if nonce is None:
            return await rate_limited(_message_id(channel.send(text)))
        return await rate_limited(_message_id(channel.send(text, nonce=nonce)))

    async def edit(message_id: str, text: str) -> None:
        await rate_limited(channel.get_partial_message(int(message_id)).edit(content=text))

    send = keyed_send(send_keyed, edit, once)

    async def typing() -> None:
        await rate_limited(_typing(channel))

    async def send_file(name: str, data: bytes) -> str:
        file = _file(name, data)
        if isinstance(file, str):  # too large: say so instead
            return await send(file)
        return await rate_limited(_message_id(channel.send(file=file)))

    return ReplyOps(
        send=send,
        edit=edit,
        typing=typing,
        send_file=send_file,
        limit=MESSAGE_LIMIT,
        min_edit_interval=edit_interval,
        typing_every=TYPING_EVERY,
    )


def interaction_ops(interaction: discord.Interaction) -> ReplyOps:
    """Answers to a deferred interaction: the first part replaces the "thinking…" message,
    the rest are follow-ups."""
    answered = False

    async def send(text: str) -> str:
        nonlocal answered
        if not answered:
            answered = True
            return await rate_limited(
                _message_id(interaction.edit_original_response(content=text))
            )
        return await rate_limited(_message_id(interaction.followup.send(text, wait=True)))

    async def send_file(name: str, data: bytes) -> str:
        file = _file(name, data)
        if isinstance(file, str):
            return await send(file)
        return await rate_limited(_message_id(interaction.followup.send(file=file, wait=True)))

    return ReplyOps(send=send, send_file=send_file, limit=MESSAGE_LIMIT)


T = TypeVar("T")


async def rate_limited(call: Awaitable[T]) -> T:
    """Await a discord.py call; a 429 wait too long for discord.py to sleep out itself becomes
    `PlatformRateLimited` (streaming then skips an edit, sends are retried later)."""
    try:
        return await call
    except discord.RateLimited as exc:
        raise PlatformRateLimited(exc.retry_after) from exc


async def _message_id(sent: Awaitable[discord.Message | discord.WebhookMessage]) -> str:
    return str((await sent).id)


async def _typing(channel: Destination) -> None:
    await channel.typing()


def _file(name: str, data: bytes) -> discord.File | str:
    """`data` as a Discord file, or a note why it cannot be sent."""
    if len(data) > FILE_LIMIT:
        return (
            f"(The file {name} is {len(data) / 1024 / 1024:.1f} MB, too large to send on "
            "Discord; ask the operator to run `strata memory export` instead.)"
        )
    return discord.File(io.BytesIO(data), filename=name)
