"""What a database file is, found out before anything touches it, and how to read one without
changing a byte on disk.

A mistyped `STRATA_DB` may name a person's notes or `/etc/passwd`: nothing may change such a
file's mode or content. So before Strata narrows a file to 0600, migrates it or writes to it,
`require_strata` checks that it is missing, empty, or a SQLite file whose schema is Strata's
(or has no tables yet). The check reads only: the 16-byte header, then the schema through a
read-only connection.

Reading commands (`doctor`, `memory show`, `db check`, …) open the database with
`read_only_uri`: SQLite's `mode=ro`, which never migrates and cannot write. On a WAL database
`mode=ro` would still create the `-wal` and `-shm` files (and, being read-only, leave them
behind) when they are missing. They are missing only when no connection has the database open
(the last one to close removes them), so then the file is opened `immutable=1`: read as it
is, no lock and no side files. That also serves a read-only mount. When they exist, a writer
is (or was) at work and `mode=ro` shares its WAL; on a read-only mount where the `-shm`
cannot be made, `immutable=1` is the fallback (`connect_read_only`).

Imports `strata.core.errors` and `strata.memory.engines.driver` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlite_vec

from strata.core.errors import StorageError
from strata.memory.engines.driver import sqlite_driver

SQLITE_HEADER = b"SQLite format 3\x00"


def side_files(path: Path) -> tuple[Path, Path]:
    """The database's WAL and shared-memory files."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def is_sqlite(path: Path) -> bool:
    """True when `path` is an empty file or starts with SQLite's header (read, never opened
    for writing)."""
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_HEADER))
    return head in (b"", SQLITE_HEADER)


def require_sqlite(path: Path) -> None:
    """Raise StorageError unless `path` is an existing SQLite file (or an empty one)."""
    if not path.is_file():
        raise StorageError(f"{path} does not exist" if not path.exists()
                           else f"{path} is not a file")
    if not is_sqlite(path):
        raise StorageError(f"{path} is not a SQLite database (wrong STRATA_DB?); it was left "
                           "as it is")


def read_only_uri(path: Path, *, immutable: bool | None = None) -> str:
    """A `file:` URI that opens `path` read-only; immutable when no WAL is in use (see the
    module docstring), unless told."""
    if immutable is None:
        immutable = not side_files(path)[0].exists()
    uri = "file:" + quote(str(path.resolve())) + "?mode=ro"
    return uri + ("&immutable=1" if immutable else "")


def connect_read_only(path: Path, timeout: float = 30.0) -> Any:
    """A synchronous read-only connection to the SQLite file `path`, sqlite-vec loaded (close
    it yourself)."""
    driver = sqlite_driver()

    def connect(uri: str) -> Any:
        conn = driver.connect(uri, uri=True, timeout=timeout, isolation_level=None,
                              check_same_thread=False)
        # Before the schema is first read: SQLite marks vec0's shadow tables as such only
        # when the module is known then (strata.memory.engines.transfer lists tables by that mark).
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        return conn

    conn = connect(read_only_uri(path))
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except driver.OperationalError:
        # A WAL in use on a read-only mount: its -shm cannot be made; read the file as it is.
        conn.close()
        conn = connect(read_only_uri(path, immutable=True))
    return conn


def _tables(path: Path) -> list[str]:
    error = sqlite_driver().Error
    try:
        conn = connect_read_only(path)
    except error as exc:
        raise StorageError(f"cannot open database {path}: {exc}") from exc
    try:
        rows = conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    except error as exc:  # "file is not a database" and kin
        raise StorageError(f"{path} is not a usable SQLite database ({exc}); it was left as "
                           "it is") from exc
    finally:
        conn.close()
    return [str(r[0]) for r in rows]


def require_strata(path: Path) -> None:
    """Raise StorageError unless `path` is missing, empty, or a SQLite database that is
    Strata's (a `meta` table) or has no tables yet. Reads only."""
    if not path.exists():
        return
    require_sqlite(path)
    if path.stat().st_size == 0:
        return
    tables = _tables(path)
    if tables and "meta" not in tables:
        shown = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
        raise StorageError(f"{path} is a SQLite database but not a Strata database (its "
                           f"tables: {shown}); it was left as it is")
