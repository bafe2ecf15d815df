"""The services a person connected from a private chat, and what the mailbox sync keeps.

`ConnectorStore` keeps one row per (person, kind) in the `connectors` table: the label
`/memory` shows and the sealed secret (address and login) that only the connector sync opens.
The secret never leaves this table: `strata.memory.store.export` does not list it, and `/wipe`
deletes it with the person (ON DELETE CASCADE). `disconnect` also deletes what was copied from the
service: its calendar events, mail headers and the facts it wrote (`connector:<kind>`).
`MailHeaders` keeps the newest headers of a connected mailbox. Imports `bot` leaf modules and
`memory`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database
from strata.memory.store.facts import FactRepo

KINDS = ("calendar", "contacts", "mail")


@dataclass(frozen=True, slots=True)
class Connected:
    """A connected service as `/memory` lists it: no secret in here."""

    kind: str
    label: str
    created_at: datetime
    synced_at: datetime | None
    last_error: str | None


@dataclass(frozen=True, slots=True)
class MailHeader:
    uid: str
    sender: str
    subject: str
    sent_at: datetime


class ConnectorStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def connect(self, owner_id: int, kind: str, label: str, secret: str,
                      now: datetime) -> None:
        """Store (or replace) the person's `kind` connector."""
        await self.db.execute_write(
            "INSERT INTO connectors (owner_id, kind, label, secret, created_at)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner_id, kind) DO UPDATE SET"
            " label = excluded.label, secret = excluded.secret,"
            " created_at = excluded.created_at, synced_at = NULL, last_error = NULL",
            (owner_id, kind, label, secret, to_iso(now)),
        )

    async def disconnect(self, owner_id: int, kind: str) -> bool:
        """Forget the connector and everything copied from it; False when none was set up."""
        fact_ids = [r[0] for r in await self.db.fetchall(
            "SELECT id FROM facts WHERE owner_id = ? AND source = ?",
            (owner_id, f"connector:{kind}"))]
        async with self.db.write() as conn:
            cur = await conn.execute(
                "DELETE FROM connectors WHERE owner_id = ? AND kind = ?", (owner_id, kind))
            found = cur.rowcount > 0
            await conn.execute(
                "DELETE FROM calendar_events WHERE owner_id = ? AND connector = ?",
                (owner_id, kind))
            if kind == "mail":
                await conn.execute("DELETE FROM mail_headers WHERE owner_id = ?", (owner_id,))
            await FactRepo.delete_in(conn, fact_ids)
        await self.db.reclaim(("connectors", "calendar_events", "mail_headers", "facts"))
        return found

    async def listed(self, owner_id: int) -> list[Connected]:
        rows = await self.db.fetchall(
            "SELECT kind, label, created_at, synced_at, last_error FROM connectors"
            " WHERE owner_id = ? ORDER BY kind", (owner_id,))
        return [Connected(r["kind"], r["label"], from_iso(r["created_at"]),
                          from_iso(r["synced_at"]) if r["synced_at"] else None,
                          r["last_error"]) for r in rows]

    async def secret(self, owner_id: int, kind: str) -> str | None:
        return await self.db.fetchval(
            "SELECT secret FROM connectors WHERE owner_id = ? AND kind = ?", (owner_id, kind))

    async def synced(self, owner_id: int, kind: str, now: datetime,
                     error: str | None = None) -> None:
        """Record a sync: its time when it worked, else the (credential-free) error."""
        if error is None:
            await self.db.execute_write(
                "UPDATE connectors SET synced_at = ?, last_error = NULL"
                " WHERE owner_id = ? AND kind = ?", (to_iso(now), owner_id, kind))
        else:
            await self.db.execute_write(
                "UPDATE connectors SET last_error = ? WHERE owner_id = ? AND kind = ?",
                (error, owner_id, kind))


class MailHeaders:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def replace(self, owner_id: int, headers: Sequence[MailHeader],
                      now: datetime) -> None:
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM mail_headers WHERE owner_id = ?", (owner_id,))
            await conn.executemany(
                "INSERT INTO mail_headers (owner_id, uid, sender, subject, sent_at, synced_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner_id, uid) DO NOTHING",
                [(owner_id, h.uid, h.sender, h.subject, to_iso(h.sent_at), to_iso(now))
                 for h in headers],
            )

    async def recent(self, owner_id: int, since: datetime, limit: int = 5) -> list[MailHeader]:
        rows = await self.db.fetchall(
            "SELECT uid, sender, subject, sent_at FROM mail_headers WHERE owner_id = ?"
            " AND sent_at >= ? ORDER BY sent_at DESC LIMIT ?",
            (owner_id, to_iso(since), limit))
        return [MailHeader(r["uid"], r["sender"], r["subject"], from_iso(r["sent_at"]))
                for r in rows]
