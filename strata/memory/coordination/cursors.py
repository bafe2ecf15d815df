"""Per-channel progress cursors ("the last transcript row already handled").

Episode cutting (`episode_cursors`) and row vectors (`transcript_vec_cursors`) each keep one per
channel. A cursor moves by compare-and-set inside the caller's write transaction, so two
workers on the same channel (two processes, or a late after-turn hook and a background job)
never both store the same window. Imports `strata.memory.engines.db` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from strata.memory.engines.db import Database, placeholders

CursorTable = Literal["episode_cursors", "transcript_vec_cursors"]
_TABLES = ("episode_cursors", "transcript_vec_cursors")


def _checked(table: CursorTable) -> str:
    if table not in _TABLES:  # the name is formatted into SQL: only the known tables
        raise ValueError(f"no cursor table {table!r}")
    return table


async def read_cursor(db: Database, table: CursorTable, channel_id: int) -> int:
    return (await read_cursors(db, table, [channel_id]))[channel_id]


async def read_cursors(db: Database, table: CursorTable, channel_ids: Sequence[int]
                       ) -> dict[int, int]:
    """The cursors of `channel_ids` in one read (0 for a channel without one yet)."""
    rows = await db.fetchall(
        f"SELECT channel_id, last_row_id FROM {_checked(table)}"
        f" WHERE channel_id IN ({placeholders(channel_ids)})", list(channel_ids))
    found = {int(r[0]): int(r[1]) for r in rows}
    return {c: found.get(c, 0) for c in channel_ids}


async def move_cursors(conn: Any, table: CursorTable, moves: Mapping[int, tuple[int, int]]
                       ) -> set[int]:
    """`move_cursor` for many channels at once ({channel: (expected, to)}), inside the
    caller's write transaction: the channels whose cursor moved (the others were moved by
    someone else first). Two statements whatever the number of channels; the write
    transaction holds the database's one write lock on both engines, so nobody moves a
    cursor between the read and the write."""
    name = _checked(table)
    if not moves:
        return set()
    rows = await conn.execute_fetchall(
        f"SELECT channel_id, last_row_id FROM {name}"
        f" WHERE channel_id IN ({placeholders(moves)})", list(moves))
    now = {int(r[0]): int(r[1]) for r in rows}
    moved = {c for c, (expected, _) in moves.items() if now.get(c, 0) == expected}
    if moved:
        await conn.executemany(
            f"INSERT INTO {name} (channel_id, last_row_id) VALUES (?, ?)"
            " ON CONFLICT (channel_id) DO UPDATE SET last_row_id = excluded.last_row_id",
            [(c, moves[c][1]) for c in sorted(moved)])
    return moved


async def move_cursor(conn: Any, table: CursorTable, channel_id: int, expected: int,
                      to: int) -> bool:
    """Set the cursor to `to` if it still is `expected`; False when someone moved it first."""
    name = _checked(table)
    # The existing row's column is named with its table: PostgreSQL would not know whether
    # a bare `last_row_id` is it or `excluded`'s.
    cur = await conn.execute(
        f"INSERT INTO {name} (channel_id, last_row_id) VALUES (?, ?)"
        " ON CONFLICT (channel_id) DO UPDATE SET last_row_id = excluded.last_row_id"
        f" WHERE {name}.last_row_id = ?",
        (channel_id, to, expected),
    )
    return bool(cur.rowcount == 1)


async def pending_channels(db: Database, table: CursorTable) -> list[int]:
    """Channels with transcript rows after their cursor, in id order."""
    rows = await db.fetchall(
        f"SELECT c.id FROM channels c LEFT JOIN {_checked(table)} k ON k.channel_id = c.id"
        " WHERE EXISTS (SELECT 1 FROM transcript t WHERE t.channel_id = c.id"
        " AND t.id > coalesce(k.last_row_id, 0)) ORDER BY c.id"
    )
    return [int(r[0]) for r in rows]
