"""Persons, identities and channels: who is talking, and where. Imports `bot` leaf types.

A person is a human; a shared room gets a person row of kind `room`, which owns that room's
memory, so every memory row has one `owner_id` and recall can partition on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from strata.core.clock import from_iso, to_iso
from strata.core.types import Channel, ChannelKind, OwnerKind, Person
from strata.memory.engines.db import Database, Row, placeholders
from strata.memory.store.export import export_person


def _person(row: Row) -> Person:
    return Person(
        id=row["id"],
        kind=OwnerKind(row["kind"]),
        name=row["name"],
        created_at=from_iso(row["created_at"]),
        timezone=row["timezone"],
        paused=bool(row["paused"]),
        last_active_at=from_iso(row["last_active_at"]) if row["last_active_at"] else None,
        # A database held before migration 0016 (SQLite; 0007 on PostgreSQL) has no switch
        # yet, and research was on for everyone then. `.keys()`: `in` on a sqlite3.Row
        # looks among the values.
        research=bool(row["research"]) if "research" in row.keys() else True,  # noqa: SIM118
    )


def _channel(row: Row) -> Channel:
    return Channel(
        id=row["id"],
        owner_id=row["owner_id"],
        platform=row["platform"],
        room_ref=row["room_ref"],
        kind=ChannelKind(row["kind"]),
        source=row["source"],
        memory_seed=bool(row["memory_seed"]),
        system_prompt=row["system_prompt"],
        model=row["model"],
        name=row["name"],
    )


class PersonRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, person_id: int) -> Person | None:
        row = await self.db.fetchone("SELECT * FROM persons WHERE id = ?", (person_id,))
        return _person(row) if row else None

    async def by_identity(self, identity: str) -> Person | None:
        row = await self.db.fetchone(
            "SELECT p.* FROM persons p JOIN identities i ON i.person_id = p.id"
            " WHERE i.identity = ?",
            (identity,),
        )
        return _person(row) if row else None

    async def get_or_create(self, identity: str, name: str, now: datetime) -> Person:
        """The person behind `identity`, created (with that identity) on first sight."""
        return await self._ensure(identity, OwnerKind.PERSON, name or identity, name, now)

    async def room_scope(self, platform: str, room_id: str, name: str, now: datetime) -> Person:
        """The memory owner of a shared room (a `room` person with identity `room:…`)."""
        identity = f"room:{platform}:{room_id}"
        return await self._ensure(identity, OwnerKind.ROOM, name or identity, name, now)

    async def _ensure(
        self, identity: str, kind: OwnerKind, name: str, display: str, now: datetime
    ) -> Person:
        found = await self.by_identity(identity)
        if found is not None:
            return found
        # Check, create and read back on the writer inside one transaction, so two first
        # messages racing each other end with one person and both see it.
        async with self.db.write() as conn:
            cur = await conn.execute(
                "SELECT person_id FROM identities WHERE identity = ?", (identity,)
            )
            existing = await cur.fetchone()
            if existing is None:
                cur = await conn.execute(
                    "INSERT INTO persons (kind, name, created_at) VALUES (?, ?, ?)",
                    (kind.value, name, to_iso(now)),
                )
                person_id = cur.lastrowid
                await conn.execute(
                    "INSERT INTO identities (identity, person_id, display_name, created_at)"
                    " VALUES (?, ?, ?, ?)",
                    (identity, person_id, display, to_iso(now)),
                )
            else:
                person_id = existing[0]
            cur = await conn.execute("SELECT * FROM persons WHERE id = ?", (person_id,))
            row = await cur.fetchone()
        assert row is not None
        return _person(row)

    async def find(self, name: str) -> Person | None:
        """Resolve an operator's `--user NAME`: `console:NAME`, an identity, or a unique name."""
        for identity in (f"console:{name}", name):
            person = await self.by_identity(identity)
            if person is not None:
                return person
        rows = await self.db.fetchall(
            "SELECT * FROM persons WHERE kind = 'person' AND name = ?", (name,)
        )
        return _person(rows[0]) if len(rows) == 1 else None

    async def identities(self, person_id: int) -> list[str]:
        rows = await self.db.fetchall(
            "SELECT identity FROM identities WHERE person_id = ? ORDER BY identity", (person_id,)
        )
        return [r[0] for r in rows]

    async def all(self, kind: OwnerKind | None = OwnerKind.PERSON) -> list[Person]:
        if kind is None:
            rows = await self.db.fetchall("SELECT * FROM persons ORDER BY id")
        else:
            rows = await self.db.fetchall(
                "SELECT * FROM persons WHERE kind = ? ORDER BY id", (kind.value,)
            )
        return [_person(r) for r in rows]

    async def mark_active(self, person_id: int, now: datetime) -> None:
        await self.db.execute_write(
            "UPDATE persons SET last_active_at = ? WHERE id = ?", (to_iso(now), person_id)
        )

    async def set_paused(self, person_id: int, paused: bool) -> None:
        await self.db.execute_write(
            "UPDATE persons SET paused = ? WHERE id = ?", (int(paused), person_id)
        )

    async def export(self, person_id: int) -> dict[str, Any]:
        """Everything stored about a person, as JSON-ready data (`/export`)."""
        return await export_person(self.db, person_id)

    async def pause(self, person_id: int, now: datetime) -> None:
        """Pause a person's memory (`/pause`), noting the newest transcript row so far: what
        comes after it is forgotten on `/resume`."""
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO memory_pauses (person_id, after_row_id, paused_at)"
                " SELECT ?, coalesce(max(id), 0), ? FROM transcript WHERE TRUE"
                " ON CONFLICT (person_id) DO UPDATE SET after_row_id = excluded.after_row_id,"
                " paused_at = excluded.paused_at",
                (person_id, to_iso(now)),
            )
            await conn.execute("UPDATE persons SET paused = 1 WHERE id = ?", (person_id,))

    async def paused_after(self, person_id: int) -> int | None:
        """The newest transcript row before the person's pause (None: no pause recorded)."""
        value = await self.db.fetchval(
            "SELECT after_row_id FROM memory_pauses WHERE person_id = ?", (person_id,)
        )
        return None if value is None else int(value)

    async def resume(self, person_id: int) -> None:
        """End a pause: the pause record goes, new memory is kept again."""
        async with self.db.write() as conn:
            await conn.execute("DELETE FROM memory_pauses WHERE person_id = ?", (person_id,))
            await conn.execute("UPDATE persons SET paused = 0 WHERE id = ?", (person_id,))

    async def paused_among(self, person_ids: Iterable[int | None]) -> set[int]:
        """Which of `person_ids` have paused memory (`/pause`): they feed no episodes."""
        ids = sorted({p for p in person_ids if p is not None})
        if not ids:
            return set()
        marks = placeholders(ids)
        rows = await self.db.fetchall(
            f"SELECT id FROM persons WHERE paused = 1 AND id IN ({marks})", ids
        )
        return {int(r[0]) for r in rows}

    async def set_research(self, person_id: int, on: bool) -> None:
        await self.db.execute_write(
            "UPDATE persons SET research = ? WHERE id = ?", (int(on), person_id)
        )

    async def set_timezone(self, person_id: int, tz: str) -> None:
        await self.db.execute_write("UPDATE persons SET timezone = ? WHERE id = ?", (tz, person_id))


class ChannelRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def get(self, channel_id: int) -> Channel | None:
        row = await self.db.fetchone("SELECT * FROM channels WHERE id = ?", (channel_id,))
        return _channel(row) if row else None

    async def by_ref(self, platform: str, room_ref: str) -> Channel | None:
        row = await self.db.fetchone(
            "SELECT * FROM channels WHERE platform = ? AND room_ref = ?", (platform, room_ref)
        )
        return _channel(row) if row else None

    async def get_or_create(
        self,
        *,
        platform: str,
        room_ref: str,
        owner_id: int,
        kind: ChannelKind,
        source: str,
        now: datetime,
        memory_seed: bool = True,
        name: str = "",
        system_prompt: str | None = None,
    ) -> Channel:
        found = await self.by_ref(platform, room_ref)
        if found is not None:
            return found
        async with self.db.write() as conn:
            await conn.execute(
                "INSERT INTO channels (owner_id, platform, room_ref, kind, source,"
                " memory_seed, system_prompt, name, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (
                    owner_id,
                    platform,
                    room_ref,
                    kind.value,
                    source,
                    int(memory_seed),
                    system_prompt,
                    name,
                    to_iso(now),
                ),
            )
            cur = await conn.execute(
                "SELECT * FROM channels WHERE platform = ? AND room_ref = ?", (platform, room_ref)
            )
            row = await cur.fetchone()
        assert row is not None
        return _channel(row)

    async def for_owner(self, owner_id: int) -> list[Channel]:
        rows = await self.db.fetchall(
            "SELECT * FROM channels WHERE owner_id = ? ORDER BY id", (owner_id,)
        )
        return [_channel(r) for r in rows]
