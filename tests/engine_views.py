"""What a test reads of the storage engine itself, the same question asked of each engine:
every table's text, the bytes where the engine keeps rows (deleted ones included), and the
allowed values of a CHECK constraint. The product's catalogue queries are in the dialects
(`strata.memory.engines.dialect`); these answer questions only tests ask."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from strata.memory.engines.db import Database


async def table_names(db: Database) -> list[str]:
    """Every table: on SQLite with the FTS5 shadow tables and vec0 tables."""
    if db.engine == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    else:
        sql = ("SELECT table_name FROM information_schema.tables WHERE table_schema ="
               " current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name")
    return [str(r[0]) for r in await db.fetchall(sql)]


async def all_table_text(db: Database) -> str:
    """Every value of every table (FTS shadow tables and vector tables included), lower case."""
    out = []
    for name in await table_names(db):
        for row in await db.fetchall(f'SELECT * FROM "{name}"'):
            for value in tuple(row):
                if isinstance(value, bytes):
                    out.append(value.decode("latin-1"))
                else:
                    out.append(str(value))
    return "\n".join(out).lower()


def sqlite_file_bytes(db: Database) -> bytes:
    """The SQLite file and its WAL, lower case."""
    data = b""
    for suffix in ("", "-wal"):
        path = Path(db.path + suffix)
        if path.exists():
            data += path.read_bytes()
    return data.lower()


async def stored_bytes(db: Database) -> bytes:
    """The bytes in which the engine keeps rows, deleted ones included, lower case: the SQLite
    file and its WAL (`secure_delete` zeroes freed space); on PostgreSQL every row version's
    data in every table's heap pages (pageinspect), live or dead: a deleted row's version
    stays there until VACUUM removes it. What neither this nor PostgreSQL covers (space
    VACUUM freed but did not overwrite, index keys, the WAL): docs/operations.md."""
    if db.engine == "sqlite":
        return sqlite_file_bytes(db)
    await db.execute_write("CREATE EXTENSION IF NOT EXISTS pageinspect")
    out = []
    for name in await table_names(db):
        size = int(await db.fetchval("SELECT pg_relation_size(?::regclass)", (name,)))
        for block in range(size // 8192):
            rows = await db.fetchall(
                "SELECT t_data FROM heap_page_items(get_raw_page(?, ?))"
                " WHERE t_data IS NOT NULL", (name, block))
            out.extend(bytes(r[0]) for r in rows)
    return b"\n".join(out).lower()


async def check_values(db: Database, table: str, column: str) -> tuple[str, ...]:
    """The values a CHECK constraint allows `column` of `table`, in their declared order."""
    if db.engine == "sqlite":
        sql = str(await db.fetchval("SELECT sql FROM sqlite_master WHERE name = ?", (table,)))
        found = re.search(rf"{column} IN \((.*?)\)\)", sql, re.S)
    else:
        sql = " ".join(str(r[0]) for r in await db.fetchall(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE contype = 'c'"
            " AND conrelid = ?::regclass", (table,)))
        found = re.search(rf"\({column} = ANY \(ARRAY\[(.*?)\]\)\)", sql, re.S)
    assert found is not None, f"no CHECK on {table}.{column}: {sql}"
    return tuple(re.findall(r"'(\w+)'", found.group(1)))


def stored_bytes_at(target: str, dim: int) -> bytes:
    """`stored_bytes` of the database at `target` (a path or URL), from synchronous code."""

    async def read() -> bytes:
        db = await Database.open(target, dim)
        try:
            return await stored_bytes(db)
        finally:
            await db.close()

    return asyncio.run(read())
