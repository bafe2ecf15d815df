"""Pick a SQLite DB-API driver that can load sqlite-vec and has FTS5.

The interpreter's own `sqlite3` often cannot load extensions (pyenv and many distro builds are
compiled without it); `pysqlite3` (the `pysqlite3-binary` wheel) bundles a recent SQLite that
can. The choice is made once per process. Imports only `strata.core.errors`.
"""

from __future__ import annotations

import functools
import importlib
import logging
from types import ModuleType
from typing import Any

from strata.core.errors import ExtensionUnavailableError

log = logging.getLogger(__name__)

FIX_HINT = (
    "install a SQLite driver that can load extensions: `pip install pysqlite3-binary` "
    "(Linux x86_64), or use a Python built with `--enable-loadable-sqlite-extensions`"
)


def _probe(module: ModuleType) -> str | None:
    """Return None if `module` can load sqlite-vec and has FTS5, else why not."""
    import sqlite_vec

    try:
        conn: Any = module.connect(":memory:")
    except Exception as exc:  # noqa: BLE001 - any driver failure means "not usable"
        return f"{module.__name__}: cannot connect ({exc})"
    try:
        if not hasattr(conn, "enable_load_extension"):
            return f"{module.__name__}: built without extension loading"
        try:
            conn.enable_load_extension(True)
            sqlite_vec.load(conn)
            conn.enable_load_extension(False)
        except Exception as exc:  # noqa: BLE001 - any failure here means "not usable"
            return f"{module.__name__}: cannot load sqlite-vec ({exc})"
        try:
            conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        except module.OperationalError:
            return f"{module.__name__}: SQLite {module.sqlite_version} has no FTS5"
        return None
    finally:
        conn.close()


@functools.cache
def sqlite_driver() -> ModuleType:
    """The first usable driver: stdlib `sqlite3`, then `pysqlite3.dbapi2`."""
    reasons: list[str] = []
    for name in ("sqlite3", "pysqlite3.dbapi2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            reasons.append(f"{name}: not installed")
            continue
        reason = _probe(module)
        if reason is None:
            log.debug("using SQLite driver %s (SQLite %s)", name, module.sqlite_version)
            return module
        reasons.append(reason)
    raise ExtensionUnavailableError(
        "no SQLite driver can load sqlite-vec: " + "; ".join(reasons) + ". Fix: " + FIX_HINT
    )
