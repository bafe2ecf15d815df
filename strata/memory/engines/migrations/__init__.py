"""Numbered, named schema migrations (`NNNN_name.sql` files beside this module).

Each file runs once, in order, inside the caller's transaction; applied ones are listed in the
`migrations` table. `$DIM` in a file is replaced by the embedding dimension recorded when the
database was created. The schema is only ever changed by adding a file here (and refreshing
`tests/fixtures/schema.sql`, which a test diffs against). Imports nothing from the project.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from importlib import resources
from typing import Any

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def available(package: str = __name__) -> list[tuple[int, str, str]]:
    """(number, name, sql) for every migration file of `package` (SQLite's, by default; the
    PostgreSQL engine keeps its own in `strata.memory.engines.pg.migrations`), in order."""
    out = []
    for entry in resources.files(package).iterdir():
        match = _NAME.match(entry.name)
        if match:
            out.append((int(match.group(1)), match.group(2), entry.read_text(encoding="utf-8")))
    out.sort()
    numbers = [n for n, _, _ in out]
    if len(set(numbers)) != len(numbers):
        raise RuntimeError(f"duplicate migration numbers: {numbers}")
    return out


def split_statements(sql: str, complete: Any) -> list[str]:
    """Split a script into statements (triggers' inner `;` included) with `complete_statement`.

    `executescript` would COMMIT the caller's transaction first, so scripts run statement by
    statement instead.
    """
    statements: list[str] = []
    buf = ""
    for line in sql.splitlines(keepends=True):
        if not buf and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buf += line
        if complete(buf):
            statements.append(buf.strip())
            buf = ""
    if buf.strip():
        statements.append(buf.strip())
    return statements


def read_meta(conn: Any) -> dict[str, str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()
    if not exists:
        return {}
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta").fetchall()}


def apply_migrations(conn: Any, dim: int, *, upto: int | None = None) -> list[str]:
    """Apply every pending migration on `conn` (already inside a transaction).

    `upto` stops after that number: upgrade tests build a database of an older schema with it.
    The caller turns foreign keys off first (a migration may rebuild a parent table).
    """
    import sys

    complete = sys.modules[type(conn).__module__].complete_statement
    conn.execute(
        "CREATE TABLE IF NOT EXISTS migrations ("
        " id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    meta = read_meta(conn)
    if "embed_dim" not in meta:
        conn.execute("INSERT INTO meta (key, value) VALUES ('embed_dim', ?)", (str(dim),))
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('created_at', ?)",
            (datetime.now(UTC).isoformat(),),
        )
    else:
        dim = int(meta["embed_dim"])
    done = {row[0] for row in conn.execute("SELECT id FROM migrations").fetchall()}
    applied = []
    for number, name, sql in available():
        if number in done or (upto is not None and number > upto):
            continue
        for statement in split_statements(sql.replace("$DIM", str(dim)), complete):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)",
            (number, name, datetime.now(UTC).isoformat()),
        )
        applied.append(f"{number:04d}_{name}")
    return applied
