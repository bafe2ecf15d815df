"""Upgrade to the connectors' tables (SQLite migration 0018, PostgreSQL 0009): a person and
their calendar events from before are kept, a connector and mail headers can then be stored
for them, and deleting the person (as /wipe does) takes both along."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from strata.memory.store.services.calendar import CalendarEvent, CalendarRepo
from strata.memory.store.services.connectors import ConnectorStore, MailHeader, MailHeaders
from tests.conftest import TEST_DIM
from tests.memory_helpers import before_migration

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
OURS = {"sqlite": 18, "postgres": 9}  # the migration under test, per engine


async def test_upgrade_adds_the_connector_tables_and_keeps_what_was_there(
        empty_target: tuple[str, str]) -> None:
    engine, target = empty_target
    old = await Database.open(target, TEST_DIM, upto=before_migration(engine, OURS[engine]))
    try:
        ada = await PersonRepo(old).get_or_create("console:ada", "Ada", T0)
        await CalendarRepo(old).replace(
            ada.id, "ics", [CalendarEvent("d1", "Dentist", T0 + timedelta(hours=5))], T0)
    finally:
        await old.close()

    db = await Database.open(target, TEST_DIM)
    try:
        assert OURS[engine] in {n for n, _ in await db.applied_migrations()}
        assert [e.summary for e in await CalendarRepo(db).upcoming(
            ada.id, T0, T0 + timedelta(days=1))] == ["Dentist"]
        store, mail = ConnectorStore(db), MailHeaders(db)
        await store.connect(ada.id, "mail", "imap.example.org", "sealed", T0)
        await mail.replace(ada.id, [MailHeader("7", "Bo", "Hi", T0)], T0)
        assert [c.label for c in await store.listed(ada.id)] == ["imap.example.org"]
        assert await store.secret(ada.id, "mail") == "sealed"
        await db.execute_write("DELETE FROM persons WHERE id = ?", (ada.id,))
        assert await db.fetchval("SELECT count(*) FROM connectors") == 0
        assert await db.fetchval("SELECT count(*) FROM mail_headers") == 0
    finally:
        await db.close()
