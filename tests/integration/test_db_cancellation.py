"""A write cancelled at any point (shutdown cancels background work mid-write) leaves the
database usable: the next write works and nothing half-done is kept."""

from __future__ import annotations

import asyncio
import contextlib

from strata.memory.engines.db import Database


async def test_cancelled_writes_never_wedge_the_writer(db: Database) -> None:
    await db.execute_write("CREATE TABLE IF NOT EXISTS t (x INTEGER)")

    async def two_inserts(x: int) -> None:
        async with db.write() as conn:
            await conn.execute("INSERT INTO t (x) VALUES (?)", (x,))
            await conn.execute("INSERT INTO t (x) VALUES (?)", (x,))

    for steps in range(12):  # cancel after 0, 1, 2, … loop iterations: every await point
        task = asyncio.create_task(two_inserts(steps))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await db.execute_write("INSERT INTO t (x) VALUES (?)", (-1,))  # never "within a txn"
    counts = await db.fetchall("SELECT x, count(*) AS n FROM t WHERE x >= 0 GROUP BY x")
    assert all(r["n"] == 2 for r in counts)  # each write is all or nothing
    assert await db.fetchval("SELECT count(*) FROM t WHERE x = -1") == 12
