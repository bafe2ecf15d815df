"""Backup, restore and integrity checks of the database file (`strata db backup|restore|check`).

A backup goes through SQLite's online backup API on a connection of its own: it copies every
page inside one read transaction, so the copy is the database as of one moment even while the
bot keeps writing through its own connections (WAL mode lets readers and the writer overlap).
The copy is written next to the target and renamed into place only after it passed
`integrity_check`, so a failed backup never leaves a half-written file under the target name.

A restore checks the candidate file first and refuses it unless every check passes. Then it
copies the current database aside (`<db>.before-restore`) and copies the candidate into the
live file with the same backup API, which takes SQLite's write lock: a running bot waits for
it and afterwards reads the restored content, never a mixture.

The checks: `PRAGMA integrity_check` (the b-trees, indexes and free list), `PRAGMA
foreign_key_check`, and each FTS5 index's own `integrity-check` command (the keyword index
against the rows it indexes). The functions are synchronous; callers run them in a thread.
Imports `memory.driver` and `bot.errors` only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlite_vec

from bot.errors import StorageError
from memory.driver import sqlite_driver

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


def _fts_tables(conn: Any) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%' "
        "ORDER BY name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _transcript_rows(conn: Any) -> int | None:
    try:
        return int(conn.execute("SELECT count(*) FROM transcript").fetchone()[0])
    except Exception:  # noqa: BLE001 - a file without a transcript simply has no count
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
    for table in _fts_tables(conn):
        try:
            # FTS5's own check (an INSERT that writes nothing). rank = 1 makes it compare an
            # external-content index with the rows of its content table too, which the plain
            # command skips. Names come from sqlite_master, quoted as identifiers.
            quoted = '"' + table.replace('"', '""') + '"'
            conn.execute(f"INSERT INTO {quoted}({quoted}, rank) VALUES ('integrity-check', 1)")
            checks.append(Check(f"fts5 {table}"))
        except Exception as exc:  # noqa: BLE001 - the driver's error is the finding
            checks.append(Check(f"fts5 {table}", (str(exc),)))
    return checks


def check(path: str | Path) -> CheckReport:
    """Run every integrity check on the database file at `path`."""
    file = Path(path)
    if not file.is_file():
        raise StorageError(f"{file} does not exist")
    try:
        with _connect(file) as conn:
            checks = _run_checks(conn)
            rows = _transcript_rows(conn)
    except StorageError:
        raise
    except Exception as exc:  # noqa: BLE001 - "file is not a database" and kin are findings
        return CheckReport(str(file), (Check("open", (str(exc),)),))
    return CheckReport(str(file), tuple(checks), rows)


def _copy(source: Path, target: Path) -> None:
    """Copy `source` into `target` page by page with the online backup API (one step)."""
    with _connect(source) as src, _connect(target) as dst:
        src.backup(dst)


def backup(db_path: str | Path, target: str | Path) -> CopyReport:
    """A consistent copy of the database at `db_path` in `target` (replaced if it exists)."""
    source, dest = Path(db_path), Path(target)
    if not source.is_file():
        raise StorageError(f"database {source} does not exist")
    if dest.resolve() == source.resolve():
        raise StorageError("the backup target is the database itself")
    if not dest.parent.is_dir():
        raise StorageError(f"folder {dest.parent} does not exist")
    partial = dest.with_name(dest.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        _copy(source, partial)
        report = check(partial)
        if not report.ok:
            raise StorageError("the copy failed its checks: " + "; ".join(report.failures()[:3]))
        os.replace(partial, dest)
    finally:
        partial.unlink(missing_ok=True)
    return CopyReport(str(source), str(dest), dest.stat().st_size, report.transcript_rows)


def restore(backup_path: str | Path, db_path: str | Path) -> CopyReport:
    """Replace the database at `db_path` with the checked file `backup_path`.

    Refuses (StorageError, nothing changed) when the file fails a check. The database it
    replaces is kept as `<db_path>.before-restore`.
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
    if dest.exists():
        backup(dest, dest.with_name(dest.name + ".before-restore"))
    elif not dest.parent.is_dir():
        raise StorageError(f"folder {dest.parent} does not exist")
    _copy(source, dest)
    return CopyReport(str(source), str(dest), dest.stat().st_size, report.transcript_rows)
