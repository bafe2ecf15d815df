"""Telegram `Update` → `InboundMessage`. Pure: no I/O (PTB objects are only read).

- A private chat is the sender's private channel; a group or supergroup is a shared channel,
  addressed to the bot only by an @mention of it (or a text mention), a reply to one of its
  messages, or a /command for it (`/cmd@this_bot`, or a bare `/cmd`, which Telegram means for
  every bot in the chat). Channel posts and messages from bots are not mapped.
- An edited text message keeps its text with `edited_of` set to the edited message's id and is
  never addressed: the correction is recorded, not answered twice.
- A location (or venue) message becomes a location-tagged message; a live location's moves
  arrive as edits of that message and are recorded silently (`live=True`, not addressed).
- `/start` (what Telegram sends when someone first opens the bot) becomes `/help`.
- Messages without text, caption or location (stickers, photos without caption) map to None.

Imports `strata.core.types` and python-telegram-bot's types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from telegram import Message, MessageEntity, Update

from strata.core.types import InboundMessage, Location

PLATFORM = "telegram"
PRIVATE = "private"
GROUP_TYPES = frozenset({"group", "supergroup"})


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """Who the bot is on Telegram (from getMe): what mentions and replies are compared to."""

    id: int
    username: str

    @property
    def mention(self) -> str:
        return f"@{self.username}".lower()


def _aware(ts: datetime | None) -> datetime:
    if ts is None:
        return datetime.now(UTC)
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


def _text_and_entities(message: Message) -> tuple[str, dict[MessageEntity, str]]:
    if message.text is not None:
        return message.text, message.parse_entities()
    if message.caption is not None:
        return message.caption, message.parse_caption_entities()
    return "", {}


def command_target(text: str) -> tuple[str, str | None] | None:
    """(`command`, `@target` or None) when `text` starts with a bot command like `/help@bot`."""
    match = re.match(r"/([A-Za-z0-9_]+)(?:@([A-Za-z0-9_]+))?(?=\s|$)", text)
    if match is None:
        return None
    return match.group(1).lower(), match.group(2)


def is_addressed(message: Message, text: str, entities: dict[MessageEntity, str],
                 bot: BotIdentity) -> bool:
    """Whether a group message is meant for the bot (see the module docstring)."""
    reply = message.reply_to_message
    if reply is not None and reply.from_user is not None and reply.from_user.id == bot.id:
        return True
    for entity, value in entities.items():
        if entity.type == MessageEntity.MENTION and value.lower() == bot.mention:
            return True
        if (entity.type == MessageEntity.TEXT_MENTION and entity.user is not None
                and entity.user.id == bot.id):
            return True
    command = command_target(text)
    if command is None:
        return False
    target = command[1]
    return target is None or target.lower() == bot.username.lower()


def clean_text(text: str, bot: BotIdentity) -> str:
    """Drop a leading @mention of the bot (`@bot, what…` → `what…`) and map `/start` to `/help`."""
    stripped = text.strip()
    if stripped.lower().startswith(bot.mention):
        rest = stripped[len(bot.mention):]
        if not rest or not (rest[0].isalnum() or rest[0] == "_"):
            stripped = rest.lstrip(" \t,:;").strip()
    command = command_target(stripped)
    if command is not None and command[0] == "start":
        stripped = "/help"
    return stripped


def _location(message: Message, edited: bool) -> tuple[Location, str] | None:
    loc = message.location
    if loc is None:
        return None
    # Read from the raw fields: PTB 22 warns on the attribute (its type will change).
    live = edited or loc.to_dict().get("live_period") is not None
    place = Location(lat=float(loc.latitude), lon=float(loc.longitude), live=live)
    if message.venue is not None:
        address = f", {message.venue.address}" if message.venue.address else ""
        return place, f"(shared a place: {message.venue.title}{address})"
    if edited:
        return place, "(live location update)"
    return place, "(shared a live location)" if live else "(shared a location)"


def to_inbound(update: Update, bot: BotIdentity) -> InboundMessage | None:
    """Map one update; None for anything Strata does not answer or record."""
    edited = update.edited_message is not None and update.message is None
    message = update.message or update.edited_message
    if message is None or message.from_user is None or message.from_user.is_bot:
        return None
    chat = message.chat
    if chat.type != PRIVATE and chat.type not in GROUP_TYPES:
        return None
    private = chat.type == PRIVATE
    text, entities = _text_and_entities(message)
    location = _location(message, edited)
    if location is not None:
        text = location[1]
    elif not text.strip():
        return None
    if edited:
        addressed = False
    elif private:
        addressed = True
    else:
        addressed = is_addressed(message, text, entities, bot)
    if location is None:
        text = clean_text(text, bot)
    sender = message.from_user
    reply = message.reply_to_message
    return InboundMessage(
        platform=PLATFORM,
        room_id=str(chat.id),
        sender_id=str(sender.id),
        sender_name=sender.full_name or sender.username or str(sender.id),
        text=text,
        ts=_aware(message.edit_date if edited else message.date),
        is_private=private,
        addressed_to_bot=addressed,
        message_id=str(message.message_id),
        reply_to=str(reply.message_id) if reply is not None else None,
        edited_of=str(message.message_id) if edited else None,
        location=location[0] if location is not None else None,
        room_name=(chat.title or "") if not private else (sender.full_name or ""),
    )
