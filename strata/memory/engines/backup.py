"""Backup, restore and integrity checks of the database file (`strata db backup|restore|check`).

A backup goes through SQLite's online backup API on a connection of its own: it copies every
page inside one read transaction, so the copy is the database as of one moment even while the
bot keeps writing through its own connections (WAL mode lets readers and the writer overlap).
The copy is written next to the target and renamed into place only after it passed
`integrity_check`, so a failed backup never leaves a half-written file under the target name.

Everything written here is derived from the database, so it is private: files 0600, and
folders Strata makes on the way 0700. A backup never replaces an existing file unless told
(`replace=True`); the CLI asks first.

A restore checks the candidate file first and refuses it unless every check passes. Then it
copies the current database aside (`<db>.before-restore.N`, the next unused N: every earlier
copy is kept) and copies the candidate into the live file with the same backup API, which
takes SQLite's write lock: a running bot waits for it and afterwards reads the restored
content, never a mixture.

A move (`strata db move`, for a `./strata.db` left by an earlier version) folds the WAL into
the file first, refuses while another process has the database open and never replaces a
file: it hard-links the file to its new name (which fails if the name is taken) and then
removes the old one, or copies it across file systems.

The checks: `PRAGMA integrity_check` (the b-trees, indexes and free list), `PRAGMA
foreign_key_check`, and each FTS5 index's own `integrity-check` command (the keyword index
against the rows it indexes). They read the file through a read-only connection
(`strata.memory.engines.dbfile`), so checking changes nothing on disk and works on a read-only copy;
FTS5's command is an INSERT (that writes nothing) which a read-only connection refuses, so the
keyword indexes are checked on a private temporary copy. The functions are synchronous;
callers run them in a thread. Imports `strata.memory.engines.driver`, `strata.memory.engines.dbfile`
and `bot` leaf modules only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_vec

from strata.core.errors import StorageError
from strata.core.private_files import private_file, private_parents, tighten
from strata.memory.engines.dbfile import (
    connect_read_only,
    is_sqlite,
    require_sqlite,
    require_strata,
    side_files,
)
from strata.memory.engines.driver import sqlite_driver

BUSY_MS = 30_000


@dataclass(frozen=True, slots=True)
class Check:
    """One integrity check and its outcome (`problems` empty when it passed)."""

    name: str
    problems: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass(frozen=True, slots=True)
class CheckReport:
    path: str
    checks: tuple[Check, ...]
    transcript_rows: int | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failures(self) -> list[str]:
        return [f"{c.name}: {p}" for c in self.checks for p in c.problems]


@dataclass(frozen=True, slots=True)
class CopyReport:
    source: str
    target: str
    bytes: int
    transcript_rows: int | None


@contextlib.contextmanager
def _connect(path: Path) -> Iterator[Any]:
    """A writing connection: only to a file Strata made or knows to be its own."""
    driver = sqlite_driver()
    conn = driver.connect(str(path), timeout=BUSY_MS / 1000, isolation_level=None)
    try:
        # vec0 tables are only readable with the extension loaded.
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_MS}")
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def _read(path: Path) -> Iterator[Any]:
    """A read-only connection: nothing on disk changes (`strata.memory.engines.dbfile`)."""
    conn = connect_read_only(path, timeout=BUSY_MS / 1000)
    try:
        yield conn
    finally:
        conn.close()


def _fts_tables(conn: Any) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%' "
        "ORDER BY name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _transcript_rows(conn: Any) -> int | None:
    try:
        return int(conn.execute("SELECT count(*) FROM transcript").fetchone()[0])
    except sqlite_driver().Error:  # a file without a transcript simply has no count
        return None


def _run_checks(conn: Any) -> list[Check]:
    checks: list[Check] = []
    rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    checks.append(Check("integrity_check", tuple(r for r in rows if r != "ok")))
    fk = conn.execute("PRAGMA foreign_key_check").fetchall()
    checks.append(Check("foreign_key_check", tuple(
        f"row {r[1]} of {r[0]} points at a missing row of {r[2]}" for r in fk)))
    meta = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
    ).fetchone()[0]
    checks.append(Check("strata schema", () if meta else ("no meta table: not a Strata database",)))
    tables = _fts_tables(conn)
    if not tables:
        return checks
    with tempfile.TemporaryDirectory(prefix="strata-check-") as folder:  # 0700
        copy = Path(folder) / "copy.db"
        with _connect(copy) as writable:
            conn.backup(writable)
            checks += [_fts_check(writable, table) for table in tables]
    return checks


def _fts_check(conn: Any, table: str) -> Check:
    try:
        # FTS5's own check (an INSERT that writes nothing). rank = 1 makes it compare an
        # external-content index with the rows of its content table too, which the plain
        # command skips. Names come from sqlite_master, quoted as identifiers.
        quoted = '"' + table.replace('"', '""') + '"'
        conn.execute(f"INSERT INTO {quoted}({quoted}, rank) VALUES ('integrity-check', 1)")
    except sqlite_driver().Error as exc:  # the driver's error is the finding
        return Check(f"fts5 {table}", (str(exc),))
    return Check(f"fts5 {table}")


def check(path: str | Path) -> CheckReport:
    """Run every integrity check on the database file at `path`, reading it only."""
    file = Path(path)
    if not file.is_file():
        raise StorageError(f"{file} does not exist")
    if not is_sqlite(file):
        return CheckReport(str(file), (Check("open", ("not a SQLite database",)),))
    try:
        with _read(file) as conn:
            checks = _run_checks(conn)
            rows = _transcript_rows(conn)
    except sqlite_driver().Error as exc:  # "file is not a database" and kin are findings
        return CheckReport(str(file), (Check("open", (str(exc),)),))
    return CheckReport(str(file), tuple(checks), rows)


def _copy(source: Path, target: Path) -> None:
    """Copy `source` (read-only) into `target` page by page with the online backup API."""
    with _read(source) as src, _connect(target) as dst:
        src.backup(dst)


def backup(db_path: str | Path, target: str | Path, *, replace: bool = False) -> CopyReport:
    """A consistent, private copy of the database at `db_path` in `target`. An existing
    `target` is replaced only with `replace`; missing folders are made 0700."""
    source, dest = Path(db_path), Path(target)
    require_sqlite(source)
    if dest.resolve() == source.resolve():
        raise StorageError("the backup target is the database itself")
    if dest.exists() and not replace:
        raise StorageError(f"{dest} already exists: add --force to replace it")
    if dest.exists() and not dest.is_file():
        raise StorageError(f"{dest} is not a file")
    try:
        private_parents(dest)
    except OSError as exc:
        raise StorageError(f"cannot make the folder of {dest}: {exc}") from exc
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        private_file(partial)
        _copy(source, partial)
        report = check(partial)
        if not report.ok:
            raise StorageError("the copy failed its checks: " + "; ".join(report.failures()[:3]))
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return CopyReport(str(source), str(dest), dest.stat().st_size, report.transcript_rows)


def kept_copy_name(db_path: str | Path) -> Path:
    """Where a restore keeps the database it replaces: `<db>.before-restore.N`, the first N
    not taken (an earlier restore's copy is never replaced)."""
    dest = Path(db_path)
    n = 1
    while (kept := dest.with_name(f"{dest.name}.before-restore.{n}")).exists():
        n += 1
    return kept


def restore(backup_path: str | Path, db_path: str | Path) -> tuple[CopyReport, Path | None]:
    """Replace the database at `db_path` with the checked file `backup_path`.

    Refuses (StorageError, nothing changed) when the file fails a check, or when `db_path`
    is not a Strata database. Returns the report and where the replaced database is kept
    (`kept_copy_name`; None when there was none).
    """
    source, dest = Path(backup_path), Path(db_path)
    if not source.is_file():
        raise StorageError(f"{source} does not exist")
    if dest.exists() and dest.resolve() == source.resolve():
        raise StorageError("the file to restore is the database itself")
    report = check(source)
    if not report.ok:
        raise StorageError(f"refusing to restore {source}: it fails the integrity checks: "
                           + "; ".join(report.failures()[:3]))
    kept: Path | None = None
    require_strata(dest)
    if dest.exists():
        kept = kept_copy_name(dest)
        backup(dest, kept)
    else:
        try:
            private_parents(dest)
            private_file(dest)
        except OSError as exc:
            raise StorageError(f"cannot create {dest}: {exc}") from exc
    _copy(source, dest)
    return CopyReport(str(source), str(dest), dest.stat().st_size, report.transcript_rows), kept


def move(db_path: str | Path, target: str | Path) -> CopyReport:
    """Move the database at `db_path` (with what its WAL holds) to `target`, which must not
    exist; refused while another process has the database open."""
    source, dest = Path(db_path), Path(target)
    if not source.is_file():
        raise StorageError(f"database {source} does not exist")
    require_strata(source)
    if dest.absolute().resolve() == source.resolve():
        raise StorageError(f"the database is already at {dest}")
    for taken in (dest, *side_files(dest)):
        if taken.exists():
            raise StorageError(f"{taken} already exists: a move never replaces a file (it may "
                               "be another memory); choose another path or move it aside")
    with _connect(source) as conn:
        busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        rows = _transcript_rows(conn)
    # The last connection to close removes the WAL: one left means another holds it open.
    if busy or side_files(source)[0].exists():
        raise StorageError(f"{source} is in use by another process (a running `strata run` "
                           "or `strata worker`?): stop it, then move")
    try:
        private_parents(dest)
        os.link(source, dest)  # fails if the name was taken meanwhile: nothing replaced
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise StorageError(f"cannot move {source} to {dest}: {exc}") from exc
        backup(source, dest)  # another file system: a checked, private copy
    tighten(dest)
    source.unlink()
    return CopyReport(str(source), str(dest), dest.stat().st_size, rows)
