"""Upgrade to RRULE recurrence (SQLite migration 0021, PostgreSQL 0012): reminders stored with
the home-made forms ('daily HH:MM', 'weekdays HH:MM', 'weekly:ddd HH:MM') come out as exactly
the RRULE text `parse_recurrence` stores today, fall due at the same local times (across a
daylight-saving change), and a one-off reminder is left alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.core.clock import ManualClock
from strata.core.recurrence import describe_recurrence, next_occurrence, parse_recurrence
from strata.memory.engines.db import Database
from strata.memory.store.services.reminders import ReminderRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration, channel, person

T0 = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)  # a Friday; Paris goes to summer time on the 29th
OURS = {"sqlite": 21, "postgres": 12}  # the migration under test, per engine
# (what an older version stored, what a person typed for it, its next three times in Paris)
OLD = [
    ("daily 08:00", ("day", "8:00"), ["2026-03-28 07:00", "2026-03-29 06:00", "2026-03-30 06:00"]),
    ("weekdays 07:45", ("weekday", "07:45"),
     ["2026-03-30 05:45", "2026-03-31 05:45", "2026-04-01 05:45"]),
    ("weekly:sun 02:30", ("sunday", "2:30"),
     # 02:30 does not exist on the 29th in Paris: the offset before the change (CET) is used.
     ["2026-03-29 01:30", "2026-04-05 00:30", "2026-04-12 00:30"]),
    ("weekly:thu 23:05", ("Thursday", "23:05"),
     ["2026-04-02 21:05", "2026-04-09 21:05", "2026-04-16 21:05"]),
]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


async def test_upgrade_rewrites_old_recurrences_as_rrules_that_fall_due_as_before(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    clock = ManualClock(T0)
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await person(old, "ada", clock)
        chat = await channel(old, ada, "a", clock)
        repo = ReminderRepo(old)
        ids = [(await repo.add(owner_id=ada.id, channel_id=chat.id, kind="prompt", text=stored,
                               due_at=T0 + timedelta(hours=1), timezone="Europe/Paris",
                               now=T0, recurrence=stored)).id for stored, _, _ in OLD]
        once = await repo.add(owner_id=ada.id, channel_id=chat.id, kind="reminder", text="tea",
                              due_at=T0 + timedelta(hours=2), timezone="Europe/Paris", now=T0)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        repo = ReminderRepo(db)
        for rid, (stored, typed, times) in zip(ids, OLD, strict=True):
            got = await repo.get(rid)
            assert got is not None and got.text == stored
            assert got.recurrence == parse_recurrence(*typed)
            assert got.recurrence.startswith("FREQ=")
            seen, after = [], T0
            for _ in times:
                after = next_occurrence(got.recurrence, got.timezone, after)
                seen.append(after)
            assert seen == [utc(t) for t in times], stored
        descriptions = [describe_recurrence(r.recurrence or "")
                        for r in await repo.for_owner(ada.id) if r.recurrence]
        assert descriptions == ["every day at 08:00", "every weekday at 07:45",
                                "every Sun at 02:30", "every Thu at 23:05"]
        plain = await repo.get(once.id)
        assert plain is not None and plain.recurrence is None
    finally:
        await db.close()
