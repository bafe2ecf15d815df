"""The PostgreSQL engine: the same memory in PostgreSQL with pgvector (issue 14).

`Database.open("postgresql://…", dim)` returns a `PgDatabase` (this package), which keeps the
`Database` interface: repositories write SQL once, with `?` marks, and the engine translates
the marks (`sql.translate`). Statements that cannot be written for both engines (full-text
search, vector search) come from the database's `dialect`. The schema is made by the
numbered migrations in `strata/memory/engines/pg/migrations/`. Imports `bot` leaf modules,
`strata.memory.engines.db` and
`strata.memory.engines.dialect`.
"""

from __future__ import annotations

from pathlib import Path

SCHEMES = ("postgresql://", "postgres://")


def is_url(target: str | Path) -> bool:
    """True when a configured database names a PostgreSQL server rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(SCHEMES)
