"""Upgrade to prepared recall tables (SQLite migration 0027, PostgreSQL 0017): a store from
before has no counter and no tables; after it, an owner's first search stores their table,
a new index reads it, and deleting a row written before the upgrade moves the owner's counter
and deletes their table."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.core.clock import ManualClock
from strata.memory.engines.db import Database
from strata.memory.recall.index import RowIndex
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration, channel, filler, person, recall_reads, turns

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 27, "postgres": 17}  # the migration under test, per engine


async def test_rows_from_before_the_upgrade_get_a_table_and_a_counter(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    clock = ManualClock(T0)
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await person(old, "ada", clock)
        ch = await channel(old, ada, "ada/u", clock)
        ids = await turns(old, ch, ada, [filler(i) for i in range(3)], clock)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        index = RowIndex(recall_reads(db, db), prepare_rows=1)
        rows, built = await index.table(ada.id)
        await index.drain()
        assert rows.fingerprint[3] == 0 and built.n == 6
        assert await db.fetchval("SELECT row_count FROM recall_tables WHERE owner = ?",
                                 (ada.id,)) == 6
        again, table = await RowIndex(recall_reads(db, db)).table(ada.id)
        assert again.stored == 6 and table.ids.tolist() == ids
        await db.execute_write("DELETE FROM transcript WHERE id = ?", (ids[0],))
        assert await db.fetchval("SELECT epoch FROM recall_epochs WHERE owner = ?",
                                 (ada.id,)) == 1
        assert await db.fetchval("SELECT count(*) FROM recall_tables") == 0
        _, after = await index.table(ada.id)
        assert after.ids.tolist() == ids[1:]
    finally:
        await db.close()
