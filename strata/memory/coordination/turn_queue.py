"""The turn queue: turns taken in from a platform and not yet answered and shown.

The process polling a platform stores each message (the transcript row) and queues its turn
here before it confirms the message to the platform; any process then claims the channel
(`strata.memory.coordination.leases`, `turn:<channel id>`) and answers that channel's queued turns
in order, deleting each entry once its reply is shown. The inbound message is kept as JSON: a chat
command is never stored in the transcript, so its text lives only here until it is done.
Imports `bot` leaf types and `strata.memory.engines.db`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from strata.core.clock import from_iso, to_iso
from strata.core.types import InboundMessage, Location
from strata.memory.engines.db import Database


@dataclass(frozen=True, slots=True)
class QueuedTurn:
    id: int
    platform: str
    channel_id: int
    person_id: int
    turn_id: str
    stored: bool
    reply_to: str | None
    msg: InboundMessage
    created_at: datetime


def message_json(msg: InboundMessage) -> str:
    loc = msg.location
    return json.dumps({
        "platform": msg.platform, "room_id": msg.room_id, "sender_id": msg.sender_id,
        "text": msg.text, "ts": to_iso(msg.ts), "sender_name": msg.sender_name,
        "is_private": msg.is_private, "addressed_to_bot": msg.addressed_to_bot,
        "message_id": msg.message_id, "reply_to": msg.reply_to, "edited_of": msg.edited_of,
        "location": None if loc is None else [loc.lat, loc.lon, loc.live],
        "room_name": msg.room_name,
    }, ensure_ascii=False)


def message_from_json(text: str) -> InboundMessage:
    data: dict[str, Any] = json.loads(text)
    loc = data.pop("location")
    return InboundMessage(**{**data, "ts": from_iso(data["ts"]),
                             "location": None if loc is None else Location(*loc)})


def _queued(row: Any) -> QueuedTurn:
    return QueuedTurn(int(row["id"]), str(row["platform"]), int(row["channel_id"]),
                      int(row["person_id"]), str(row["turn_id"]), bool(row["stored"]),
                      row["reply_to"], message_from_json(row["message"]),
                      from_iso(row["created_at"]))


class TurnQueue:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(self, *, platform: str, channel_id: int, person_id: int, turn_id: str,
                  stored: bool, msg: InboundMessage, reply_to: str | None,
                  now: datetime) -> bool:
        """Queue a turn; False when a turn with this id is queued already."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "INSERT INTO turn_queue (platform, channel_id, person_id, turn_id, stored,"
                " reply_to, message, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (turn_id) DO NOTHING",
                (platform, channel_id, person_id, turn_id, int(stored), reply_to,
                 message_json(msg), to_iso(now)))
            return (cur.rowcount or 0) == 1

    async def has(self, turn_id: str) -> bool:
        return await self.db.fetchval(
            "SELECT count(*) FROM turn_queue WHERE turn_id = ?", (turn_id,)) > 0

    async def channels(self, platform: str, limit: int = 100) -> list[int]:
        """Channels of `platform` with queued turns, the longest waiting first."""
        rows = await self.db.fetchall(
            "SELECT channel_id, min(id) AS first FROM turn_queue WHERE platform = ?"
            " GROUP BY channel_id ORDER BY first LIMIT ?", (platform, limit))
        return [int(r["channel_id"]) for r in rows]

    async def for_channel(self, channel_id: int) -> list[QueuedTurn]:
        """The channel's queued turns in arrival order."""
        rows = await self.db.fetchall(
            "SELECT * FROM turn_queue WHERE channel_id = ? ORDER BY id", (channel_id,))
        return [_queued(r) for r in rows]

    async def done(self, queue_id: int) -> None:
        await self.db.execute_write("DELETE FROM turn_queue WHERE id = ?", (queue_id,))

    async def count(self, platform: str | None = None) -> int:
        if platform is None:
            return int(await self.db.fetchval("SELECT count(*) FROM turn_queue"))
        return int(await self.db.fetchval(
            "SELECT count(*) FROM turn_queue WHERE platform = ?", (platform,)))
