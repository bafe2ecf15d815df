"""`PgDatabase`: the `Database` interface over a PostgreSQL server (psycopg 3 and its pool).

The repositories see what they see on SQLite: `fetchall` / `fetchone` / `fetchval` read
committed data on a pooled connection, `write()` yields a connection whose `execute` returns a
cursor with `rowcount`, `lastrowid` and `fetchone()` / `fetchall()`, and rows index by
position and by column name. What the engine does to keep that promise:

- Statements are written with `?` marks; `strata.memory.engines.pg.sql.translate` turns them into
`%s`.
- `lastrowid`: an `INSERT` into a table with an `id` identity column and no `RETURNING` of its
  own gets ` RETURNING id` appended, and the returned id is the cursor's `lastrowid`.
- Writes are serialised like SQLite's `BEGIN IMMEDIATE`: one writer per process (a lock) and,
  across processes, a transaction-level advisory lock taken first in every write
  transaction. A read-check-write inside one `write()` block is therefore atomic against
  every other writer of the database, as the repositories assume. Reads never wait for it.
- Values (`strata.memory.engines.pg.values`): besides the pgvector columns the schema has one
  binary column (`recall_tables.body`, written from a `memoryview`), so a `bytes` parameter (a
  little-endian float32 blob, as stored in SQLite) is sent as a `vector`, and a `vector` column
  reads back as such a blob. A read naming the `embedding` column or `recall_tables` fetches
  binary results, so vectors and the stored tables are copied rather than parsed from text.
  `numeric` (what `sum()` of integers returns) reads as an int or a float, never a `Decimal`, in
  text and binary alike; text holding NUL is stored and returned exactly.

Imports `strata.core.errors`, `strata.memory.engines.db`, `strata.memory.engines.pg` and psycopg.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool

from strata.core.errors import DimensionMismatchError, StorageError
from strata.memory.engines.db import Database, Params, Row
from strata.memory.engines.migrations import available
from strata.memory.engines.pg.dialect import POSTGRES, WRITE_LOCK
from strata.memory.engines.pg.sql import bind, translate
from strata.memory.engines.pg.values import configure, row_factory

log = logging.getLogger(__name__)

MIGRATIONS = "strata.memory.engines.pg.migrations"
_LOCK = "SELECT pg_advisory_xact_lock(%s)"
# The same round trip sets the transaction's commit not to wait for the flush.
_LOCK_LAZY = "SELECT pg_advisory_xact_lock(%s), set_config('synchronous_commit', 'off', true)"
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)
_RETURNING = re.compile(r"\bRETURNING\b", re.IGNORECASE)
# A read naming the vector column or recall's stored tables: its results come in binary
# (see `_binary`).
_READS_VECTORS = re.compile(r"\b(embedding|recall_tables)\b", re.IGNORECASE)


def _binary(sql: str) -> bool:
    """Whether a read's results are fetched in binary: those naming `embedding` or
    `recall_tables`. pgvector's text output costs about 0.7 ms per 384-d vector to parse
    (recall's first search of a person loads all their row vectors: seconds at 10k rows), and
    a stored recall table in text is hex, twice its size; binary output is copied."""
    return _READS_VECTORS.search(sql) is not None


def redacted(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


class PgCursor:
    """What a write statement left: `rowcount`, `lastrowid` and the rows it returned."""

    def __init__(self, rows: list[Row], rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    async def fetchone(self) -> Row | None:
        return self._rows.pop(0) if self._rows else None

    async def fetchall(self) -> list[Row]:
        rows, self._rows = self._rows, []
        return rows

    async def close(self) -> None:
        self._rows = []


class PgConnection:
    """The connection `PgDatabase.write()` yields, with aiosqlite's `execute` interface."""

    def __init__(self, conn: AsyncConnection[Any], id_tables: frozenset[str]) -> None:
        self.conn = conn
        self.id_tables = id_tables

    async def execute(self, sql: str, params: Params = ()) -> PgCursor:
        returns_id = False
        insert = _INSERT.match(sql)
        if insert and insert.group(1).lower() in self.id_tables and not _RETURNING.search(sql):
            sql, returns_id = f"{sql.rstrip().rstrip(';')} RETURNING id", True
        cur = await self.conn.execute(*bind(sql, params))
        rows: list[Row] = await cur.fetchall() if cur.description is not None else []
        lastrowid = int(rows[-1][0]) if returns_id and rows else None
        return PgCursor([] if returns_id else rows, cur.rowcount, lastrowid)

    async def execute_fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """The rows a statement returns (aiosqlite's one-trip `execute_fetchall`)."""
        return await (await self.execute(sql, params)).fetchall()

    async def executemany(self, sql: str, rows: Iterable[Params]) -> PgCursor:
        async with self.conn.cursor() as cur:
            await cur.executemany(translate(sql), list(rows))
            return PgCursor([], cur.rowcount, None)


async def _migrate(url: str, dim: int, upto: int | None) -> list[str]:
    """Apply pending migrations in one transaction (under the write lock, so two processes
    starting together migrate once); a failure changes nothing."""
    applied: list[str] = []
    async with await AsyncConnection.connect(url, autocommit=True) as conn, \
            conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations (id BIGINT PRIMARY KEY,"
            ' name TEXT COLLATE "C" NOT NULL, applied_at TEXT COLLATE "C" NOT NULL)')
        await conn.execute(
            'CREATE TABLE IF NOT EXISTS meta (key TEXT COLLATE "C" PRIMARY KEY,'
            ' value TEXT COLLATE "C" NOT NULL)')
        meta = await _read_meta(conn)
        if "embed_dim" not in meta:
            now = datetime.now(UTC).isoformat()
            await conn.execute(
                "INSERT INTO meta (key, value) VALUES ('embed_dim', %s), ('created_at', %s)",
                (str(dim), now))
        else:
            dim = int(meta["embed_dim"])
        cur = await conn.execute("SELECT id FROM migrations")
        done = {int(r[0]) for r in await cur.fetchall()}
        for number, name, sql in available(MIGRATIONS):
            if number in done or (upto is not None and number > upto):
                continue
            await conn.execute(sql.replace("$DIM", str(dim)).encode())  # a script: no params
            await conn.execute(
                "INSERT INTO migrations (id, name, applied_at) VALUES (%s, %s, %s)",
                (number, name, datetime.now(UTC).isoformat()))
            applied.append(f"{number:04d}_{name}")
    return applied


async def _read_meta(conn: AsyncConnection[Any]) -> dict[str, str]:
    cur = await conn.execute("SELECT to_regclass('meta') IS NOT NULL")
    row = await cur.fetchone()
    if not row or not row[0]:
        return {}
    cur = await conn.execute("SELECT key, value FROM meta")
    return {str(k): str(v) for k, v in await cur.fetchall()}


class PgDatabase(Database):
    """One PostgreSQL database. Use `await Database.open("postgresql://…", dim)`."""

    engine = "postgres"
    dialect = POSTGRES
    # A write guard's rows stay as found until the commit: a claim taking them waits for it.
    guard_lock = " FOR SHARE"

    def __init__(self, url: str, dim: int, pool: AsyncConnectionPool[Any],
                 id_tables: frozenset[str]) -> None:
        # Not Database.__init__: no SQLite connections here. `path` is for display only.
        self.path = redacted(url)
        self.dim = dim
        self._pool = pool
        self._id_tables = id_tables
        self._lock = asyncio.Lock()

    @classmethod
    async def connect(cls, url: str, dim: int, *, migrate: bool = True,
                      upto: int | None = None, pool_size: int = 8) -> PgDatabase:
        """Connect to (and, unless told not to, migrate) the database at `url`."""
        try:
            applied = await _migrate(url, dim, upto) if migrate else []
            async with await AsyncConnection.connect(url, autocommit=True) as conn:
                meta = await _read_meta(conn)
                cur = await conn.execute(
                    "SELECT table_name FROM information_schema.columns WHERE column_name = 'id'"
                    " AND is_identity = 'YES' AND table_schema = current_schema()")
                id_tables = frozenset(str(r[0]) for r in await cur.fetchall())
        except psycopg.Error as exc:
            raise StorageError(f"cannot open database {redacted(url)}: {exc}") from exc
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        stored = meta.get("embed_dim")
        if stored is None:
            raise StorageError(
                f"database {redacted(url)} is not migrated: run `strata db migrate`")
        if int(stored) != dim:
            raise DimensionMismatchError(
                f"database {redacted(url)} was created with embedding dimension {stored}, but "
                f"{dim} is configured: set STRATA_EMBED_DIM={stored} (or embed.dim) or use "
                "a new database")
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url, min_size=1, max_size=pool_size, open=False, configure=configure,
            kwargs={"autocommit": True, "row_factory": row_factory},
            name="strata")
        try:
            await pool.open(wait=True, timeout=30)
        except Exception as exc:
            await pool.close()
            raise StorageError(f"cannot open database {redacted(url)}: {exc}") from exc
        return cls(url, dim, pool, id_tables)

    async def close(self) -> None:
        async with self._lock:
            await self._pool.close()

    @asynccontextmanager
    async def write(self, *, durable: bool = True) -> AsyncIterator[Any]:
        """A write transaction, serialised with every other writer (see the module doc),
        rolled back on error or cancellation. Not `durable`: its commit does not wait for the
        WAL flush (`synchronous_commit` off for it alone; still all or nothing)."""
        async with self._lock, self._pool.connection() as conn, conn.transaction():
            await conn.execute(_LOCK if durable else _LOCK_LAZY, (WRITE_LOCK,))
            wrapped = PgConnection(conn, self._id_tables)
            await self.check_guard(wrapped)
            yield wrapped

    async def write_statement(self, sql: str, params: Params = ()) -> list[Row]:
        """`Database.write_statement`: the statement runs in autocommit, so it must take the
        write lock itself (`POSTGRES.write_lock`); one that does not is refused."""
        if POSTGRES.write_lock not in sql:
            raise ValueError("a write statement must take the write lock (dialect.write_lock)")
        if self.guard() is not None:  # the guard's check first, in one transaction
            async with self.write() as wrapped:
                return await wrapped.execute_fetchall(sql, params)
        async with self._lock, self._pool.connection() as conn:
            cur = await conn.execute(*bind(sql, params))
            return await cur.fetchall()

    async def execute_write(self, sql: str, params: Params = ()) -> int | None:
        async with self.write() as conn:
            cur = await conn.execute(sql, params)
            return cur.lastrowid

    async def execute_atomic(self, sql: str, params: Params = ()) -> int:
        """One statement in its own transaction without the write lock: PostgreSQL's row
        locks make a conditional UPDATE or an `ON CONFLICT … DO UPDATE … WHERE` decide on the
        row's latest committed version, so two processes claiming one row never both win
        (READ COMMITTED re-checks the WHERE after waiting for the other's lock). Under a write
        guard, the guard's check and the statement are one transaction, still without the
        write lock."""
        if self.guard() is not None:
            async with self._pool.connection() as conn, conn.transaction():
                wrapped = PgConnection(conn, self._id_tables)
                await self.check_guard(wrapped)
                return int((await wrapped.execute(sql, params)).rowcount or 0)
        async with self._pool.connection() as conn:
            cur = await conn.execute(*bind(sql, params))
            return int(cur.rowcount or 0)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        async with self._pool.connection() as conn:
            cur = await conn.execute(*bind(sql, params), binary=_binary(sql))
            return await cur.fetchall()

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        async with self._pool.connection() as conn:
            cur = await conn.execute(*bind(sql, params), binary=_binary(sql))
            return await cur.fetchone()

    async def executemany_write(self, sql: str, rows: Iterable[Params]) -> None:
        async with self.write() as conn:
            await conn.executemany(sql, rows)

    async def rows_in_batches(self, sql: str, params: Params = (), size: int = 500
                              ) -> AsyncIterator[list[Row]]:
        """The rows of one query through a server-side cursor, `size` at a time."""
        async with self._pool.connection() as conn, conn.transaction(), \
                conn.cursor(name="strata_rows") as cur:
            await cur.execute(*bind(sql, params))
            while rows := await cur.fetchmany(size):
                yield rows

    async def versions(self) -> str:
        """The server and its extensions, as `strata doctor` reports them."""
        row = await self.fetchone(
            "SELECT current_setting('server_version'),"
            " (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            " (SELECT extversion FROM pg_extension WHERE extname = 'pg_trgm')")
        assert row is not None  # a SELECT without FROM always gives one row
        trgm = f", pg_trgm {row[2]}" if row[2] else ""
        return f"PostgreSQL {row[0]}, pgvector {row[1] or 'missing'}{trgm}"

    @property
    def integrity_errors(self) -> tuple[type[Exception], ...]:
        """psycopg's IntegrityError, whose subclasses name the constraint's kind
        (UniqueViolation, ForeignKeyViolation, NotNullViolation, CheckViolation)."""
        return (psycopg.IntegrityError,)

    async def bytes_on_disk(self) -> int:
        return int(await self.fetchval("SELECT pg_database_size(current_database())"))

    async def checkpoint(self) -> None:
        """Nothing to fold: PostgreSQL manages its own write-ahead log."""

    async def reclaim(self, tables: Iterable[str]) -> None:
        """After deleting rows from `tables` (/forget, /wipe): `VACUUM` them, so the deleted
        row versions (and their index entries) are removed from the table and index pages
        and their space becomes reusable. VACUUM cannot run inside a transaction: it runs
        on a pooled connection, which is in autocommit mode, outside the write lock (it
        blocks neither reads nor writes). What it cannot promise: see docs/operations.md."""
        names = sorted(set(tables))
        if not names:
            return
        statement = sql.SQL("VACUUM {}").format(sql.SQL(", ").join(map(sql.Identifier, names)))
        async with self._pool.connection() as conn:
            if not conn.autocommit:  # the pool's connections are; VACUUM needs it
                raise StorageError("VACUUM needs an autocommit connection")
            await conn.execute(statement)

