"""Upgrade to the job's new name (SQLite migration 0019, PostgreSQL 0010): the `capabilities`
job is `connector_sync`, and its run history and input cursor follow it, so the first sync
after the upgrade neither repeats work nor loses the person's record."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 19, "postgres": 10}  # the migration under test, per engine


async def test_upgrade_renames_the_job_in_runs_and_cursors(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        runs = JobRunRepo(old)
        await runs.start("capabilities", ada.id, T0)
        await runs.checked("capabilities", ada.id, T0, "ics:abc")
        await runs.start("extract", ada.id, T0)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        runs = JobRunRepo(db)
        assert await runs.last("capabilities", ada.id) is None
        assert await runs.cursor("capabilities", ada.id) is None
        moved = await runs.last("connector_sync", ada.id)
        assert moved is not None and moved.started_at == T0
        cursor = await runs.cursor("connector_sync", ada.id)
        assert cursor is not None and cursor.last_check == "ics:abc"
        assert await runs.last("extract", ada.id) is not None  # other jobs untouched
    finally:
        await db.close()
