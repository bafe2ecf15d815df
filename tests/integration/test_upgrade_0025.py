"""Upgrade to the grounding refusal counts (SQLite migration 0025, PostgreSQL 0015): a person
from before is kept, their refusals are then counted per layer and reason, and deleting the
person (as /wipe does) takes the counts along."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.memory.domain import grounding as g
from strata.memory.domain.persons import PersonRepo
from strata.memory.domain.refusals import RefusalRepo
from strata.memory.engines.db import Database
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 25, "postgres": 15}  # the migration under test, per engine


async def test_upgrade_adds_refusal_counts_per_person(empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        repo = RefusalRepo(db)
        echo = g.Refusal(g.PATTERNS, g.ECHO, "short statement about the person")
        await repo.record(ada.id, [echo, echo, g.Refusal(g.PORTRAIT, g.NAME, "Alice")], T0)
        later = T0 + timedelta(hours=1)
        await repo.record(ada.id, [echo], later)
        counts = {(c.layer, c.reason): (c.count, c.last_at) for c in await repo.for_owner(ada.id)}
        assert counts == {(g.PATTERNS, g.ECHO): (3, later), (g.PORTRAIT, g.NAME): (1, T0)}
        await db.execute_write("DELETE FROM persons WHERE id = ?", (ada.id,))
        assert await db.fetchval("SELECT count(*) FROM grounding_refusals") == 0
    finally:
        await db.close()
