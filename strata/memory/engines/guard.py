"""Write guards: a condition that every write of one task must still meet when it commits.

A task that may write only while something holds (a cognition runner working on a person it
claimed, `strata.memory.coordination.claims`) sets a `WriteGuard` with `db.guarded(guard)`.
From then until the block ends, every write transaction that task opens (`write()`,
`execute_write`, `execute_atomic`, `write_statement`, `executemany_write`) first runs the
guard's query inside the same transaction and is refused with `WriteRefusedError`, changing
nothing, when it finds no row. The check and the writes commit together: SQLite's writer
holds the whole database from `BEGIN IMMEDIATE`, and PostgreSQL locks the rows the guard found
(`FOR SHARE`) until the commit, so a competing update of them (another runner's claim) waits
for it and then sees the writes.

Guards nest: a job's run holds its person's claim and, inside it, a background turn holds its
channel's lease; each write is checked against every guard the task has set. Only the task
that set a guard is checked, never the tasks it starts: a shared background
task (the row indexer's pass, after-turn work) must not inherit one runner's condition, and
the guard ends when its block does. Imports `strata.core.errors` only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from strata.core.errors import WriteRefusedError


@dataclass(frozen=True, slots=True)
class WriteGuard:
    sql: str  # a query that finds a row while the task's writes may go ahead
    params: Sequence[Any]
    refused: str  # what `WriteRefusedError` says when it finds none


class GuardedWrites:
    """The guards part of a `Database` (both engines): which task writes under which guard."""

    _guards: dict[asyncio.Task[Any], tuple[WriteGuard, ...]] | None = None
    # Appended to the guard's query inside the transaction (PostgreSQL: `FOR SHARE`).
    guard_lock = ""

    @contextmanager
    def guarded(self, guard: WriteGuard) -> Iterator[None]:
        """Check `guard` (besides any the current task set before) in every write
        transaction the current task opens in the block."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a write guard needs a running task")
        if self._guards is None:
            self._guards = {}
        before = self._guards.get(task, ())
        self._guards[task] = (*before, guard)
        try:
            yield
        finally:
            if before:
                self._guards[task] = before
            else:
                del self._guards[task]

    def guard(self) -> WriteGuard | None:
        """The current task's innermost guard, if it set one."""
        guards = self._task_guards()
        return guards[-1] if guards else None

    def _task_guards(self) -> tuple[WriteGuard, ...]:
        if not self._guards:
            return ()
        task = asyncio.current_task()
        return () if task is None else self._guards.get(task, ())

    async def check_guard(self, conn: Any) -> None:
        """Inside a write transaction on `conn`: refuse it unless each of the current task's
        guards (if any) still finds its row."""
        for guard in self._task_guards():
            cur = await conn.execute(guard.sql + self.guard_lock, guard.params)
            row = await cur.fetchone()
            await cur.close()
            if row is None:
                raise WriteRefusedError(guard.refused)
