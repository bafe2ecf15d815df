"""`strata.adapters.telegram.mapping` on captured Bot API payloads (tests/fixtures/telegram/*.json).

Most payloads were captured from the fake Bot API server's getUpdates; the rest (text mention,
emoji before a mention, venue, channel post, sticker, photo caption, another bot) are written in
the Bot API's documented shape.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from telegram import Update

from strata.adapters.telegram.mapping import BotIdentity, clean_text, command_target, to_inbound
from strata.core.types import InboundMessage, Location

FIXTURES = Path(__file__).parents[1] / "fixtures" / "telegram"
BOT = BotIdentity(id=7_000_000_001, username="strata_bot")


def load(name: str) -> Update:
    return Update.de_json(json.loads((FIXTURES / f"{name}.json").read_text()), None)


def mapped(name: str) -> InboundMessage:
    msg = to_inbound(load(name), BOT)
    assert msg is not None, name
    return msg


def test_private_text_is_a_private_addressed_message() -> None:
    msg = mapped("private_text")
    assert msg.platform == "telegram" and msg.identity == "telegram:4242"
    assert (msg.room_id, msg.sender_id) == ("4242", "4242")
    assert msg.is_private and msg.addressed_to_bot
    assert msg.text == "Hi! My cat is called Miso."
    assert msg.sender_name == "Ada Lovelace" and msg.room_name == "Ada Lovelace"
    assert msg.message_id == "1" and msg.edited_of is None and msg.location is None
    assert msg.ts.tzinfo is not None
    raw = json.loads((FIXTURES / "private_text.json").read_text())
    assert msg.ts == datetime.fromtimestamp(raw["message"]["date"], UTC)


def test_start_becomes_help() -> None:
    assert mapped("private_start").text == "/help"


def test_edited_text_is_recorded_not_answered() -> None:
    msg = mapped("private_edited_text")
    assert msg.text == "I live in Lille"
    assert msg.edited_of == msg.message_id == "3"
    assert not msg.addressed_to_bot


@pytest.mark.parametrize(
    ("name", "addressed", "text"),
    [
        ("group_mention", True, "what do you think, @strata_bot?"),
        ("group_leading_mention", True, "tell us a joke"),
        ("group_text_mention", True, "Strata can you help?"),
        ("group_emoji_mention", True, "👋🏽 hey @Strata_Bot, are you there?"),
        ("group_reply_to_bot", True, "why?"),
        ("group_command_for_bot", True, "/help@strata_bot"),
        ("group_bare_command", True, "/memory"),
        ("group_photo_caption_mention", True, "what is this?"),
        ("group_chatter", False, "lunch at noon?"),
        ("group_command_for_other_bot", False, "/help@other_bot"),
        ("group_mention_other_bot", False, "ping @other_bot"),
    ],
)
def test_group_messages_are_shared_and_addressed_only_when_meant(
    name: str, addressed: bool, text: str
) -> None:
    msg = mapped(name)
    assert not msg.is_private
    assert msg.room_id.startswith("-")
    assert msg.addressed_to_bot is addressed
    assert msg.text == text


def test_group_message_names_the_room_and_the_reply() -> None:
    msg = mapped("group_reply_to_bot")
    assert msg.room_name == "Crew" and msg.room_id == "-1001234567890"
    raw = json.loads((FIXTURES / "group_reply_to_bot.json").read_text())["message"]
    assert raw["reply_to_message"]["from"]["id"] == BOT.id
    assert msg.reply_to == str(raw["reply_to_message"]["message_id"])
    assert msg.sender_name == "Bob"


def test_static_location() -> None:
    msg = mapped("private_location")
    assert msg.location == Location(48.8566, 2.3522, live=False)
    assert msg.addressed_to_bot and msg.text == "(shared a location)"


def test_live_location_and_its_moves() -> None:
    start = mapped("private_live_location")
    assert start.location == Location(52.52, 13.405, live=True)
    assert start.addressed_to_bot
    moved = mapped("private_live_location_moved")
    assert moved.location == Location(52.53, 13.41, live=True)
    assert moved.edited_of == start.message_id and not moved.addressed_to_bot
    assert moved.text == "(live location update)"


def test_venue_names_the_place() -> None:
    msg = mapped("private_venue")
    assert msg.location == Location(45.767, 4.8339)
    assert msg.text == "(shared a place: Les Halles Paul Bocuse, 102 Cours Lafayette, Lyon)"


def test_group_location_is_recorded_but_not_addressed() -> None:
    msg = mapped("group_location")
    assert msg.location is not None and not msg.addressed_to_bot and not msg.is_private


@pytest.mark.parametrize("name", ["channel_post", "private_sticker", "group_from_bot"])
def test_not_mapped(name: str) -> None:
    assert to_inbound(load(name), BOT) is None


def test_command_target_and_clean_text() -> None:
    assert command_target("/forget@Strata_bot cats") == ("forget", "Strata_bot")
    assert command_target("/memory") == ("memory", None)
    assert command_target("not /a command") is None
    assert clean_text("@strata_bot: hi", BOT) == "hi"
    assert clean_text("@strata_bot_fan hi", BOT) == "@strata_bot_fan hi"  # someone else
    assert clean_text("/start@strata_bot", BOT) == "/help"
