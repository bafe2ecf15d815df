"""Upgrading a database made by the schema before migration 0008 (roll-up parents inherited
their children's row citations, background channels seeded memory), with data in it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from strata.core.clock import ManualClock, to_iso
from strata.memory.engines.db import Database
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.forgetting.janitor import decay_pass
from tests.conftest import TEST_DIM

pytestmark = pytest.mark.sqlite_only(
    "upgrades a SQLite file made by an older SQLite schema; PostgreSQL's schema starts"
    " at its own migration 0001")


async def old_database(path: Path, clock: ManualClock) -> dict[str, list[int]]:
    """A 0007-schema database: a person's chat rows, three leaves citing them, a topic parent
    that inherited all their citations, a DMN channel stored with memory_seed on."""
    db = await Database.open(path, TEST_DIM, upto=7)
    now = to_iso(clock.now())
    ids: dict[str, list[int]] = {}
    try:
        assert await db.fetchval("SELECT max(id) FROM migrations") == 7
        async with db.write() as conn:
            await conn.execute("INSERT INTO persons (id, kind, name, created_at)"
                               " VALUES (1, 'person', 'alice', ?)", (now,))
            await conn.execute(
                "INSERT INTO channels (id, owner_id, platform, room_ref, kind, source,"
                " memory_seed, created_at) VALUES (1, 1, 'console', 'alice/default', 'private',"
                " 'user', 1, ?), (2, 1, 'background', '1/dmn', 'background', 'dmn', 1, ?)",
                (now, now))
            rows = []
            for n in range(6):
                cur = await conn.execute(
                    "INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role,"
                    " content, turn_id) VALUES (1, 1, 1, ?, 'user', 'user', ?, ?)",
                    (to_iso(clock.now() + timedelta(minutes=n)), f"message {n}", f"t{n}"))
                rows.append(int(cur.lastrowid or 0))
            await conn.execute(
                "INSERT INTO transcript (channel_id, owner_id, ts, source, role, kind, content,"
                " turn_id, covers_to) VALUES (1, 1, ?, 'compaction', 'system', 'compaction',"
                " 'the summary', 'c1', ?)", (now, rows[-1]))
            await conn.execute("INSERT INTO episode_cursors (channel_id, last_row_id)"
                               " VALUES (1, ?)", (rows[-1],))
            episode = ("INSERT INTO episodes (id, owner_id, channel_id, level, parent_id, summary,"
                       " source, started_at, ended_at, created_at, last_relevant_at,"
                       " tombstoned_at) VALUES (?, 1, 1, ?, ?, ?, 'user', ?, ?, ?, ?, ?)")
            start = to_iso(clock.now())
            end = to_iso(clock.now() + timedelta(minutes=5))
            await conn.execute(episode, (10, 1, None, "a topic parent", start, end, now, now,
                                         None))
            for leaf in range(3):
                await conn.execute(episode, (leaf + 1, 0, 10, f"leaf {leaf}", start, end, now,
                                             now, now))
                mine = rows[2 * leaf:2 * leaf + 2]
                await conn.executemany(
                    "INSERT INTO episode_rows (episode_id, row_id) VALUES (?, ?)",
                    [(leaf + 1, r) for r in mine] + [(10, r) for r in mine])  # inherited
        ids["rows"] = rows
    finally:
        await db.close()
    return ids


async def test_upgrade_drops_inherited_citations_and_background_seeding(
        tmp_path: Path, clock: ManualClock) -> None:
    path = tmp_path / "old.db"
    rows = (await old_database(path, clock))["rows"]

    db = await Database.open(path, TEST_DIM)
    try:
        assert await db.fetchval("SELECT max(id) FROM migrations") >= 8
        repo = EpisodeRepo(db)
        parent = await repo.get(10)
        assert parent is not None and parent.child_count == 3 and parent.live
        assert await repo.cited_rows(10) == []  # the inherited citations are gone …
        assert [await repo.cited_rows(i) for i in (1, 2, 3)] \
            == [rows[0:2], rows[2:4], rows[4:6]]  # … the leaves keep theirs
        leaf = await repo.get(1)
        assert leaf is not None and leaf.child_count == 0
        seeds = dict(await db.fetchall("SELECT source, memory_seed FROM channels"))
        assert seeds == {"user": 1, "dmn": 0}

        # The rolled-up leaves are tombstoned, so no live leaf cites their rows: the next
        # decay pass prunes them (the parent's inherited citations kept them forever before);
        # the tombstones themselves go 30 days on, and the parent keeps its span and channel.
        early = await decay_pass(db, clock.now() + timedelta(days=1), 1)
        assert early.rows_pruned == 6 and early.episodes_deleted == 0
        assert await db.fetchval("SELECT count(*) FROM transcript WHERE kind = 'message'") == 0
        assert await db.fetchval("SELECT count(*) FROM transcript") == 1  # the compaction row
        late = await decay_pass(db, clock.now() + timedelta(days=31), 1)
        assert late.episodes_deleted == 3
        kept = await repo.get(10)
        assert kept is not None and kept.live and kept.channel_id == 1
        assert (kept.started_at, kept.ended_at) == (parent.started_at, parent.ended_at)
    finally:
        await db.close()
