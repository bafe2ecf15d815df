"""The portrait: the synthesis job's short description of who a person is, in every prompt.

Each refresh appends a row (the history is kept small by the caller); the newest one counts.
`based_on` records the input watermark it was written from. Imports `bot` leaf modules and
`strata.memory.engines.db`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strata.core.clock import from_iso, to_iso
from strata.memory.engines.db import Database

KEEP = 5  # older portraits are deleted: only the newest is used


@dataclass(frozen=True, slots=True)
class Portrait:
    id: int
    owner_id: int
    text: str
    based_on: str
    created_at: datetime


class PortraitRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def latest(self, owner_id: int) -> Portrait | None:
        row = await self.db.fetchone(
            "SELECT * FROM portraits WHERE owner_id = ? ORDER BY id DESC LIMIT 1", (owner_id,)
        )
        if row is None:
            return None
        return Portrait(row["id"], row["owner_id"], row["text"], row["based_on"],
                        from_iso(row["created_at"]))

    async def save(self, owner_id: int, text: str, based_on: str, now: datetime) -> int:
        async with self.db.write() as conn:
            cur = await conn.execute(
                "INSERT INTO portraits (owner_id, text, based_on, created_at) VALUES (?, ?, ?, ?)",
                (owner_id, text, based_on, to_iso(now)),
            )
            new_id = cur.lastrowid
            await conn.execute(
                "DELETE FROM portraits WHERE owner_id = ? AND id NOT IN (SELECT id FROM"
                " portraits WHERE owner_id = ? ORDER BY id DESC LIMIT ?)",
                (owner_id, owner_id, KEEP),
            )
        assert new_id is not None
        return new_id
