"""strata.adapters.discord.mapping on captured gateway payloads (tests/fixtures/discord/*.json).

Each payload goes through discord.py's own MESSAGE_CREATE parser, so the mapping is tested on
the objects the adapter really receives.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC
from pathlib import Path
from typing import Any

import discord
import pytest
from discord.state import ConnectionState

from strata.adapters.discord.mapping import (
    command_text,
    mentions_bot,
    slash_commands,
    to_inbound,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "discord"


def payload(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


BOT_ID = int(payload("dm_own_message.json")["author"]["id"])


def parse(name: str) -> discord.Message:
    """The discord.Message discord.py builds from a captured MESSAGE_CREATE payload."""
    got: list[discord.Message] = []

    def dispatch(event: str, *args: Any) -> None:
        if event == "message":
            got.append(args[0])

    state = ConnectionState(dispatch=dispatch, handlers={}, hooks={}, http=None)  # type: ignore[arg-type]
    state.loop = asyncio.new_event_loop()
    try:
        state.parse_message_create(payload(name))  # type: ignore[arg-type]
    finally:
        state.loop.close()
    [message] = got
    return message


def test_dm_becomes_a_private_turn_of_the_sender() -> None:
    data = payload("dm_message.json")
    msg = to_inbound(parse("dm_message.json"), bot_id=BOT_ID)
    assert msg is not None
    assert msg.platform == "discord"
    assert msg.room_id == data["channel_id"]
    assert msg.sender_id == data["author"]["id"]
    assert msg.identity == f"discord:{data['author']['id']}"
    assert msg.sender_name == data["author"]["global_name"] == "Alice"
    assert msg.text == data["content"]
    assert msg.is_private and msg.addressed_to_bot
    assert msg.message_id == data["id"]
    assert msg.reply_to is None and msg.location is None
    assert msg.ts.tzinfo is not None and msg.ts.utcoffset() == UTC.utcoffset(None)
    # the time is the one encoded in the message id (a snowflake)
    assert msg.ts == discord.utils.snowflake_time(int(data["id"]))


def test_reply_keeps_the_message_it_answers() -> None:
    data = payload("dm_reply.json")
    msg = to_inbound(parse("dm_reply.json"), bot_id=BOT_ID)
    assert msg is not None
    assert msg.text == "she is a tabby"
    assert msg.reply_to == data["message_reference"]["message_id"]


def test_attachments_are_named_in_the_text() -> None:
    msg = to_inbound(parse("dm_attachment.json"), bot_id=BOT_ID)
    assert msg is not None
    assert msg.text == "look at this\n[attached file: miso.jpg]"


def test_username_is_used_when_there_is_no_display_name() -> None:
    message = parse("dm_message.json")
    message.author.global_name = None
    msg = to_inbound(message, bot_id=BOT_ID)
    assert msg is not None and msg.sender_name == payload("dm_message.json")["author"]["username"]


@pytest.mark.parametrize(
    "name",
    [
        "dm_own_message.json",  # Discord echoes the bot's own messages back
        "dm_pin_notice.json",  # a system notice, not something a person typed
        "guild_message.json",  # Strata talks in DMs only
        "guild_mention.json",
    ],
)
def test_not_a_turn(name: str) -> None:
    assert to_inbound(parse(name), bot_id=BOT_ID) is None


def test_a_mention_in_a_server_is_noticed_but_chatter_is_not() -> None:
    assert mentions_bot(parse("guild_mention.json"), bot_id=BOT_ID)
    assert not mentions_bot(parse("guild_message.json"), bot_id=BOT_ID)
    assert not mentions_bot(parse("dm_message.json"), bot_id=BOT_ID)  # a DM is a turn instead
    # someone else's bot id: the mention is not of us
    assert not mentions_bot(parse("guild_mention.json"), bot_id=BOT_ID + 1)


def test_a_message_from_another_bot_is_not_a_turn() -> None:
    message = parse("dm_message.json")
    message.author.bot = True
    assert to_inbound(message, bot_id=BOT_ID) is None


def test_slash_command_maps_to_the_text_command() -> None:
    assert command_text("forget", "  my old address ") == "/forget my old address"
    assert command_text("export") == "/export"


def test_slash_commands_keep_only_what_discord_accepts() -> None:
    got = slash_commands(
        [
            ("help", "list the commands"),
            ("memory", "x" * 150),
            ("Bad Name", "spaces and capitals are refused"),
            ("help", "a duplicate"),
            ("wipe", ""),
        ]
    )
    assert got == [("help", "list the commands"), ("memory", "x" * 100), ("wipe", "wipe")]
