"""Upgrade to the research switch (SQLite migration 0016, PostgreSQL 0007): a person known
before it researches as before, and the switch holds once set."""

from __future__ import annotations

from datetime import UTC, datetime

from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 16, "postgres": 7}  # the migration under test, per engine


async def test_a_person_from_before_the_switch_keeps_research_on_and_can_turn_it_off(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        assert ada.research  # no column yet: research was on for everyone
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        persons = PersonRepo(db)
        again = await persons.get(ada.id)
        assert again is not None and again.research
        await persons.set_research(ada.id, False)
        off = await persons.get(ada.id)
        assert off is not None and not off.research
        bob = await persons.get_or_create("console:bob", "Bob", T0)
        assert bob.research
    finally:
        await db.close()
