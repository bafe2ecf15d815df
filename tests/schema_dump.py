"""Dump the schema a fresh migration produces, for the checked-in copy that a test diffs.

Refresh after adding a migration: `python -m tests.schema_dump > tests/fixtures/schema.sql`.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from strata.memory.engines.db import Database

SCHEMA_DIM = 768


async def dump_schema(path: Path) -> str:
    db = await Database.open(path, SCHEMA_DIM)
    try:
        rows = await db.fetchall(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL"
            " AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
        )
    finally:
        await db.close()
    return "".join(f"-- {r['type']} {r['name']}\n{r['sql']};\n\n" for r in rows)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sys.stdout.write(asyncio.run(dump_schema(Path(tmp) / "schema.db")))


if __name__ == "__main__":
    main()
