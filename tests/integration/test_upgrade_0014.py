"""Upgrade to job runs indexed person first (SQLite migration 0014, PostgreSQL 0005): the run
records of the schema before are kept, and afterwards read and pruned per person as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 14, "postgres": 5}  # the migration under test, per engine


async def test_upgrade_keeps_the_runs_and_prunes_them_per_person(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        runs = JobRunRepo(old)
        ids = []
        for status in ("ok", "error", "ok", "error"):
            ids.append(await runs.start("digest", ada.id, T0))
            await runs.finish(ids[-1], now=T0, status=status)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        runs = JobRunRepo(db)
        assert [r.id for r in await runs.runs(person_id=ada.id)] == ids[::-1]
        assert await runs.prune(ada.id, T0 + timedelta(days=1)) == 2  # newest run, newest ok
        assert [r.id for r in await runs.runs(person_id=ada.id)] == [ids[3], ids[2]]
        assert await runs.last_ok_started("digest", ada.id) == T0
    finally:
        await db.close()
