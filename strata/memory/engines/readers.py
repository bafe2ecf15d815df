"""Extra read connections beside a SQLite `Database` (`ReaderPool`), so that independent reads
of one task run at the same time; on a server engine reads go to its own pool."""

from __future__ import annotations

import asyncio

import aiosqlite

from strata.memory.engines.db import Database, Params, Row
from strata.memory.engines.dialect import Dialect
from strata.memory.engines.sqlite_open import open_connection


class ReaderPool:
    """A few extra read connections, so independent reads of one task run at the same time.

    Each aiosqlite connection has its own thread and SQLite releases the GIL while it works;
    in WAL mode readers never block each other. Recall runs its vector and keyword searches
    side by side on these. Connections open on first use; `close()` them with the database.
    """

    def __init__(self, db: Database, size: int = 4) -> None:
        self.db = db
        self.size = max(1, size)
        self._free: asyncio.Queue[aiosqlite.Connection] | None = None
        self._all: list[aiosqlite.Connection] = []
        self._lock = asyncio.Lock()

    async def _queue(self) -> asyncio.Queue[aiosqlite.Connection]:
        async with self._lock:
            if self._free is None:
                free: asyncio.Queue[aiosqlite.Connection] = asyncio.Queue()
                for _ in range(self.size):
                    conn = await open_connection(self.db.path, self.db.read_only)
                    self._all.append(conn)
                    free.put_nowait(conn)
                self._free = free
            return self._free

    @property
    def dialect(self) -> Dialect:
        return self.db.dialect

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        if self.db.engine != "sqlite":  # a server engine's own pool already reads in parallel
            return await self.db.fetchall(sql, params)
        free = await self._queue()
        conn = await free.get()
        try:
            return list(await conn.execute_fetchall(sql, params))
        finally:
            free.put_nowait(conn)

    async def close(self) -> None:
        async with self._lock:
            for conn in self._all:
                await conn.close()
            self._all.clear()
            self._free = None
