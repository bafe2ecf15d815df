"""`strata db copy SRC DST`: move a whole store between databases
(`strata.memory.engines.transfer`).

SRC and DST are each a SQLite file path or a `postgresql://` URL. The source must exist and
be migrated; it is only read (never migrated here: `strata db migrate` does that). The
destination is created (a SQLite file) or migrated (an existing PostgreSQL database) at the
configured embedding dimension, and must hold no rows unless `--replace`. Progress goes to
stderr; the per-table counts to stdout, and the exit code is 1 when any count differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from strata.app.cli.core import subgroup
from strata.bot.visible import say
from strata.core.config import Settings
from strata.core.errors import StorageError
from strata.memory.engines import pg
from strata.memory.engines.transfer import CopyReport, copy_database


class _Progress:
    """One line on stderr per table, and one every few seconds on a long table."""

    def __init__(self, every: float = 5.0) -> None:
        self.every = every
        self._last = time.monotonic()

    def __call__(self, table: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - self._last >= self.every:
            self._last = now
            say(f"  {table}: {done:,} / {total:,} rows", file=sys.stderr, flush=True)


def _same(src: str, dst: str) -> bool:
    if pg.is_url(src) or pg.is_url(dst):
        return src == dst
    return Path(src).expanduser().resolve() == Path(dst).expanduser().resolve()


def print_report(report: CopyReport) -> None:
    width = max(len(c.table) for c in report.counts) if report.counts else 5
    say(f"{'table':<{width}}  {'source':>10}  {'copied':>10}")
    for c in report.counts:
        mark = "" if c.ok else "  MISMATCH"
        say(f"{c.table:<{width}}  {c.source:>10,}  {c.destination:>10,}{mark}")
    say(f"from {report.source} into {report.destination}")
    if report.ok:
        say(f"copied {len(report.counts)} tables, {report.rows:,} rows: every count matches")
    else:
        bad = ", ".join(c.table for c in report.counts if not c.ok)
        say(f"COUNTS DIFFER in {bad}: do not switch to the copy", file=sys.stderr)


async def cmd_db_copy(args: argparse.Namespace, settings: Settings) -> int:
    src_target, dst_target = str(args.src), str(args.dst)
    if _same(src_target, dst_target):
        raise StorageError("the source and the destination are the same database")
    if not pg.is_url(src_target) and not Path(src_target).expanduser().is_file():
        raise StorageError(f"no database file at {src_target}")
    report = await copy_database(src_target, dst_target, settings.embed.dim,
                                 replace=args.replace, progress=_Progress())
    print_report(report)
    return 0 if report.ok else 1


def register(sub: Any) -> None:
    db = subgroup(sub, "db", "database maintenance")
    cp = db.add_parser("copy", help="copy a whole store into another database (SQLite or "
                                    "PostgreSQL), ids kept, counts checked")
    cp.add_argument("src", help="the source: a SQLite file or a postgresql:// URL")
    cp.add_argument("dst", help="the destination: a SQLite file (created) or a postgresql:// "
                                "URL (an existing database, migrated here)")
    cp.add_argument("--replace", action="store_true",
                    help="delete the destination's rows first (refused otherwise)")
    cp.set_defaults(run=cmd_db_copy)
