"""Everything stored about one person, as plain JSON-able data (`/export`, `strata memory
export`). Tables that hold personal memory register here with the column naming their owner,
so a new store is exported (and later wiped) by adding one line. The `connectors` table is
deliberately not listed: it holds a person's service passwords, which an export (a file that
gets passed around) must never carry; `/wipe` deletes it with the person row. Imports
`strata.memory.engines.db`.
"""

from __future__ import annotations

from typing import Any

from strata.memory.engines.db import Database, Row

# (table, owner column). Vector tables are left out: their rows are derived from the text.
OWNED_TABLES: list[tuple[str, str]] = [
    ("identities", "person_id"),
    ("channels", "owner_id"),
    ("transcript", "owner_id"),
    ("episodes", "owner_id"),
    ("facts", "owner_id"),
    ("fact_sources", "owner_id"),
    ("fact_cursors", "owner_id"),
    ("memory_pauses", "person_id"),
    ("reminders", "owner_id"),
    ("portraits", "owner_id"),
    ("calendar_events", "owner_id"),
    ("mail_headers", "owner_id"),
    ("job_runs", "person_id"),
    ("job_cursors", "person_id"),
    ("recall_log", "owner_id"),
    ("grounding_refusals", "owner_id"),
]


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return f"<{len(bytes(value))} bytes>"
    return value


def _dict(row: Row) -> dict[str, Any]:
    return {k: _plain(row[k]) for k in row.keys()}  # noqa: SIM118 - a sqlite Row, not a dict


async def export_person(db: Database, person_id: int) -> dict[str, Any]:
    person = await db.fetchone("SELECT * FROM persons WHERE id = ?", (person_id,))
    if person is None:
        raise KeyError(person_id)
    out: dict[str, Any] = {"person": _dict(person)}
    for table, column in OWNED_TABLES:
        # The table's own columns, not `*`: a column an engine derives (PostgreSQL's stored
        # tsvector of episodes) is not the person's data, and the export is the same on both.
        names = ", ".join(str(c[0]) for c in await db.fetchall(db.dialect.table_columns,
                                                                (table,)))
        rows = await db.fetchall(
            f"SELECT {names} FROM {table} WHERE {column} = ?"
            f" ORDER BY {db.dialect.insertion_order}", (person_id,)
        )
        out[table] = [_dict(r) for r in rows]
    # What the person said in shared rooms is owned by the room but is still theirs.
    shared = await db.fetchall(
        "SELECT * FROM transcript WHERE person_id = ? AND owner_id != ? ORDER BY id",
        (person_id, person_id),
    )
    out["shared_room_messages"] = [_dict(r) for r in shared]
    return out
