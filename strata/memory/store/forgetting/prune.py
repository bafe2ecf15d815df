"""Transcript pruning (docs/lifecycle.md §4): raw rows at or below a channel's watermark that no
live leaf episode cites are deleted, together with their turn's tool rows; there is no age cutoff.
Roll-up parents cite no rows (strata.memory.lifecycle.rollup), so once a leaf is rolled up
(tombstoned)
its rows go on the next pass; the parent's summary, the continuity summary and the facts keep the
meaning, and the parent's span and channel keep the provenance.

Kept: rows above the watermark, rows cited by a live (not tombstoned) leaf, compaction rows,
tool rows of a turn that still has a message row, and — on channels that produce episodes —
rows the episode cutter has not reached yet (its cursor), so nothing is pruned before it had
its chance to become memory. FTS rows and `transcript_vec` vectors go with the transcript rows.

Two ways to delete, chosen by `prune_owner` from how much goes (measured on the 1M-row bench,
bench/lifecycle_bench.py: per-row FTS deletes cost ~25 µs a row, a rebuild ~7 µs per row
left, both measured while the transcript had two FTS indexes, before migration 0022 dropped
the unread `transcript_owner_fts`; the vec0 deletes are fast only when done apart from the rest):
- batches (the usual case): plain deletes of 20,000 rows per transaction; the triggers of
  migrations 0001/0003 remove the FTS entries and vectors row by row, and the single writer
  is never held for long;
- bulk (a large share of the transcript at once, e.g. the first pass over an old store): one
  transaction that deletes the vectors explicitly, drops the per-row FTS/vector delete
  triggers, deletes the rows, recreates the triggers from their stored SQL and rebuilds the
  transcript FTS index from what is left. All or nothing: a failure rolls back the
  deletes and the trigger changes together. SQLite only (`Dialect.bulk_prune`): PostgreSQL
  has no per-row triggers to skip (expression indexes, vectors leave by a foreign key), so
  it always deletes in batches.
Imports `bot` leaf modules and `memory` only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from strata.memory.engines.db import Database, placeholders
from strata.memory.engines.dialect import vector_deletes
from strata.memory.rules.profiles import profile_for
from strata.memory.store.transcript import watermark

log = logging.getLogger(__name__)

BATCH = 20_000
# Bulk deletion when at least this many rows go and they are at least BULK_SHARE of the rows
# left (the rebuild then costs less than the per-row FTS deletes).
BULK_MIN_ROWS = 50_000
BULK_SHARE = 0.25
# Page cache of the writer during a bulk deletion, in KiB (SQLite's default is 2 MiB, which
# makes the interleaved index, FTS and vec0 page reads thrash).
BULK_CACHE_KIB = 131_072
# The per-row triggers a bulk deletion replaces with its own work, and the FTS index it rebuilds.
_FOLLOW_TRIGGERS = ("transcript_fts_delete", "transcript_vec_follow_row")
_TRANSCRIPT_FTS = "transcript_fts"

# A row is cited when a live leaf's citations include it (a parent's never count: parents
# written before migration 0008 had their inherited citations removed by it).
_UNCITED = (
    "NOT EXISTS (SELECT 1 FROM episode_rows er JOIN episodes e ON e.id = er.episode_id"
    " WHERE er.row_id = t.id AND e.tombstoned_at IS NULL AND e.level = 0)"
)


@dataclass(frozen=True, slots=True)
class PruneResult:
    """What pruning one channel did."""

    channel_id: int
    limit: int  # rows with id <= limit were candidates (0: nothing to prune yet)
    messages_deleted: int = 0
    tool_rows_deleted: int = 0
    vectors_deleted: int = 0

    @property
    def deleted(self) -> int:
        return self.messages_deleted + self.tool_rows_deleted


async def prune_limit(db: Database, channel_id: int, source: str) -> int:
    """The highest row id that may be pruned in the channel (0 when none may)."""
    mark = await watermark(db, channel_id)
    if mark is None:
        return 0
    limit = mark[1]
    if profile_for(source).episodes:
        cursor = await db.fetchval(
            "SELECT last_row_id FROM episode_cursors WHERE channel_id = ?", (channel_id,)
        )
        limit = min(limit, int(cursor or 0))
    return limit


async def count_vectors(conn: Any, table: str, key: str, ids: Sequence[int]) -> int:
    """How many of `ids` have a vector in the vec0 `table` (the vectors themselves leave with
    their rows, by the triggers of migration 0003)."""
    marks = placeholders(ids)
    cur = await conn.execute(f"SELECT count(*) FROM {table} WHERE {key} IN ({marks})", list(ids))
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def _delete(db: Database, ids: list[int]) -> int:
    """Delete transcript rows and their vectors in batches; return the vectors deleted."""
    vectors = 0
    for start in range(0, len(ids), BATCH):
        chunk = ids[start:start + BATCH]
        async with db.write() as conn:
            vectors += await count_vectors(conn, "transcript_vec", "row_id", chunk)
            marks = placeholders(chunk)
            await conn.execute(f"DELETE FROM transcript WHERE id IN ({marks})", chunk)
    return vectors


@dataclass(frozen=True, slots=True)
class _Plan:
    channel_id: int
    limit: int
    messages: tuple[int, ...] = ()
    tools: tuple[int, ...] = ()

    @property
    def ids(self) -> list[int]:
        return sorted([*self.messages, *self.tools])


async def _plan(db: Database, channel_id: int, source: str) -> _Plan:
    """The rows of one channel that pruning deletes (nothing is deleted yet)."""
    limit = await prune_limit(db, channel_id, source)
    if limit <= 0:
        return _Plan(channel_id, 0)
    messages = tuple(
        r[0]
        for r in await db.fetchall(
            "SELECT t.id FROM transcript t WHERE t.channel_id = ? AND t.id <= ?"
            f" AND t.kind = 'message' AND {_UNCITED}",
            (channel_id, limit),
        )
    )
    # A turn's tool rows go when none of its message rows is left.
    tools = tuple(
        r[0]
        for r in await db.fetchall(
            "SELECT t.id FROM transcript t WHERE t.channel_id = ? AND t.id <= ?"
            f" AND t.kind IN ('tool_call', 'tool_result') AND {_UNCITED}"
            " AND NOT EXISTS (SELECT 1 FROM transcript m WHERE m.turn_id = t.turn_id"
            " AND m.kind = 'message' AND (m.id > ? OR m.channel_id != t.channel_id OR NOT "
            + _UNCITED.replace("t.id", "m.id") + "))",
            (channel_id, limit, limit),
        )
    )
    return _Plan(channel_id, limit, messages, tools)


def _result(plan: _Plan, vectors: int) -> PruneResult:
    if plan.messages or plan.tools:
        log.info("channel %s: pruned %d rows (%d tool rows)", plan.channel_id,
                 len(plan.messages) + len(plan.tools), len(plan.tools))
    return PruneResult(plan.channel_id, plan.limit, len(plan.messages), len(plan.tools), vectors)


async def _delete_bulk(db: Database, ids: list[int]) -> set[int]:
    """Delete `ids` in one transaction (see the module docstring); return the row ids whose
    vectors were deleted."""
    async with db.write() as conn:
        cur = await conn.execute("PRAGMA cache_size")
        row = await cur.fetchone()
        cache = int(row[0]) if row else -2000
        await conn.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
        try:
            marks = placeholders(_FOLLOW_TRIGGERS)
            cur = await conn.execute(
                f"SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})",
                _FOLLOW_TRIGGERS)
            triggers = list(await cur.fetchall())
            if len(triggers) != len(_FOLLOW_TRIGGERS):
                raise RuntimeError(f"schema lacks the transcript triggers {_FOLLOW_TRIGGERS}")
            vectors: set[int] = set()
            # Vectors first, apart from the rest: vec0 deletes are ~5x slower interleaved.
            for start in range(0, len(ids), BATCH):
                chunk = ids[start:start + BATCH]
                # By key (`Dialect.vectors`): `row_id IN (…)` scans every owner's keys,
                # inside the write transaction that holds up everyone's turns meanwhile.
                cur = await conn.execute(
                    *db.dialect.vectors_query("transcript_vec", "row_id", chunk))
                found = [r[0] for r in await cur.fetchall()]
                await conn.executemany(*vector_deletes("transcript_vec", "row_id", found))
                vectors.update(found)
            for name, _ in triggers:
                await conn.execute(f"DROP TRIGGER {name}")
            for start in range(0, len(ids), BATCH):
                chunk = ids[start:start + BATCH]
                await conn.execute(
                    f"DELETE FROM transcript WHERE id IN ({placeholders(chunk)})", chunk)
            for _, sql in triggers:
                await conn.execute(sql)
            await conn.execute(
                f"INSERT INTO {_TRANSCRIPT_FTS} ({_TRANSCRIPT_FTS}) VALUES ('rebuild')")
        finally:
            await conn.execute(f"PRAGMA cache_size = {cache}")
    log.info("pruned %d rows in bulk (%d vectors), transcript FTS rebuilt", len(ids),
             len(vectors))
    return vectors


def use_bulk(deleted: int, left: int, min_rows: int = BULK_MIN_ROWS) -> bool:
    """Whether deleting `deleted` rows, leaving `left`, is cheaper in bulk."""
    return deleted >= min_rows and deleted >= BULK_SHARE * left


async def prune_channel(db: Database, channel_id: int, source: str) -> PruneResult:
    """Prune one channel in batches; see the module docstring for what is kept."""
    plan = await _plan(db, channel_id, source)
    ids = plan.ids
    return _result(plan, await _delete(db, ids) if ids else 0)


async def prune_owner(
    db: Database, owner_id: int | None = None, *, bulk_min_rows: int = BULK_MIN_ROWS
) -> list[PruneResult]:
    """Prune every channel of `owner_id` (every channel when None), in bulk when much goes."""
    sql = "SELECT id, source FROM channels"
    params: tuple[int, ...] = ()
    if owner_id is not None:
        sql += " WHERE owner_id = ?"
        params = (owner_id,)
    channels = await db.fetchall(sql + " ORDER BY id", params)
    plans = [await _plan(db, c[0], c[1]) for c in channels]
    ids = sorted(i for p in plans for i in p.ids)
    total = int(await db.fetchval("SELECT count(*) FROM transcript"))
    if not (db.dialect.bulk_prune and use_bulk(len(ids), total - len(ids), bulk_min_rows)):
        return [_result(p, await _delete(db, p.ids) if p.ids else 0) for p in plans]
    vectors = await _delete_bulk(db, ids)
    return [_result(p, sum(1 for i in p.ids if i in vectors)) for p in plans]
