"""Matrix events ↔ Strata values. Pure: no I/O, no nio objects, only the event JSON as the
homeserver sends it (captured payloads in tests/fixtures/matrix/ drive its tests).

- `to_inbound`: an `m.room.message` timeline event → `InboundMessage` (or None for what the
  bot must not answer: its own events, notices from other bots, redactions, other types);
  a room with the bot and one human is private, a larger room is shared, and there the bot is
  addressed by a mention (user id, display name, `m.mentions`, a matrix.to pill) or a reply to
  one of its own events.
- `reply_content` / `edit_content`: the `m.text` contents the bot sends (plain `body` plus a
  safe HTML `formatted_body`), and `content_size`, the byte size that is checked against the
  homeserver's 65,536-byte event limit.
- `render_html`: a small, safe markdown subset → HTML (everything is escaped; the shared
  parser of `strata.adapters.markdown` with Matrix's tags).

Imports `strata.adapters.markdown`, `strata.core.types` and `strata.core.config` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from strata.adapters.markdown import Style, render
from strata.core.config import AccessSettings
from strata.core.types import InboundMessage, Location

PLATFORM = "matrix"

#: Synapse rejects an event whose canonical JSON (content plus envelope: ids, signatures,
#: hashes, unsigned) exceeds 65,536 bytes.
EVENT_LIMIT = 65_536
#: Room for the envelope around the content (ids, timestamps, hashes, signatures, auth events).
ENVELOPE_BYTES = 4_096
#: Megolm turns the plaintext event into base64 ciphertext (4/3 larger) plus session fields.
ENCRYPTED_OVERHEAD = 1_024


def content_budget(encrypted: bool) -> int:
    """The largest content (JSON bytes) the bot puts in one event in such a room."""
    budget = EVENT_LIMIT - ENVELOPE_BYTES
    if encrypted:
        budget = budget * 3 // 4 - ENCRYPTED_OVERHEAD
    return budget


@dataclass(frozen=True, slots=True)
class RoomInfo:
    """What the mapping needs to know about a room (the adapter reads it from nio's state)."""

    room_id: str
    member_count: int  # joined + invited, the bot included
    name: str = ""
    encrypted: bool = False

    @property
    def is_private(self) -> bool:
        """The bot and one human: that person's private channel."""
        return self.member_count <= 2


@dataclass(frozen=True, slots=True)
class BotInfo:
    user_id: str
    display_name: str = ""


# -- inbound ------------------------------------------------------------------------------------

_MEDIA = {"m.image": "an image", "m.file": "a file", "m.audio": "an audio clip",
          "m.video": "a video"}


def event_time(event: Mapping[str, Any]) -> datetime:
    ts = event.get("origin_server_ts")
    if not isinstance(ts, int | float):
        return datetime.fromtimestamp(0, UTC)
    return datetime.fromtimestamp(ts / 1000, UTC)


def parse_geo_uri(uri: str) -> Location | None:
    """`geo:52.52,13.41;u=35` (RFC 5870) → Location; None when it is not a valid point."""
    m = re.fullmatch(r"\s*geo:\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)(?:,[^;]*)?(;.*)?\s*",
                     uri, re.IGNORECASE)
    if m is None:
        return None
    lat, lon = float(m.group(1)), float(m.group(2))
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    return Location(lat, lon)


_REPLY_FALLBACK = re.compile(r"\A(?:>[^\n]*\n)+\n?")


def strip_reply_fallback(body: str) -> str:
    """Drop the `> <@user> quoted text` lines older clients put before a reply's own text."""
    if body.startswith("> <"):
        return _REPLY_FALLBACK.sub("", body, count=1)
    return body


def _mentions(content: Mapping[str, Any], text: str, bot: BotInfo) -> bool:
    mentions = content.get("m.mentions")
    if isinstance(mentions, Mapping):
        users = mentions.get("user_ids")
        if isinstance(users, list) and bot.user_id in users:
            return True
    formatted = content.get("formatted_body")
    if isinstance(formatted, str) and f"matrix.to/#/{bot.user_id}" in formatted:
        return True
    if bot.user_id.lower() in text.lower():
        return True
    names = {bot.display_name, bot.user_id.split(":", 1)[0].lstrip("@")} - {""}
    return any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text, re.IGNORECASE) for n in names)


def reply_target(content: Mapping[str, Any]) -> str | None:
    relates = content.get("m.relates_to")
    if not isinstance(relates, Mapping):
        return None
    reply = relates.get("m.in_reply_to")
    if isinstance(reply, Mapping) and isinstance(reply.get("event_id"), str):
        return str(reply["event_id"])
    return None


def edit_target(content: Mapping[str, Any]) -> str | None:
    relates = content.get("m.relates_to")
    if isinstance(relates, Mapping) and relates.get("rel_type") == "m.replace":
        target = relates.get("event_id")
        return target if isinstance(target, str) else None
    return None


def _text_and_location(
    content: Mapping[str, Any], sender_name: str
) -> tuple[str, Location | None] | None:
    """What a message event says, by its msgtype; None for a type the bot must not take in."""
    msgtype = content.get("msgtype")
    body = content.get("body")
    if not isinstance(body, str):
        return None
    location: Location | None = None
    if msgtype == "m.text":
        text = strip_reply_fallback(body)
    elif msgtype == "m.emote":
        text = f"* {sender_name} {body}"
    elif msgtype == "m.location":
        geo = content.get("geo_uri")
        location = parse_geo_uri(geo) if isinstance(geo, str) else None
        if location is None:
            return None
        text = body if body and not body.startswith("geo:") else ""
    elif msgtype in _MEDIA:
        text = f"[sent {_MEDIA[msgtype]}: {body}]"
    else:
        return None  # m.notice (other bots: never answer, no loops) and unknown types
    return text, location


def to_inbound(
    event: Mapping[str, Any],
    room: RoomInfo,
    bot: BotInfo,
    *,
    sender_name: str = "",
    bot_event_ids: Container[str] = (),
) -> InboundMessage | None:
    """Map one timeline event; None for anything the bot must not treat as a message."""
    if event.get("type") != "m.room.message" or event.get("sender") == bot.user_id:
        return None
    sender = event.get("sender")
    content = event.get("content")
    if not isinstance(sender, str) or not isinstance(content, Mapping) or not content:
        return None  # redacted events have empty content
    edited_of = edit_target(content)
    if edited_of is not None and isinstance(content.get("m.new_content"), Mapping):
        content = {**content["m.new_content"], "m.relates_to": content.get("m.relates_to")}
    said = _text_and_location(content, sender_name or sender)
    if said is None:
        return None
    text, location = said
    reply_to = reply_target(content)
    if room.is_private:
        addressed = True
    else:
        addressed = (reply_to is not None and reply_to in bot_event_ids) or _mentions(
            content, text, bot
        )
    event_id = event.get("event_id")
    return InboundMessage(
        platform=PLATFORM,
        room_id=room.room_id,
        sender_id=sender,
        text=text,
        ts=event_time(event),
        sender_name=sender_name or sender,
        is_private=room.is_private,
        # An edit is recorded, not answered again.
        addressed_to_bot=addressed and edited_of is None,
        message_id=event_id if isinstance(event_id, str) else None,
        reply_to=reply_to,
        edited_of=edited_of,
        location=location,
        room_name=room.name,
    )


def identity(user_id: str) -> str:
    """The Strata identity of a Matrix user: `matrix:@alice:example.org`."""
    return f"{PLATFORM}:{user_id}"


def invite_allowed(inviter: str, access: AccessSettings) -> bool:
    """Join a room on an invite from this user? (the allowlist; empty = everyone)."""
    who = identity(inviter)
    return who in access.admins or not access.allow_users or who in access.allow_users


# -- outbound -----------------------------------------------------------------------------------

MATRIX = Style(
    tags={"strong": "strong", "em": "em", "s": "del", "code": "code", "heading": "strong"},
    schemes=("http://", "https://"),
    newline="<br>",
    quote=True,
)


def render_html(text: str) -> str:
    """A safe subset of markdown as Matrix HTML (`strata.adapters.markdown`): code blocks and
    spans, bold, italic, strikethrough, http(s) links, line breaks. Everything the model wrote
    is escaped, so no markup of its own passes."""
    return render(text, MATRIX)


def reply_content(text: str, *, in_reply_to: str | None = None) -> dict[str, Any]:
    """An `m.text` message with an HTML `formatted_body`."""
    content: dict[str, Any] = {
        "msgtype": "m.text",
        "body": text,
        "format": "org.matrix.custom.html",
        "formatted_body": render_html(text),
    }
    if in_reply_to is not None:
        content["m.relates_to"] = {"m.in_reply_to": {"event_id": in_reply_to}}
    return content


def edit_content(event_id: str, text: str) -> dict[str, Any]:
    """An `m.replace` edit of the bot's own message `event_id` to `text`.

    The outer body is the fallback for clients without edit support; `m.mentions` is empty so
    an edit never notifies anyone again.
    """
    return {
        "msgtype": "m.text",
        "body": f"* {text}",
        "m.new_content": reply_content(text),
        "m.relates_to": {"rel_type": "m.replace", "event_id": event_id},
        "m.mentions": {},
    }


_PLACEHOLDER_ID = "$" + "x" * 43  # as long as a real event id


def content_size(text: str) -> int:
    """The JSON bytes of the largest event the bot makes for `text` (an edit: the text, its
    fallback and its HTML), as the homeserver measures it (UTF-8, not \\u escapes)."""
    content = edit_content(_PLACEHOLDER_ID, text)
    return len(json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
