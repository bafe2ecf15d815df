"""Opening a SQLite file for `Database`: one job, everything before the first query.

A connection gets the driver that can load sqlite-vec (see `driver`), the extension and the
pragmas (WAL, foreign keys, secure delete, a memory map); a short-lived connection runs the
numbered migrations and reads the meta table; and a file is only touched once it is known to
be Strata's (`strata.memory.engines.dbfile`) and made private (0600, its folders 0700). The
reading commands open it read-only, changing not a byte. Imports `core` leaf modules and
`strata.memory.engines`' `driver`, `dbfile` and `migrations` only.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiosqlite
import sqlite_vec

from strata.core.errors import StorageError
from strata.core.private_files import private_file, private_parents, tighten
from strata.memory.engines import pg
from strata.memory.engines.dbfile import connect_read_only, require_strata, side_files
from strata.memory.engines.driver import sqlite_driver
from strata.memory.engines.migrations import apply_migrations, read_meta

# Address space only (pages are shared with the OS cache); beyond it reads go the usual way.
MMAP_BYTES = 1 << 30


def _connector(path: str, read_only: bool = False) -> Any:
    driver = sqlite_driver()

    def connect() -> Any:
        if read_only:  # no migrations, no writes, no side files (strata.memory.engines.dbfile)
            conn = connect_read_only(Path(path))
        else:
            conn = driver.connect(path, timeout=30.0, isolation_level=None,
                                  check_same_thread=False)
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
            conn.execute("PRAGMA journal_mode = WAL")
        conn.row_factory = driver.Row
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 30000")
        # Deleted memory must not linger in free pages (see /forget and /wipe).
        conn.execute("PRAGMA secure_delete = ON")
        # Reads through a memory map: a vec0 kNN reads its partition's chunks as blobs, and
        # with the small chunks of migration 0009 (many blobs per person) copying each through
        # the page cache costs more than the scan itself (docs/living-memory.md).
        conn.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        return conn

    return connect


def raw_connection(path: str | Path) -> Any:
    """A plain synchronous connection with sqlite-vec loaded and the usual pragmas, no
    migrations: for tools and upgrade tests that build an older schema (close it yourself)."""
    return _connector(str(path))()


def prepare(
    path: str, dim: int, migrate: bool, upto: int | None = None, read_only: bool = False
) -> tuple[list[str], dict[str, str]]:
    """Synchronously migrate (if asked; up to migration `upto`) and read the meta table, on a
    short-lived connection."""
    try:
        conn = _connector(path, read_only)()
    except Exception as exc:
        raise StorageError(f"cannot open database {path}: {exc}") from exc
    try:
        applied: list[str] = []
        if migrate:
            # Foreign keys off while migrating (SQLite's table-rebuild procedure): dropping a
            # table being rebuilt must not cascade into its children. The pragma is a no-op
            # inside a transaction, hence before BEGIN; the keys are checked before COMMIT.
            conn.execute("PRAGMA foreign_keys = OFF")
            conn.execute("BEGIN IMMEDIATE")
            try:
                applied = apply_migrations(conn, dim, upto=upto)
                broken = applied and conn.execute("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise StorageError(
                        f"migrating {path} would break {len(broken)} foreign keys "
                        f"(first: {tuple(broken[0])}); nothing was changed")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            conn.execute("PRAGMA foreign_keys = ON")
        return applied, read_meta(conn)
    finally:
        conn.close()


async def open_connection(path: str, read_only: bool = False) -> aiosqlite.Connection:
    conn = aiosqlite.Connection(_connector(path, read_only), iter_chunk_size=64)
    try:
        await conn
    except Exception as exc:
        raise StorageError(f"cannot open database {path}: {exc}") from exc
    return conn


def migrate_file(path: str | Path, dim: int, *, upto: int | None = None) -> list[str]:
    """Create or migrate the database at `path` up to migration `upto` (all when None) and
    return what was applied; `Database.open` does this for the whole list."""
    make_private(str(path))
    return prepare(str(path), dim, True, upto)[0]


def make_private(path: str) -> None:
    """Before SQLite first opens `path` for writing: refuse a file that is not Strata's (a
    mistyped STRATA_DB keeps its mode and content), make missing folders (0700), and make
    the file 0600 (its WAL and -shm copy the database file's mode); files an older version
    left open are narrowed."""
    file = Path(path).expanduser()
    require_strata(file)
    try:
        private_parents(file)
        private_file(file)
        tighten(*side_files(file))
    except OSError as exc:
        raise StorageError(f"cannot open database {path}: {exc}") from exc


def new_sqlite_file(path: str | Path) -> bool:
    """A SQLite database that does not exist yet (an empty file counts: SQLite writes its header
    on the first write). False for a PostgreSQL URL or `:memory:`."""
    if pg.is_url(path) or str(path) == ":memory:":
        return False
    file = Path(path).expanduser()
    return not file.exists() or file.stat().st_size == 0


async def stored_dim(path: str | Path) -> int | None:
    """The embedding dimension an existing SQLite database was created with, read without
    changing a byte (None: no database there yet, or a PostgreSQL URL, which keeps its own
    check). For commands that embed nothing and so may take whatever the file has."""
    if pg.is_url(path) or str(path) == ":memory:" or new_sqlite_file(path):
        return None
    file = Path(path).expanduser()
    require_strata(file)
    _, meta = await asyncio.to_thread(prepare, str(file), 0, False, None, True)
    stored = meta.get("embed_dim")
    return int(stored) if stored is not None else None
