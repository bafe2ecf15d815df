"""A populated benchmark store on either engine (bench/engines.py's `populate`), for the
benchmarks that time recall's reads on both."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bench import engines
from strata.memory.engines.db import Database


@asynccontextmanager
async def engine_store(engine: str, persons: int, memories: int, queries: int
                       ) -> AsyncIterator[tuple[engines.Store, list[engines.PersonQueries], int]]:
    """`engines.sqlite_store`, or the same on a throwaway PostgreSQL server
    (`engines.postgres`): the store, its people's queries and the vectors' dimension."""
    if engine == "sqlite":
        async with engines.sqlite_store(persons, memories, queries) as found:
            yield found
        return
    args = engines.parse_args(["--persons", str(persons), "--memories", str(memories),
                               "--queries", str(queries), "--engines", "postgres"])
    with engines.postgres(None, args.dim) as url:
        db = await Database.open(url, args.dim)
        try:
            store = engines.Store("postgres", db)
            made, _ = await engines.populate([store], args, engines.Loads())
            yield store, made, args.dim
        finally:
            await db.close()
