"""Identity linking: one-time `/link` codes and merging two persons into one.

`LinkCodes.issue` stores a short random code for a person (expiring, one per person at a
time); `LinkCodes.redeem` consumes it once. `merge_persons(db, keep, gone)` moves everything
the `gone` person owns to `keep` — identities, channels, transcript, episodes, vectors and any
other table that references `persons` — in one transaction, then deletes `gone`, so memory
follows the person. Imports `bot` leaf modules, `strata.memory.engines.db` and
`strata.memory.engines.dialect`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import aiosqlite

from strata.core.clock import to_iso
from strata.memory.engines.db import Database, placeholders
from strata.memory.engines.dialect import Dialect

# No 0/O, 1/I/L: codes are read off one screen and typed on another.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8  # 31^8 ≈ 8.5e11: guessing one inside its lifetime is hopeless


def normalise_code(text: str) -> str:
    return "".join(ch for ch in text.upper() if ch.isalnum())


def format_code(code: str) -> str:
    return f"{code[:4]}-{code[4:]}"


@dataclass(frozen=True, slots=True)
class LinkCode:
    code: str
    person_id: int
    identity: str


class LinkCodes:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def merge(self, keep: int, gone: int) -> None:
        """Join person `gone` into person `keep` (a redeemed code): see `merge_persons`."""
        await merge_persons(self.db, keep, gone)

    async def issue(
        self, person_id: int, identity: str, now: datetime, ttl: timedelta
    ) -> str:
        """A new code for `person_id` (replacing any earlier one); expired codes are dropped."""
        code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
        async with self.db.write() as conn:
            await conn.execute(
                "DELETE FROM link_codes WHERE person_id = ? OR expires_at <= ?",
                (person_id, to_iso(now)),
            )
            await conn.execute(
                "INSERT INTO link_codes (code, person_id, identity, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (code, person_id, identity, to_iso(now), to_iso(now + ttl)),
            )
        return code

    async def redeem(self, text: str, now: datetime) -> LinkCode | None:
        """Consume the code in `text`: its owner, or None when unknown or expired."""
        code = normalise_code(text)
        async with self.db.write() as conn:
            cur = await conn.execute(
                "DELETE FROM link_codes WHERE code = ? RETURNING person_id, identity, expires_at",
                (code,),
            )
            row = await cur.fetchone()
        if row is None or row[2] <= to_iso(now):
            return None
        return LinkCode(code, int(row[0]), str(row[1]))


async def merge_persons(db: Database, keep: int, gone: int) -> None:
    """Move everything of person `gone` to person `keep`, then delete `gone`.

    Found generically, so tables added by later migrations follow too: every column with a
    foreign key to `persons`, every `owner_id`/`person_id` column, and vec0 tables (whose
    partition key cannot be updated, so their rows are re-inserted). A row that would collide
    with one `keep` already has (per-person state) is dropped in favour of `keep`'s.
    """
    if keep == gone:
        raise ValueError("cannot merge a person into itself")
    dialect = db.dialect
    async with db.write() as conn:
        cur = await conn.execute(dialect.data_tables)
        tables = [(str(r[0]), bool(r[1])) for r in await cur.fetchall()]
        for name, reinsert in tables:
            if name == "persons":
                continue
            if reinsert:
                await _move_vec_rows(conn, dialect, name, keep, gone)
                continue
            cur = await conn.execute(dialect.table_columns, (name,))
            columns = {str(r[0]) for r in await cur.fetchall()}
            cur = await conn.execute(dialect.table_parents, (name,))
            refs = {str(r[1]) for r in await cur.fetchall() if str(r[0]) == "persons"}
            moved = sorted(refs | (columns & {"owner_id", "person_id"}))
            if not moved:
                continue
            cur = await conn.execute(dialect.unique_keys, (name,))
            keys: dict[str, list[str]] = {}
            for key, column in await cur.fetchall():
                keys.setdefault(str(key), []).append(str(column))
            for column in moved:
                await conn.execute(
                    dialect.update_or_ignore(
                        name, column, [tuple(k) for k in keys.values() if column in k]),
                    (keep, gone),
                )
        # The later of the two activity times (text time stamps compare as text).
        await conn.execute(
            "UPDATE persons SET last_active_at = coalesce((SELECT CASE WHEN"
            " g.last_active_at IS NULL OR g.last_active_at <= coalesce(persons.last_active_at,"
            " '') THEN persons.last_active_at ELSE g.last_active_at END"
            " FROM persons g WHERE g.id = ?), persons.last_active_at) WHERE id = ?",
            (gone, keep),
        )
        await conn.execute("DELETE FROM persons WHERE id = ?", (gone,))


async def _move_vec_rows(conn: aiosqlite.Connection, dialect: Dialect, table: str, keep: int,
                         gone: int) -> None:
    execute = conn.execute
    cur = await execute(dialect.table_columns, (table,))
    columns = [str(r[0]) for r in await cur.fetchall()]
    if "owner_id" not in columns:
        return
    names = ", ".join(f'"{c}"' for c in columns)
    cur = await execute(f'SELECT {names} FROM "{table}" WHERE owner_id = ?', (gone,))
    rows = await cur.fetchall()
    if not rows:
        return
    await execute(f'DELETE FROM "{table}" WHERE owner_id = ?', (gone,))
    marks = placeholders(columns)
    owner = columns.index("owner_id")
    for row in rows:
        values = list(row)
        values[owner] = keep
        await execute(f'INSERT INTO "{table}" ({names}) VALUES ({marks})', values)
