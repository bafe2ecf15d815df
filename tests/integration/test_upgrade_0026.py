"""Upgrade to one fenced lease system (SQLite migration 0026, PostgreSQL 0016): a lease taken
before keeps its holder and gets the token 'legacy', which its holder's next take keeps; a job
claim moves into the leases (`job:<owner id>`) with its runner, fence and its runner's lease,
so the claim stays that runner's hold; the model calls per person are counted, and go with a
deleted person."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.bot.limits import CallLimiter
from strata.core.clock import ManualClock, to_iso
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.coordination.leases import Leases
from strata.memory.coordination.model_calls import ModelCalls
from strata.memory.engines.db import Database
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration, person

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 26, "postgres": 16}  # the migration under test, per engine
LEASE = timedelta(seconds=120)
TTL = timedelta(seconds=30)


async def test_leases_and_job_claims_from_before_the_upgrade_are_kept(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    clock = ManualClock(T0)
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await person(old, "ada", clock)
        await old.execute_write(
            "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)",
            ("turn:7", "host:1:aaaa", to_iso(T0 + TTL)))
        await old.execute_write(
            "INSERT INTO runners (id, name, started_at, lease_until) VALUES (?, ?, ?, ?)",
            ("host:1:aaaa", "host:1", to_iso(T0), to_iso(T0 + LEASE)))
        await old.execute_write(
            "INSERT INTO job_leases (owner_id, runner, claimed_at, fence) VALUES (?, ?, ?, ?)",
            (ada.id, "host:1:aaaa", to_iso(T0), "f00d"))
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        leases = Leases(db)
        kept = await leases.take("turn:7", "host:1:aaaa", T0, TTL)
        assert kept is not None and kept.fence == "legacy"  # the same hold
        assert await leases.take("turn:7", "host:2:bbbb", T0, TTL) is None
        runners = RunnerLeases(db)
        assert await runners.holder(ada.id, T0 + LEASE) == "host:1:aaaa"
        assert await runners.holders(T0) == {ada.id: "host:1:aaaa"}
        assert await runners.claim(ada.id, "host:1:aaaa", T0) == "f00d"
        assert await runners.holder(ada.id, T0 + LEASE + timedelta(seconds=1)) is None

        limiter = CallLimiter(ModelCalls(db), 1, clock)
        assert await limiter.acquire(ada.id) is None
        assert await limiter.acquire(ada.id) == 60.0
        await db.execute_write("DELETE FROM persons WHERE id = ?", (ada.id,))
        assert await db.fetchval("SELECT count(*) FROM model_calls") == 0
    finally:
        await db.close()
