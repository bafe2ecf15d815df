"""The SQLite database: one file in WAL mode, one serialised writer, one reader.

`Database.open()` opens the file (how: `strata.memory.engines.sqlite_open`, which applies the
pragmas and runs the numbered migrations) and checks the embedding dimension recorded at
creation. Writes go through `db.write()` (BEGIN IMMEDIATE … COMMIT under one lock); reads
through `db.fetchall()` / `db.fetchone()` on a separate connection so they never wait on a
writer. Imports `core` leaf modules and `strata.memory.engines`' `sqlite_open`, `driver`,
`dbfile`, `dialect` and `guard` only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterable, Sequence, Sized
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import aiosqlite

from strata.core.errors import DimensionMismatchError, StorageError
from strata.memory.engines import pg
from strata.memory.engines.dbfile import require_strata
from strata.memory.engines.dialect import SQLITE, Dialect
from strata.memory.engines.driver import sqlite_driver
from strata.memory.engines.guard import GuardedWrites
from strata.memory.engines.sqlite_open import make_private, open_connection, prepare

log = logging.getLogger(__name__)

Row = Any  # the driver's Row: index by position or by column name
Params = Sequence[Any] | dict[str, Any]


class Reads(Protocol):
    """Anything reads can go through: a `Database` (its reader) or a `ReaderPool`."""

    @property
    def dialect(self) -> Dialect: ...

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]: ...


def placeholders(items: Sized | int) -> str:
    """`?,?,?`: one parameter mark per item (or `items` marks), for an `IN (…)` list."""
    n = items if isinstance(items, int) else len(items)
    return ",".join("?" * n)



class Database(GuardedWrites):
    """One SQLite file. Use `await Database.open(path, dim)` and `await db.close()`.

    `Database.open("postgresql://…", dim)` gives the PostgreSQL engine instead
    (`strata.memory.engines.pg.database.PgDatabase`, the same interface). `engine` names the engine;
    `dialect` holds the statements that differ between engines (`strata.memory.engines.dialect`).
    """

    engine = "sqlite"
    dialect: Dialect = SQLITE
    read_only = False  # opened by a reading command (`open(read_only=True)`)

    def __init__(
        self, path: str, dim: int, writer: aiosqlite.Connection, reader: aiosqlite.Connection
    ) -> None:
        self.path = path
        self.dim = dim
        self._writer = writer
        self._reader = reader
        self._lock = asyncio.Lock()
        # One statement at a time on the reader: a SELECT left half-read by one coroutine
        # keeps the reader's snapshot open, and another coroutine would then not see rows
        # it has just committed through the writer (read-your-own-writes).
        self._read_lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: str | Path, dim: int, *, migrate: bool = True,
                   upto: int | None = None, read_only: bool = False) -> Database:
        """Open (creating if needed) and migrate the database at `path` (with `upto`, only up
        to that migration number: how an upgrade test makes a database of an older schema).

        `read_only` (the reading commands): an existing file only, never migrated, opened so
        that not a byte on disk changes (`strata.memory.engines.dbfile`); a write raises. PostgreSQL
        opens as usual, without migrating.

        Raises `DimensionMismatchError` when the file was created with another embedding
        dimension, `ExtensionUnavailableError` when sqlite-vec cannot be loaded. A
        `postgresql://` URL opens the PostgreSQL engine.
        """
        if pg.is_url(path):
            from strata.memory.engines.pg.database import PgDatabase  # psycopg only when asked for

            return await PgDatabase.connect(str(path), dim, migrate=migrate and not read_only,
                                            upto=upto)
        path = str(path)
        if read_only:
            migrate = False
            file = Path(path).expanduser()
            if not file.exists():
                raise StorageError(f"nothing is stored yet: database {path} does not exist "
                                   "(`strata chat` or `strata db migrate` makes it)")
            require_strata(file)
        elif path != ":memory:":
            make_private(path)
        applied, meta = await asyncio.to_thread(prepare, path, dim, migrate, upto, read_only)
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        stored = meta.get("embed_dim")
        if stored is None:
            raise StorageError(f"database {path} is not migrated: run `strata db migrate`")
        if int(stored) != dim:
            raise DimensionMismatchError(
                f"database {path} was created with embedding dimension {stored}, but "
                f"{dim} is configured: set STRATA_EMBED_DIM={stored} (or embed.dim) or use "
                "a new database file"
            )
        # Read-only: the "writer" is read-only too, so a write raises instead of writing.
        writer = await open_connection(path, read_only)
        try:
            reader = await open_connection(path, read_only)
        except BaseException:
            await writer.close()
            raise
        db = cls(path, dim, writer, reader)
        db.read_only = read_only
        return db

    async def close(self) -> None:
        async with self._lock:
            await self._reader.close()
            await self._writer.close()

    @asynccontextmanager
    async def write(self, *, durable: bool = True) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on error), serialised.

        `durable=False` is for what can be made again from durable rows (row vectors and their
        cursor): a server engine may then commit without waiting for its log to reach the
        disk, and a crash loses the transaction whole. SQLite runs every commit that way
        already (WAL with `synchronous = NORMAL`), so here the flag changes nothing.

        Safe under cancellation (shutdown cancels background work mid-write): a cancelled
        `await` does not stop the statement already queued on the writer's thread, so the
        transaction is settled before the lock is released — otherwise the next writer's
        BEGIN would fail with "cannot start a transaction within a transaction".
        """
        async with self._lock:
            try:
                await self._writer.execute("BEGIN IMMEDIATE")
            except BaseException:
                await asyncio.shield(self._settle())
                raise
            try:
                await self.check_guard(self._writer)
                yield self._writer
            except BaseException:
                await asyncio.shield(self._settle())
                raise
            try:
                await self._writer.execute("COMMIT")
            except BaseException:
                await asyncio.shield(self._settle())
                raise

    async def _settle(self) -> None:
        """Wait for the writer's queued statements, then roll back a transaction left open."""
        await self._writer.execute("SELECT 1")
        if self._writer.in_transaction:
            await self._writer.execute("ROLLBACK")

    async def write_statement(self, sql: str, params: Params = ()) -> list[Row]:
        """One write statement that is a transaction of its own (all or nothing, as SQLite
        runs any statement outside BEGIN), serialised with `write()`; the rows it returns
        (RETURNING), in one trip to the writer. A server engine's statement takes the write
        lock itself (`dialect.write_lock`). Cancelled, it still runs whole (the writer runs
        its queue in order). Under a write guard (`guarded`) it is a `write()`, checked first."""
        if self.guard() is not None:
            async with self.write() as conn:
                return list(await conn.execute_fetchall(sql, params))
        async with self._lock:
            return list(await self._writer.execute_fetchall(sql, params))

    async def execute_write(self, sql: str, params: Params = ()) -> int | None:
        """Run one write statement in its own transaction; return lastrowid."""
        async with self.write() as conn:
            cur = await conn.execute(sql, params)
            return cur.lastrowid

    async def execute_atomic(self, sql: str, params: Params = ()) -> int:
        """Run one write statement that is atomic on its own (a conditional UPDATE, an upsert
        whose WHERE decides): return how many rows it changed. On SQLite it is an ordinary
        write; a server engine may run it beside other writers, relying on its row locks
        instead of the one write lock (claims: `strata.memory.coordination.claims`)."""
        async with self.write() as conn:
            cur = await conn.execute(sql, params)
            return int(cur.rowcount or 0)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        # One trip to the connection's thread, not three (execute, fetch, close): each trip
        # costs about 0.1 ms, more than a small indexed query itself.
        async with self._read_lock:
            return list(await self._reader.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        async with self._read_lock:
            cur = await self._reader.execute(sql, params)
            row = await cur.fetchone()
            await cur.close()
        return row

    async def fetchval(self, sql: str, params: Params = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def rows_in_batches(self, sql: str, params: Params = (), size: int = 500
                              ) -> AsyncIterator[list[Row]]:
        """The rows of one query, `size` at a time, without holding them all in memory (a
        whole table for `strata.memory.engines.transfer`). Other reads wait until the iteration
        ends."""
        async with self._read_lock:
            cur = await self._reader.execute(sql, params)
            try:
                while rows := await cur.fetchmany(size):
                    yield list(rows)
            finally:
                await cur.close()

    async def executemany_write(self, sql: str, rows: Iterable[Params]) -> None:
        async with self.write() as conn:
            await conn.executemany(sql, rows)

    async def applied_migrations(self) -> list[tuple[int, str]]:
        """The migrations applied to this file, (number, name), oldest first."""
        rows = await self.fetchall("SELECT id, name FROM migrations ORDER BY id")
        return [(int(r[0]), str(r[1])) for r in rows]

    async def versions(self) -> str:
        """The engine and its vector extension, as `strata doctor` reports them."""
        row = await self.fetchone("SELECT sqlite_version(), vec_version()")
        assert row is not None  # a SELECT without FROM always gives one row
        return f"SQLite {row[0]}, sqlite-vec {row[1]}"

    @property
    def integrity_errors(self) -> tuple[type[Exception], ...]:
        """What a constraint violation raises here, for an `except` that catches only that:
        the IntegrityError of the SQLite driver in use (`sqlite3` or `pysqlite3`, whose
        classes are unrelated)."""
        return (sqlite_driver().IntegrityError,)

    async def bytes_on_disk(self) -> int:
        """The database's size on disk after folding the WAL in (what a person's memory costs)."""
        await self.checkpoint()
        path = Path(self.path)
        wal = path.with_name(path.name + "-wal")
        return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

    async def checkpoint(self) -> None:
        """Fold the WAL back into the main file and truncate it."""
        async with self._lock:
            await self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def reclaim(self, tables: Iterable[str]) -> None:
        """After deleting rows from `tables` (/forget, /wipe): leave no deleted text where the
        engine can reach it. SQLite overwrites freed pages itself (`secure_delete`); what is
        left is merging every FTS5 index (its `optimize` drops the deleted terms from its
        segments) and truncating the WAL, which still holds the old pages."""
        rows = await self.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%'")
        async with self.write() as conn:
            for (name,) in rows:
                await conn.execute(f"INSERT INTO {name} ({name}) VALUES ('optimize')")
        await self.checkpoint()
