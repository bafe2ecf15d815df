"""Upgrade that drops the second transcript keyword index (SQLite migration 0022): the
owner-scoped `transcript_owner_fts` of migration 0003, which no query read, goes with its
triggers; a database upgraded from before it ends with the very schema a new one has, its rows
are kept and keyword search over them (through `transcript_fts`) works as before, also for rows
written and deleted afterwards. PostgreSQL never had such an index (one GIN expression index on
`transcript`), so there is nothing to upgrade there."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from strata.core.clock import ManualClock
from strata.core.types import NewRow, Role
from strata.memory.engines.db import Database
from strata.memory.store.transcript import TranscriptRepo
from tests.memory_helpers import before_migration, channel, person
from tests.schema_dump import SCHEMA_DIM, dump_schema

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
OURS = 22


def said(channel_id: int, person_id: int, text: str, turn_id: str) -> NewRow:
    return NewRow(channel_id, person_id, T0, "user", Role.USER, text, turn_id)


@pytest.mark.sqlite_only("drops a SQLite FTS5 table; PostgreSQL never had one")
async def test_upgrade_drops_the_owner_index_and_ends_as_a_new_database(
        tmp_path: Path, clock: ManualClock) -> None:
    target = tmp_path / "old.db"  # at the dimension `dump_schema` opens a database with
    old = await Database.open(target, SCHEMA_DIM, upto=before_migration("sqlite", OURS))
    try:
        ann = await person(old, "ann", clock)
        chat = await channel(old, ann, "dm", clock)
        kept, gone = await TranscriptRepo(old).append(
            [said(chat.id, ann.id, "the beagle barked", "t1"),
             said(chat.id, ann.id, "a pharmacist called", "t1")])
        assert await old.fetchval(
            "SELECT count(*) FROM transcript_owner_fts WHERE transcript_owner_fts MATCH 'beagl'"
        ) == 1  # the index this migration drops was written, as every append wrote it
    finally:
        await old.close()

    db = await Database.open(target, SCHEMA_DIM)
    try:
        assert OURS in {n for n, _ in await db.applied_migrations()}
        assert await db.fetchall(
            "SELECT name FROM sqlite_master WHERE name LIKE 'transcript_owner_fts%'") == []
        repo = TranscriptRepo(db)
        assert [r.id for r, _ in await repo.search(ann.id, "beagle")] == [kept]
        await db.execute_write("DELETE FROM transcript WHERE id = ?", (gone,))
        assert await repo.search(ann.id, "pharmacist") == []
        (new,) = await repo.append([said(chat.id, ann.id, "the pharmacist's beagle", "t2")])
        assert [r.id for r, _ in await repo.search(ann.id, "pharmacist")] == [new]
        async with db.write() as conn:  # the index kept agrees with the rows, row for row
            await conn.execute(
                "INSERT INTO transcript_fts (transcript_fts) VALUES ('integrity-check')")
    finally:
        await db.close()
    assert await dump_schema(target) == await dump_schema(tmp_path / "new.db")
