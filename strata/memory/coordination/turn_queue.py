"""The turn queue: turns taken in from a platform and not yet answered and shown.

`strata.bot.scheduler.TurnScheduler.submit` stores each message (the transcript row) and
queues its turn here in one transaction (`strata.memory.store.intake`) before the adapter
confirms the message to its platform; any process then claims the channel
(`strata.memory.coordination.leases`, `turn:<channel id>`) and runs that channel's queued turns
in order, counting each run it starts (`start`: a second run is a retry, whose sends a
platform may dedupe) and deleting each entry once its reply is shown. The inbound message is
kept as JSON: a chat command is never stored in the transcript, so its text lives only here
until it is done.
Imports `bot` leaf types and `strata.memory.engines.db`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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
    attempts: int = 0  # runs started before this one (`TurnQueue.start`)


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A turn to queue: `stored` says whether its user row is in the transcript (a chat command
    never is: its text lives only here); `reply_to` is the platform message a reply answers."""

    platform: str
    channel_id: int
    person_id: int
    turn_id: str
    stored: bool
    msg: InboundMessage
    reply_to: str | None
    created_at: datetime


async def insert_turn(conn: Any, turn: NewTurn) -> bool:
    """Queue `turn` inside the caller's write transaction; False when its id is queued already."""
    cur = await conn.execute(
        "INSERT INTO turn_queue (platform, channel_id, person_id, turn_id, stored,"
        " reply_to, message, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (turn_id) DO NOTHING",
        (turn.platform, turn.channel_id, turn.person_id, turn.turn_id, int(turn.stored),
         turn.reply_to, message_json(turn.msg), to_iso(turn.created_at)))
    return (cur.rowcount or 0) == 1


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
                      from_iso(row["created_at"]), int(row["attempts"]))


class TurnQueue:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(self, turn: NewTurn) -> bool:
        """Queue a turn; False when a turn with this id is queued already."""
        async with self.db.write() as conn:
            return await insert_turn(conn, turn)

    async def has(self, turn_id: str) -> bool:
        return await self.db.fetchval(
            "SELECT count(*) FROM turn_queue WHERE turn_id = ?", (turn_id,)) > 0

    async def channels(self, platforms: Sequence[str], limit: int = 100) -> list[int]:
        """Channels of `platforms` with queued turns, the longest waiting first."""
        if not platforms:
            return []
        marks = ", ".join("?" * len(platforms))
        rows = await self.db.fetchall(
            "SELECT channel_id, min(id) AS first FROM turn_queue"
            f" WHERE platform IN ({marks}) GROUP BY channel_id ORDER BY first LIMIT ?",
            (*platforms, limit))
        return [int(r["channel_id"]) for r in rows]

    async def waiting(self, channel_id: int) -> set[str]:
        """The turn ids queued in the channel: their rows stay out of other turns' prompts."""
        rows = await self.db.fetchall(
            "SELECT turn_id FROM turn_queue WHERE channel_id = ?", (channel_id,))
        return {str(r["turn_id"]) for r in rows}

    async def for_channel(self, channel_id: int) -> list[QueuedTurn]:
        """The channel's queued turns in arrival order."""
        rows = await self.db.fetchall(
            "SELECT * FROM turn_queue WHERE channel_id = ? ORDER BY id", (channel_id,))
        return [_queued(r) for r in rows]

    async def start(self, queue_id: int) -> None:
        """Count a run of the entry as started before anything of its reply is sent: a later
        run of it (after a crash) is then known to be a retry."""
        await self.db.execute_write(
            "UPDATE turn_queue SET attempts = attempts + 1 WHERE id = ?", (queue_id,))

    async def done(self, queue_id: int) -> None:
        await self.db.execute_write("DELETE FROM turn_queue WHERE id = ?", (queue_id,))

    async def done_turn(self, turn_id: str) -> None:
        """Remove the turn `turn_id` (a turn run at once, outside the queue: it is queued only
        while it runs, so that a crash leaves it to be answered by the next start)."""
        await self.db.execute_write("DELETE FROM turn_queue WHERE turn_id = ?", (turn_id,))

    async def count(self, platform: str | None = None) -> int:
        if platform is None:
            return int(await self.db.fetchval("SELECT count(*) FROM turn_queue"))
        return int(await self.db.fetchval(
            "SELECT count(*) FROM turn_queue WHERE platform = ?", (platform,)))
