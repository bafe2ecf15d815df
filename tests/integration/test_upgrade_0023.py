"""Upgrade to fenced job claims (SQLite migration 0023, PostgreSQL 0013): a claim made before
the upgrade keeps its runner and gets the token 'legacy', which its runner's next claim keeps
(the same hold, not a takeover); a takeover after the upgrade gets a token of its own, and the old
one is refused from then on."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from strata.core.clock import ManualClock, to_iso
from strata.core.errors import WriteRefusedError
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.engines.db import Database
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration, person

T0 = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 23, "postgres": 13}  # the migration under test, per engine
LEASE = timedelta(seconds=120)


async def test_a_claim_from_before_the_upgrade_stays_its_runners_until_taken_over(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    clock = ManualClock(T0)
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await person(old, "ada", clock)
        await old.execute_write(
            "INSERT INTO runners (id, name, started_at, lease_until) VALUES (?, ?, ?, ?)",
            ("host:1/a", "host:1", to_iso(T0), to_iso(T0 + LEASE)))
        await old.execute_write(  # what the claim of an older version wrote
            "INSERT INTO job_leases (owner_id, runner, claimed_at) VALUES (?, ?, ?)",
            (ada.id, "host:1/a", to_iso(T0)))
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        leases = RunnerLeases(db)
        assert await leases.holder(ada.id, clock.now()) == "host:1/a"
        assert await leases.claim(ada.id, "host:1/a", clock.now()) == "legacy"  # the same hold
        with leases.fenced(ada.id, "host:1/a", "legacy"):
            await leases.heartbeat("host:1/a", "host:1", clock.now(), LEASE)
        clock.advance(seconds=LEASE.total_seconds() + 1)
        await leases.register("host:2/b", "host:2", clock.now(), LEASE)
        token = await leases.claim(ada.id, "host:2/b", clock.now())
        assert token  # a takeover: a token of its own
        with leases.fenced(ada.id, "host:1/a", "legacy"), pytest.raises(WriteRefusedError):
            await leases.heartbeat("host:1/a", "host:1", clock.now(), LEASE)
    finally:
        await db.close()
