"""The database file's own commands: `strata db backup|restore|check|move` (added to the `db`
group of `strata.app.cli.core`; the work is done by `strata.memory.engines.backup`).

Replacing a file asks first: on a terminal a question, otherwise a refusal that names the
flag (`backup --force`, `restore --yes`), so a script never replaces a file by accident.
`check` only reads. `move` puts a `./strata.db` left by an earlier version (or any database)
at its new place without replacing anything there.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from strata.app.cli.core import subgroup
from strata.app.cli.memory import confirm
from strata.bot.visible import say
from strata.core.clock import SystemClock
from strata.core.config import Settings, default_db_path
from strata.core.errors import StrataError
from strata.core.wording import counted
from strata.memory.engines import backup, backup_log


def _db_file(settings: Settings) -> Path:
    if settings.db.url:
        raise StrataError("backup, restore, check and move work on a SQLite file; for "
                          "PostgreSQL use pg_dump / pg_restore (docs/operations.md, "
                          "\"PostgreSQL\")")
    return Path(settings.db.path).expanduser()


def may_replace(question: str, flag: str, given: bool) -> None:
    """Go on when `given` (the flag), or when a person at a terminal says yes; otherwise raise
    a StrataError that names the flag. Nothing has been changed when it raises."""
    if given:
        return
    if not sys.stdin.isatty():
        raise StrataError(f"{question} Not asked (no terminal): add {flag} to go ahead")
    if not confirm(question):
        raise StrataError("nothing was changed")


def _rows(count: int | None) -> str:
    # A file that is not (yet) a Strata store has no transcript to count.
    return "no transcript" if count is None else counted(count, "transcript row")


async def cmd_db_backup(args: argparse.Namespace, settings: Settings) -> int:
    target = Path(args.path).expanduser()
    if target.exists():
        may_replace(f"{target} exists: replace it with the backup?", "--force", args.force)
    report = await asyncio.to_thread(backup.backup, _db_file(settings), target, replace=True)
    backup_log.record(report.source, report.target, SystemClock().now())  # a forget names it
    say(f"backed up {report.source} to {report.target} ({report.bytes:,} bytes, "
          f"{_rows(report.transcript_rows)}, readable only by you); it passes the integrity "
          "checks")
    return 0


async def cmd_db_restore(args: argparse.Namespace, settings: Settings) -> int:
    target = _db_file(settings)
    if target.exists():
        may_replace(f"replace the database {target} with {args.path}? (it is kept as "
                    f"{backup.kept_copy_name(target).name})", "--yes", args.yes)
    report, kept = await asyncio.to_thread(backup.restore, args.path, target)
    if kept is not None:
        backup_log.record(target, kept, SystemClock().now())
    say(f"restored {report.source} into {report.target} ({_rows(report.transcript_rows)})"
          + (f"; the database it replaced is kept as {kept}" if kept else ""))
    return 0


async def cmd_db_check(args: argparse.Namespace, settings: Settings) -> int:
    path = Path(args.path) if args.path else _db_file(settings)
    report = await asyncio.to_thread(backup.check, path)
    for c in report.checks:
        say(f"{'ok  ' if c.ok else 'FAIL'}  {c.name}" + (f": {c.problems[0]}" if c.problems
                                                          else ""))
        for problem in c.problems[1:5]:
            say(f"      {problem}")
    say(f"{report.path}: " + ("all checks passed" if report.ok else "CHECKS FAILED"))
    return 0 if report.ok else 1


async def cmd_db_move(args: argparse.Namespace, settings: Settings) -> int:
    source = _db_file(settings)
    target = Path(args.path).expanduser() if args.path else default_db_path(os.environ)
    report = await asyncio.to_thread(backup.move, source, target)
    backup_log.moved(source, report.target)
    say(f"moved {report.source} to {report.target} ({_rows(report.transcript_rows)}); "
          + ("it is the default place now" if not args.path
             else f"set STRATA_DB={report.target} to use it"))
    return 0


def register(sub: Any) -> None:
    db = subgroup(sub, "db", "database maintenance")
    bk = db.add_parser("backup", help="a consistent, private (0600) copy of the database (also "
                                      "while it runs)")
    bk.add_argument("path", help="the file to write (an existing one only with --force or a yes)")
    bk.add_argument("--force", action="store_true", help="replace an existing file unasked")
    bk.set_defaults(run=cmd_db_backup)
    rs = db.add_parser("restore", help="replace the database with a backup that passes the "
                                       "checks (the replaced one is kept)")
    rs.add_argument("path", help="the backup file")
    rs.add_argument("--yes", "--force", dest="yes", action="store_true", help="do not ask")
    rs.set_defaults(run=cmd_db_restore)
    ck = db.add_parser("check", help="integrity checks: SQLite's, foreign keys, FTS5 indexes "
                                     "(reads only)")
    ck.add_argument("path", nargs="?", help="another database file (default: the configured one)")
    ck.set_defaults(run=cmd_db_check)
    mv = db.add_parser("move", help="move the database (and its WAL) to a new file, never over "
                                    "another")
    mv.add_argument("path", nargs="?", help="where to (default: the standard place, "
                                            "$XDG_DATA_HOME/strata/strata.db)")
    mv.set_defaults(run=cmd_db_move)
