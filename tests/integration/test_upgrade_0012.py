"""Upgrade to the runner claims (SQLite migration 0012, PostgreSQL 0002): a database made by
the schema before, with a claimed reminder and a run left `running` by the single process of
before, keeps its rows, and the first runner after the upgrade recovers both (they name no
runner, so no live process can hold them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.core.types import ChannelKind
from strata.memory.coordination.claims import RunnerLeases
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.services.reminders import ReminderRepo
from tests.conftest import TEST_DIM

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
BEFORE = {"sqlite": 11, "postgres": 1}  # the last migration before the runner claims


async def test_upgrade_keeps_rows_and_the_first_runner_recovers_the_old_claims(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=BEFORE[engine])
    try:
        alice = await PersonRepo(old).get_or_create("console:al", "al", T0)
        chat = await ChannelRepo(old).get_or_create(
            platform="console", room_ref="al", owner_id=alice.id, kind=ChannelKind.PRIVATE,
            source="user", now=T0, name="al")
        await old.execute_write(
            "INSERT INTO reminders (owner_id, channel_id, kind, text, due_at, timezone, state,"
            " claimed_at, sending_at, created_at) VALUES (?, ?, 'reminder', 'tea', ?, 'UTC',"
            " 'claimed', ?, ?, ?)", (alice.id, chat.id, T0.isoformat(), T0.isoformat(),
                                     T0.isoformat(), T0.isoformat()))
        await old.execute_write(
            "INSERT INTO job_runs (job, person_id, started_at) VALUES ('dmn', ?, ?)",
            (alice.id, T0.isoformat()))
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        [reminder] = await ReminderRepo(db).for_owner(alice.id)
        assert (reminder.text, reminder.state) == ("tea", "claimed")
        [run] = await JobRunRepo(db).runs(person_id=alice.id)
        assert (run.job, run.status) == ("dmn", "running")
        assert await db.fetchval("SELECT runner FROM job_runs") is None
        assert await db.fetchval("SELECT claimed_by FROM reminders") is None
        # The first runner after the upgrade: what the old process left is recovered.
        now = T0 + timedelta(hours=1)
        await RunnerLeases(db).register("host:1/a", "host:1", now, timedelta(minutes=2))
        assert await JobRunRepo(db).interrupt_stale(now, "host:1/a") == 1
        assert await ReminderRepo(db).release_stale_claims(now, "host:1/a") == 1
        [reminder] = await ReminderRepo(db).for_owner(alice.id)
        assert (reminder.state, reminder.unconfirmed) == ("pending", 1)
        assert await RunnerLeases(db).claim(alice.id, "host:1/a", now)
    finally:
        await db.close()
