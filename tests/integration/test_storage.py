"""The store: migrations, dimension guard, SQLite's pragmas, and hostile text stored exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from strata.core.clock import ManualClock
from strata.core.errors import DimensionMismatchError, StorageError
from strata.core.types import ChannelKind, NewRow, Role
from strata.memory.engines.db import Database
from strata.memory.engines.migrations import available
from strata.memory.engines.sqlite_open import MMAP_BYTES
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.transcript import TranscriptRepo
from tests.schema_dump import dump_schema

FIXTURES = Path(__file__).parents[1] / "fixtures"

HOSTILE = [
    "",
    "   \t  ",
    "x" * 1_000_000,
    "nul\x00byte",
    "\U0010ffff0 escape-like \U0010ffff\U0010ffff then \x00\x00",
    'quotes " and * and : and ( and AND and NEAR and - and well-known and c++ and foo(bar)',
    "'; DROP TABLE transcript; --",
    "Robert'); DELETE FROM persons WHERE ('1'='1",
    "emoji 🧗‍♀️ and RTL עברית and 中文",
]


@pytest.mark.sqlite_only("diffs SQLite's schema with tests/fixtures/schema.sql; PostgreSQL's"
                         " is compared with SQLite's in test_pg_engine.py")
async def test_migrated_schema_matches_checked_in_copy(tmp_path: Path) -> None:
    expected = (FIXTURES / "schema.sql").read_text()
    actual = await dump_schema(tmp_path / "s.db")
    assert actual == expected, (
        "schema changed: add a migration and refresh with "
        "`python -m tests.schema_dump > tests/fixtures/schema.sql`")


async def test_migrations_recorded_once(db: Database, db_target: Path | str) -> None:
    rows = await db.fetchall("SELECT id, name FROM migrations ORDER BY id")
    folder = ("strata.memory.engines.migrations" if db.engine == "sqlite"
              else "strata.memory.engines.pg.migrations")
    assert [(r[0], r[1]) for r in rows] == [(n, name) for n, name, _ in available(folder)]
    await db.close()
    again = await Database.open(db_target, db.dim)  # re-open: nothing re-applied
    assert await again.fetchval("SELECT count(*) FROM migrations") == len(rows)
    await again.close()


async def test_other_dimension_is_a_clear_error(db: Database, db_target: Path | str) -> None:
    with pytest.raises(DimensionMismatchError, match=f"dimension {db.dim}"):
        await Database.open(db_target, db.dim + 1)


@pytest.mark.sqlite_only("a SQLite file's folder; an unreachable server: test_pg_engine.py")
async def test_missing_folders_are_made_private_and_an_impossible_one_is_a_clear_error(
        tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "no" / "such" / "x.db", 8)
    await db.close()
    assert [(tmp_path / p).stat().st_mode & 0o777 for p in ("no", "no/such")] == [0o700] * 2
    (tmp_path / "afile").write_text("not a folder\n")
    with pytest.raises(StorageError, match="cannot open database"):
        await Database.open(tmp_path / "afile" / "x.db", 8)
    assert (tmp_path / "afile").read_text() == "not a folder\n"


@pytest.mark.sqlite_only("SQLite's pragmas and the sqlite-vec extension")
async def test_pragmas_and_extensions(db: Database) -> None:
    assert (await db.fetchval("PRAGMA journal_mode")).lower() == "wal"
    assert await db.fetchval("PRAGMA foreign_keys") == 1
    assert await db.fetchval("SELECT vec_version()")
    assert await db.fetchval("PRAGMA secure_delete") == 1
    # vec0 chunks are read through the memory map (migration 0009's small chunks).
    assert await db.fetchval("PRAGMA mmap_size") == MMAP_BYTES


async def _channel(db: Database, clock: ManualClock) -> tuple[int, int]:
    person = await PersonRepo(db).get_or_create("console:alice", "alice", clock.now())
    channel = await ChannelRepo(db).get_or_create(
        platform="console", room_ref="alice/default", owner_id=person.id,
        kind=ChannelKind.PRIVATE, source="user", now=clock.now())
    return person.id, channel.id


@pytest.mark.parametrize("text", HOSTILE, ids=lambda t: repr(t[:20]))
async def test_hostile_text_is_stored_exactly(db: Database, clock: ManualClock, text: str) -> None:
    person_id, channel_id = await _channel(db, clock)
    repo = TranscriptRepo(db)
    [row_id] = await repo.append([NewRow(channel_id=channel_id, person_id=person_id,
                                         ts=clock.now(), source="user", role=Role.USER,
                                         content=text, turn_id="t1")])
    stored = await repo.get(row_id)
    assert stored is not None and stored.content == text
    # Searching with the same hostile text never raises.
    await repo.search(person_id, text[:10_000])
    if db.engine == "sqlite":
        assert await db.fetchval("PRAGMA integrity_check") == "ok"


async def test_lone_surrogate_becomes_replacement_char(db: Database, clock: ManualClock) -> None:
    person_id, channel_id = await _channel(db, clock)
    repo = TranscriptRepo(db)
    [row_id] = await repo.append([NewRow(channel_id=channel_id, person_id=person_id,
                                         ts=clock.now(), source="user", role=Role.USER,
                                         content="bad \ud800 half", turn_id="t1")])
    stored = await repo.get(row_id)
    assert stored is not None and stored.content == "bad \ufffd half"


async def test_fts_finds_words_and_respects_owner(db: Database, clock: ManualClock) -> None:
    person_id, channel_id = await _channel(db, clock)
    bob = await PersonRepo(db).get_or_create("console:bob", "bob", clock.now())
    bob_channel = await ChannelRepo(db).get_or_create(
        platform="console", room_ref="bob/default", owner_id=bob.id,
        kind=ChannelKind.PRIVATE, source="user", now=clock.now())
    repo = TranscriptRepo(db)
    await repo.append([
        NewRow(channel_id=channel_id, person_id=person_id, ts=clock.now(), source="user",
               role=Role.USER, content="My cat is called Miso", turn_id="a"),
        NewRow(channel_id=bob_channel.id, person_id=bob.id, ts=clock.now(), source="user",
               role=Role.USER, content="My cat is called Pixel", turn_id="b"),
    ])
    found = await repo.search(person_id, "what's my cat's name?")
    assert [r.content for r, _ in found] == ["My cat is called Miso"]
