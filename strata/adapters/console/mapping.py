"""Console input line → `InboundMessage`. Pure: no I/O."""

from __future__ import annotations

from datetime import datetime

from strata.core.types import InboundMessage

PLATFORM = "console"


def room_ref(user: str, channel: str) -> str:
    """The console room of `user`'s channel `channel` (one private channel per pair)."""
    return f"{user}/{channel}"


def to_inbound(line: str, *, user: str, channel: str, now: datetime) -> InboundMessage:
    text = line[:-1] if line.endswith("\n") else line
    return InboundMessage(
        platform=PLATFORM,
        room_id=room_ref(user, channel),
        sender_id=user,
        sender_name=user,
        text=text,
        ts=now,
        is_private=True,
        addressed_to_bot=True,
        room_name=channel,
    )
