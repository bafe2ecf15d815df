"""Upgrade to the open job runs' own index (SQLite migration 0015, PostgreSQL 0006): a run a
stopped process left open before the upgrade is still found and closed afterwards, finished
runs are left as they were, and the tick's lookup uses the index instead of a table scan."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 15, "postgres": 6}  # the migration under test, per engine


async def test_upgrade_still_closes_the_runs_a_stopped_process_left_open(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        runs = JobRunRepo(old)
        done = await runs.start("digest", ada.id, T0, "gone/1")
        await runs.finish(done, now=T0, status="ok")
        left_open = await runs.start("dmn", ada.id, T0, "gone/1")  # then the process died
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        runs = JobRunRepo(db)
        assert await runs.interrupt_stale(T0 + timedelta(minutes=5), "new/2") == 1
        status = {r.id: r.status for r in await runs.runs(person_id=ada.id)}
        assert status == {done: "ok", left_open: "interrupted"}
        if engine == "sqlite":  # the plan; PostgreSQL's planner picks by table statistics
            plan = await db.fetchall(
                "EXPLAIN QUERY PLAN SELECT id FROM job_runs WHERE status = 'running'"
                " AND runner = ?", ("gone/1",))
            assert any("job_runs_open" in str(tuple(r)) for r in plan)
    finally:
        await db.close()
