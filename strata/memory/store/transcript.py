"""The append-only transcript: every message, tool call and compaction, in order.

Rows are only appended here (pruning and redaction live with the life-cycle code). Each row's
`owner_id` is its channel's owner, copied at insert so every query can filter by owner without
a join. Imports `bot` leaf types and `strata.memory.engines.db` / `strata.memory.engines.fts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from strata.core.clock import from_iso, to_iso
from strata.core.types import NewRow, Role, RowKind, TranscriptRow
from strata.memory.engines.db import Database, Row, placeholders


def row_from_db(row: Row) -> TranscriptRow:
    return TranscriptRow(
        id=row["id"],
        channel_id=row["channel_id"],
        owner_id=row["owner_id"],
        person_id=row["person_id"],
        ts=from_iso(row["ts"]),
        source=row["source"],
        role=Role(row["role"]),
        kind=RowKind(row["kind"]),
        content=row["content"],
        turn_id=row["turn_id"],
        lat=row["lat"],
        lon=row["lon"],
        platform_msg_id=row["platform_msg_id"],
    )


def clean_text(text: str) -> str:
    """Text SQLite can store: surrogate pairs are joined, lone surrogates become U+FFFD.

    Lone UTF-16 surrogates (from a badly decoded platform payload) cannot be encoded as UTF-8,
    so they cannot be stored exactly; the rest of the message is kept as sent.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


@dataclass(frozen=True, slots=True)
class RowFilter:
    """Which of an owner's rows a reader wants: from `sources` only (none: no rows), and
    optionally of one role and kind, with a location, stamped no later than `until`."""

    sources: tuple[str, ...]
    role: Role | None = None
    kind: RowKind | None = None
    located: bool = False
    until: datetime | None = None

    def sql(self) -> tuple[str, list[object]]:
        parts = [f"source IN ({placeholders(self.sources)})"]
        params: list[object] = list(self.sources)
        if self.role is not None:
            parts.append("role = ?")
            params.append(self.role.value)
        if self.kind is not None:
            parts.append("kind = ?")
            params.append(self.kind.value)
        if self.located:
            parts.append("lat IS NOT NULL AND lon IS NOT NULL")
        if self.until is not None:
            parts.append("ts <= ?")
            params.append(to_iso(self.until))
        return " AND ".join(parts), params


def _scope(owner_id: int | None, channel_id: int | None) -> tuple[str, list[object]]:
    """SQL narrowing the transcript to an owner and/or a channel (neither: every row)."""
    parts, params = ["TRUE"], list[object]()
    for column, value in (("owner_id", owner_id), ("channel_id", channel_id)):
        if value is not None:
            parts.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(parts), params


# One statement for all of an append's rows. The VALUES columns are cast because PostgreSQL
# types a VALUES list on its own (a column of NULLs would be text); `ORDER BY` makes the ids
# follow the rows' order on both engines, so the sorted returned ids are the rows' ids. A row
# of an unknown channel gets no owner, and the NOT NULL owner fails the whole statement.
_VALUES = ("(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT),"
           " CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT),"
           " CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION), CAST(? AS TEXT))")


def _insert(count: int, lock: str = "") -> str:
    """The INSERT of `count` rows (`lock`: a FROM item taking the write lock, see
    `Dialect.write_lock`)."""
    return (
        "INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role, kind,"
        " content, turn_id, lat, lon, platform_msg_id)"
        " SELECT v.column2, c.owner_id, v.column3, v.column4, v.column5, v.column6, v.column7,"
        " v.column8, v.column9, v.column10, v.column11, v.column12"
        f" FROM {lock}(VALUES {', '.join([_VALUES] * count)}) AS v"
        " LEFT JOIN channels c ON c.id = v.column2 ORDER BY v.column1 RETURNING id")


def _values(rows: Sequence[NewRow]) -> list[object]:
    return [x for n, r in enumerate(rows) for x in (
        n, r.channel_id, r.person_id, to_iso(r.ts), r.source, r.role.value, r.kind.value,
        clean_text(r.content), r.turn_id, r.lat, r.lon, r.platform_msg_id)]


async def insert_rows(conn: Any, rows: Sequence[NewRow]) -> list[int]:
    """Insert `rows` inside the caller's write transaction `conn`; their ids."""
    if not rows:
        return []
    found = await conn.execute_fetchall(_insert(len(rows)), _values(rows))
    return sorted(int(r[0]) for r in found)


class TranscriptRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def append(self, rows: Sequence[NewRow]) -> list[int]:
        """Append rows in one transaction (durable when this returns); return their ids.

        One statement that is its own transaction: the hot path's write is one trip to the
        database, not four (BEGIN, the rows, COMMIT)."""
        if not rows:
            return []
        try:
            found = await self.db.write_statement(
                _insert(len(rows), self.db.dialect.write_lock), _values(rows))
        except self.db.integrity_errors:
            # A row of an unknown channel gets no owner (see `_insert`): name the channel.
            await self._known_channels(rows)
            raise
        return sorted(int(r[0]) for r in found)

    async def _known_channels(self, rows: Sequence[NewRow]) -> None:
        """Raise `ValueError` naming the channels of `rows` that do not exist."""
        wanted = sorted({r.channel_id for r in rows})
        have = {int(r[0]) for r in await self.db.fetchall(
            f"SELECT id FROM channels WHERE id IN ({placeholders(wanted)})", wanted)}
        if missing := [c for c in wanted if c not in have]:
            raise ValueError(f"no channel {', '.join(map(str, missing))}")

    async def reply_of(self, turn_id: str) -> str | None:
        """The turn's stored reply (its last assistant message), None while it has none."""
        value = await self.db.fetchval(
            "SELECT content FROM transcript WHERE turn_id = ? AND role = 'assistant'"
            " AND kind = 'message' ORDER BY id DESC LIMIT 1", (turn_id,))
        return None if value is None else str(value)

    async def get(self, row_id: int) -> TranscriptRow | None:
        row = await self.db.fetchone("SELECT * FROM transcript WHERE id = ?", (row_id,))
        return row_from_db(row) if row else None

    async def for_channel(
        self, channel_id: int, *, after_id: int = 0, limit: int | None = None, newest: bool = False
    ) -> list[TranscriptRow]:
        """Rows of a channel after `after_id`, oldest first (`newest`: the last `limit` rows)."""
        order = "DESC" if newest else "ASC"
        sql = f"SELECT * FROM transcript WHERE channel_id = ? AND id > ? ORDER BY id {order}"
        params: list[object] = [channel_id, after_id]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = [row_from_db(r) for r in await self.db.fetchall(sql, params)]
        return rows[::-1] if newest else rows

    async def after_cursors(self, cursors: Mapping[int, int], limit: int
                            ) -> list[TranscriptRow]:
        """The rows of many channels after each one's cursor ({channel id: last row id}), in
        one read: the first `limit` of them in id order (so each channel's share is a prefix
        of what it has after its cursor)."""
        if not cursors:
            return []
        ranges = " OR ".join(["(channel_id = ? AND id > ?)"] * len(cursors))
        params: list[object] = [x for pair in sorted(cursors.items()) for x in pair]
        rows = await self.db.fetchall(
            f"SELECT * FROM transcript WHERE {ranges} ORDER BY id LIMIT ?", [*params, limit])
        return [row_from_db(r) for r in rows]

    async def for_owner(self, owner_id: int) -> list[TranscriptRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM transcript WHERE owner_id = ? ORDER BY id", (owner_id,)
        )
        return [row_from_db(r) for r in rows]

    async def by_turn(self, turn_id: str) -> list[TranscriptRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM transcript WHERE turn_id = ? ORDER BY id", (turn_id,)
        )
        return [row_from_db(r) for r in rows]

    async def by_platform_msg(self, channel_id: int, platform_msg_id: str) -> list[TranscriptRow]:
        """The user rows of a channel that came from platform message `platform_msg_id` (the
        message and its edits), oldest first: a redelivered update is recognised by these."""
        rows = await self.db.fetchall(
            "SELECT * FROM transcript WHERE channel_id = ? AND platform_msg_id = ?"
            " AND role = 'user' ORDER BY id",
            (channel_id, platform_msg_id),
        )
        return [row_from_db(r) for r in rows]

    async def search(
        self, owner_id: int, text: str, limit: int = 20
    ) -> list[tuple[TranscriptRow, float]]:
        """Keyword search over one owner's message rows: (row, score) best first.

        The score is lower for a better match: SQLite's bm25 (negative), PostgreSQL's
        negated ts_rank_cd (see `strata.memory.engines.dialect`); it is returned as is.
        """
        query = self.db.dialect.keyword_query(text)
        if query is None:
            return []
        rows = await self.db.fetchall(
            self.db.dialect.transcript_search, (query, owner_id, limit))
        return [(row_from_db(r), float(r["score"])) for r in rows]

    async def count(
        self, owner_id: int | None = None, *, channel_id: int | None = None,
        messages_only: bool = False,
    ) -> int:
        """Rows of an owner (or all), optionally of one channel, optionally messages only."""
        clause, params = _scope(owner_id, channel_id)
        if messages_only:
            clause += " AND kind = 'message'"
        return int(await self.db.fetchval(
            f"SELECT count(*) FROM transcript WHERE {clause}", params))

    async def newest_id(
        self, owner_id: int | None = None, where: RowFilter | None = None
    ) -> int | None:
        """The newest row id of an owner (or of the whole transcript), among `where`'s rows."""
        clause, params = _scope(owner_id, None)
        if where is not None:
            more, more_params = where.sql()
            clause, params = f"{clause} AND {more}", params + more_params
        value = await self.db.fetchval(f"SELECT max(id) FROM transcript WHERE {clause}", params)
        return None if value is None else int(value)

    async def nth_newest_message(self, channel_id: int, n: int) -> int | None:
        """The id of the channel's `n`-th newest message (1: the newest), or None."""
        value = await self.db.fetchval(
            "SELECT id FROM transcript WHERE channel_id = ? AND kind = 'message'"
            " ORDER BY id DESC LIMIT 1 OFFSET ?",
            (channel_id, n - 1),
        )
        return int(value) if value is not None else None

    async def matching(
        self, owner_id: int, where: RowFilter, *, after_id: int = 0, limit: int,
        newest: bool = False,
    ) -> list[TranscriptRow]:
        """An owner's rows of `where` after `after_id`, oldest first (`newest`: the last
        `limit` of them, still oldest first)."""
        clause, params = where.sql()
        order = "DESC" if newest else "ASC"
        rows = [row_from_db(r) for r in await self.db.fetchall(
            f"SELECT * FROM transcript WHERE owner_id = ? AND {clause} AND id > ?"
            f" ORDER BY id {order} LIMIT ?",
            (owner_id, *params, after_id, limit),
        )]
        return rows[::-1] if newest else rows

    async def last_said_at(self, person_id: int, *, skip: int = 0) -> datetime | None:
        """When `person_id` last sent a message (anywhere), passing over the newest `skip`."""
        value = await self.db.fetchval(
            "SELECT ts FROM transcript WHERE person_id = ? AND role = 'user' AND kind = 'message'"
            " ORDER BY id DESC LIMIT 1 OFFSET ?",
            (person_id, skip),
        )
        return from_iso(value) if value else None

    async def last_user_row_at(self, owner_id: int) -> datetime | None:
        """The newest time stamp of a user row in an owner's memory (a shared room's last
        word, whoever said it)."""
        value = await self.db.fetchval(
            "SELECT max(ts) FROM transcript WHERE owner_id = ? AND role = 'user'", (owner_id,)
        )
        return from_iso(value) if value else None

    async def uncut_channels(self, owner_id: int, sources: Sequence[str]) -> dict[int, int]:
        """An owner's channels from `sources` with rows after their episode cursor: {channel
        id: newest row id}."""
        rows = await self.db.fetchall(
            "SELECT c.id, max(t.id) FROM channels c JOIN transcript t ON t.channel_id = c.id"
            " LEFT JOIN episode_cursors k ON k.channel_id = c.id"
            f" WHERE c.owner_id = ? AND c.source IN ({placeholders(sources)})"
            " AND t.id > coalesce(k.last_row_id, 0) GROUP BY c.id ORDER BY c.id",
            (owner_id, *sources),
        )
        return {int(r[0]): int(r[1]) for r in rows}


async def describe_store(path: str | Path, dim: int) -> tuple[int, str]:
    """Open the database read-only, as it is: its transcript rows and its engine's versions
    (`Database.versions`); raises what `Database.open` raises for a store that cannot be
    used."""
    db = await Database.open(path, dim, read_only=True)
    try:
        return await TranscriptRepo(db).count(), await db.versions()
    finally:
        await db.close()


async def watermark(db: Database, channel_id: int) -> tuple[TranscriptRow, int] | None:
    """The channel's newest compaction row and the last row id its summary covers.

    The covered id is stored with the compaction (migration 0004): rows appended while the
    summary was being written have ids below the compaction row's but are not in the summary.
    """
    row = await db.fetchone(
        "SELECT * FROM transcript WHERE channel_id = ? AND kind = 'compaction'"
        " ORDER BY id DESC LIMIT 1",
        (channel_id,),
    )
    if row is None:
        return None
    covers = row["covers_to"]
    return row_from_db(row), int(covers if covers is not None else row["id"])


async def history_since_watermark(
    repo: TranscriptRepo, channel_id: int, *, max_rows: int = 400
) -> tuple[TranscriptRow | None, list[TranscriptRow]]:
    """The channel's newest compaction row (the watermark) and the rows after what it covers.

    The prompt carries the compaction's summary plus these rows; with no compaction yet, the
    newest `max_rows` rows of the channel.
    """
    mark = await watermark(repo.db, channel_id)
    rows = await repo.for_channel(
        channel_id, after_id=mark[1] if mark else 0, limit=max_rows, newest=True
    )
    return (mark[0] if mark else None), [r for r in rows if r.kind is not RowKind.COMPACTION]
