"""A throwaway PostgreSQL database: created next to the one a URL names, dropped afterwards.

What the recall evaluation runs on when it is pointed at a server (`strata eval recall
--db-url`): each conversation gets an empty database of its own, as it gets a fresh SQLite
file otherwise. The URL's role must be allowed to create databases, and the `vector`
extension must be creatable in them (or be in `template1`). Imports `strata.core.errors`,
`strata.memory.engines.pg.database` and psycopg.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import AsyncConnection, sql

from strata.core.errors import StorageError
from strata.memory.engines.pg.database import redacted


def with_database(url: str, name: str) -> str:
    """`url` naming database `name` instead (same server, role and options)."""
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


async def _admin(url: str, statement: sql.Composed) -> None:
    try:
        async with await AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(statement)
    except psycopg.Error as exc:
        raise StorageError(f"cannot create or drop a database on {redacted(url)}: {exc}"
                           ) from exc


@asynccontextmanager
async def scratch_database(url: str, prefix: str = "strata_scratch") -> AsyncIterator[str]:
    """Create an empty database on `url`'s server, yield its URL, drop it (also on error)."""
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(4)}"
    await _admin(url, sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield with_database(url, name)
    finally:
        await _admin(url, sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))
