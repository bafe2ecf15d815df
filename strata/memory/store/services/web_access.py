"""The web view's one-time links and sessions, and the recall log it shows, in the database.

Every process on one database sees them, so a `/web` link issued by the process that answered
the chat opens in the process that serves the pages. A token is stored as its sha256 only (a
copy of the database opens nothing). Redeeming a link is one `DELETE` whose row count says who
won, so a link opens once even when two processes race. Imports `strata.core` and
`strata.memory.engines.db`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class StoredSession:
    person_id: int
    csrf: str
    expires: datetime


class WebTokens:
    """Links (`kind = 'link'`, spent when opened) and sessions (`kind = 'session'`)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, token: str, kind: str, person_id: int, expires: datetime,
                  csrf: str | None = None) -> None:
        await self.db.execute_write(
            "INSERT INTO web_tokens (token_hash, kind, person_id, csrf, expires_at)"
            " VALUES (?, ?, ?, ?, ?)", (token_hash(token), kind, person_id, csrf, to_iso(expires)))

    async def spend_link(self, token: str, now: datetime) -> int | None:
        """The person a live link was for, spending it; None for an unknown, used or expired
        link (an expired one is deleted too). One `DELETE … RETURNING`: of two processes
        spending the same link, exactly one gets the row."""
        async with self.db.write() as conn:
            cur = await conn.execute(
                "DELETE FROM web_tokens WHERE token_hash = ? AND kind = 'link'"
                " RETURNING person_id, expires_at", (token_hash(token),))
            row = await cur.fetchone()
        if row is None or from_iso(row["expires_at"]) <= now:
            return None
        return int(row["person_id"])

    async def live_link(self, token: str, now: datetime) -> bool:
        """Whether `token` is a link that can still be opened (read only: nothing is spent)."""
        row = await self.db.fetchone(
            "SELECT expires_at FROM web_tokens WHERE token_hash = ? AND kind = 'link'",
            (token_hash(token),))
        return row is not None and from_iso(row["expires_at"]) > now

    async def session(self, token: str, now: datetime) -> StoredSession | None:
        row = await self.db.fetchone(
            "SELECT person_id, csrf, expires_at FROM web_tokens"
            " WHERE token_hash = ? AND kind = 'session'", (token_hash(token),))
        if row is None or from_iso(row["expires_at"]) <= now:
            return None
        return StoredSession(int(row["person_id"]), str(row["csrf"]), from_iso(row["expires_at"]))

    async def end(self, token: str) -> None:
        await self.db.execute_atomic(
            "DELETE FROM web_tokens WHERE token_hash = ?", (token_hash(token),))

    async def drop_expired(self, now: datetime) -> int:
        return await self.db.execute_atomic(
            "DELETE FROM web_tokens WHERE expires_at <= ?", (to_iso(now),))


@dataclass(frozen=True, slots=True)
class RecallRecord:
    at: datetime
    channel_id: int
    person_id: int  # who asked (in a shared room, not the owner)
    query: str
    block: str | None  # None: recall found nothing worth injecting


class RecallLogRepo:
    """The last `keep` recall blocks per memory owner."""

    def __init__(self, db: Database, keep: int = 10) -> None:
        self.db = db
        self.keep = keep

    async def add(self, owner_id: int, record: RecallRecord) -> None:
        # One transaction (one commit on the turn's path): the new block, then only the newest
        # `keep` of the owner's stay, by insertion order.
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO recall_log (owner_id, channel_id, person_id, at, query, block)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (owner_id, record.channel_id, record.person_id, to_iso(record.at), record.query,
                 record.block))
            await conn.execute(
                "DELETE FROM recall_log WHERE owner_id = ? AND id <= (SELECT id FROM recall_log"
                " WHERE owner_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)",
                (owner_id, owner_id, self.keep))

    async def recent(self, owner_id: int) -> list[RecallRecord]:
        """Newest first."""
        rows = await self.db.fetchall(
            "SELECT channel_id, person_id, at, query, block FROM recall_log WHERE owner_id = ?"
            " ORDER BY id DESC LIMIT ?", (owner_id, self.keep))
        return [RecallRecord(from_iso(r["at"]), int(r["channel_id"]), int(r["person_id"]),
                             str(r["query"]), r["block"]) for r in rows]

    async def clear(self, person_id: int) -> None:
        """Everything recorded for `person_id`'s memory and every query they asked (also in
        shared rooms): a block may quote what they forgot, a query is their words."""
        await self.db.execute_write(
            "DELETE FROM recall_log WHERE owner_id = ? OR person_id = ?", (person_id, person_id))
