"""Who a message is from and whether the bot may answer it, and the answer to a chat command.

`allowed` applies the `[access]` allowlists; `resolve` finds (or creates) the sender and the
channel, giving a room that changed shape a channel of its own so no one's private memory
follows it; `command_result` runs a command, which a shared room only allows when the command
was registered `shared`.
"""

from __future__ import annotations

from datetime import datetime

from strata.bot.commands import CommandContext, CommandRouter
from strata.core.config import AccessSettings
from strata.core.types import Accepted, Channel, ChannelKind, InboundMessage, Person, TurnResult
from strata.memory.store.persons import ChannelRepo, PersonRepo

EMPTY_MESSAGE = "(That message was empty, so there is nothing to answer.)"
PRIVATE_ONLY = "That command only works in a private chat with me."


def allowed(access: AccessSettings, msg: InboundMessage) -> bool:
    if msg.platform == "console":
        return True
    if msg.identity in access.admins:
        return True
    if access.allow_users and msg.identity not in access.allow_users:
        return False
    room = f"{msg.platform}:{msg.room_id}"
    return msg.is_private or not access.allow_rooms or room in access.allow_rooms


async def resolve(persons: PersonRepo, channels: ChannelRepo, msg: InboundMessage,
                  now: datetime) -> tuple[Person, Channel]:
    """The sender (created on first sight) and the channel (created on first message)."""
    person = await persons.get_or_create(msg.identity, msg.sender_name, now)
    if msg.is_private:
        owner_id, kind = person.id, ChannelKind.PRIVATE
    else:
        scope = await persons.room_scope(msg.platform, msg.room_id, msg.room_name, now)
        owner_id, kind = scope.id, ChannelKind.SHARED
    room_ref = msg.room_id
    existing = await channels.by_ref(msg.platform, room_ref)
    if existing is not None and (existing.kind is not kind or existing.owner_id != owner_id):
        # The room changed shape (a DM that grew into a group, a 1:1 room whose human
        # changed): it gets a channel of its own, so no one's private memory follows.
        room_ref = f"{msg.room_id}#{kind.value}:{owner_id}"
    channel = await channels.get_or_create(
        platform=msg.platform,
        room_ref=room_ref,
        owner_id=owner_id,
        kind=kind,
        source="user",
        now=now,
        name=msg.room_name,
    )
    return person, channel


async def command_result(commands: CommandRouter, accepted: Accepted) -> TurnResult:
    """The answer to a message taken in without a row (`accepted.stored` false): a command,
    an unknown command, or an empty message."""
    msg, person, channel, turn_id = (
        accepted.msg, accepted.person, accepted.channel, accepted.turn_id)
    found = commands.find(msg.text)
    if found is None:
        unknown = commands.unknown(msg.text)
        if unknown is not None:
            return TurnResult(f"unknown command /{unknown}, /help lists them",
                              turn_id, channel.id, person.id, command=unknown)
        return TurnResult(EMPTY_MESSAGE, turn_id, channel.id, person.id)
    command, args = found
    if not command.shared and channel.kind is not ChannelKind.PRIVATE:
        return TurnResult(PRIVATE_ONLY, turn_id, channel.id, person.id, command=command.name)
    reply = await command.handler(CommandContext(msg, person, channel, args))
    return TurnResult(reply.text, turn_id, channel.id, person.id, command=command.name,
                      attachment=reply.attachment)
