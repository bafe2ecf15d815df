"""Migration 0010 (ids never reused) on a database made by the previous schema, with data in
it: every row, id, FTS index, vector, trigger and foreign key survives, and from then on a
deleted id is not handed out again (issue 12, defect 7). A real SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from strata.memory.engines.db import Database
from strata.memory.engines.sqlite_open import migrate_file, raw_connection
from strata.memory.store.episodes import as_blob
from tests.conftest import TEST_DIM

pytestmark = pytest.mark.sqlite_only(
    "upgrades a SQLite file made by an older SQLite schema; PostgreSQL's schema starts"
    " at its own migration 0001")

REBUILT = ("persons", "channels", "transcript", "episodes", "facts")
T = "2026-01-05T09:00:00+00:00"


def vec(seed: int) -> bytes:
    v = np.random.default_rng(seed).normal(size=TEST_DIM).astype(np.float32)
    return as_blob(v / np.linalg.norm(v))


def fill(conn: Any) -> None:
    """Two persons with channels, messages, an episode citing them, facts with sources and
    vectors; the newest fact and message of bob already deleted once."""
    ex = conn.execute
    ex("BEGIN")
    for pid, name in ((1, "alice"), (2, "bob")):
        ex("INSERT INTO persons (id, kind, name, created_at) VALUES (?, 'person', ?, ?)",
           (pid, name, T))
        ex("INSERT INTO identities (identity, person_id, created_at) VALUES (?, ?, ?)",
           (f"console:{name}", pid, T))
        ex("INSERT INTO channels (id, owner_id, platform, room_ref, kind, source, created_at)"
           " VALUES (?, ?, 'console', ?, 'private', 'user', ?)", (pid, pid, f"{name}/d", T))
    rows = [(1, 1, "I paddle a red kayak", "t1"), (1, 1, "Kayak noted", "t1"),
            (2, 2, "Bob bakes sourdough", "t2"), (2, 2, "tmp", "t3")]
    for channel, owner, text, turn in rows:
        ex("INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role,"
           " content, turn_id) VALUES (?, ?, ?, ?, 'user', 'user', ?, ?)",
           (channel, owner, owner, T, text, turn))
    ex("UPDATE transcript SET covers_to = 1 WHERE id = 2")
    ex("INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (1, 1, ?)", (vec(1),))
    ex("INSERT INTO episodes (owner_id, channel_id, summary, key_terms, source, started_at,"
       " ended_at, created_at, last_relevant_at) VALUES (1, 1, 'Alice kayaks', 'kayak',"
       " 'user', ?, ?, ?, ?)", (T, T, T, T))
    ex("INSERT INTO episode_rows (episode_id, row_id) VALUES (1, 1), (1, 2)")
    ex("INSERT INTO episode_vec (episode_id, owner_id, embedding) VALUES (1, 1, ?)", (vec(2),))
    for owner, text in ((1, "Paddles a kayak"), (1, "Kayak is red"), (2, "Bakes bread")):
        ex("INSERT INTO facts (owner_id, kind, text, source, channel_id, valid_from,"
           " created_at, last_relevant_at) VALUES (?, 'user_specific', ?, 'user', ?, ?, ?, ?)",
           (owner, text, owner, T, T, T))
    ex("UPDATE facts SET status = 'superseded', invalid_at = ?, superseded_by = 2 WHERE id = 1",
       (T,))
    for fid, owner in ((1, 1), (2, 1), (3, 2)):
        ex("INSERT INTO fact_sources (fact_id, owner_id, row_id) VALUES (?, ?, ?)",
           (fid, owner, 1 if owner == 1 else 3))
        ex("INSERT INTO fact_vec (fact_id, owner_id, embedding) VALUES (?, ?, ?)",
           (fid, owner, vec(10 + fid)))
    ex("DELETE FROM transcript WHERE id = 4")
    ex("COMMIT")


def snapshot(conn: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for table in REBUILT:
        out[table] = [tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY id")]
        out[f"{table} columns"] = [tuple(r)[1:3] for r in
                                   conn.execute(f"PRAGMA table_info({table})")]
    for table in ("identities", "episode_rows", "fact_sources"):
        out[table] = sorted(tuple(r) for r in conn.execute(f"SELECT * FROM {table}"))
    for table, key in (("transcript_vec", "row_id"), ("episode_vec", "episode_id"),
                       ("fact_vec", "fact_id")):
        out[table] = [tuple(r) for r in
                      conn.execute(f"SELECT {key}, owner_id FROM {table} ORDER BY {key}")]
    return out


async def test_upgrade_keeps_data_and_stops_id_reuse(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    applied = migrate_file(path, TEST_DIM, upto=9)
    assert applied and not any(a.startswith("0010") for a in applied)
    conn = raw_connection(path)
    try:
        fill(conn)
        before = snapshot(conn)
    finally:
        conn.close()

    # Up to 0010, the migration under test: later ones may add columns the snapshot would see.
    db = await Database.open(path, TEST_DIM, upto=10)
    try:
        assert await db.fetchval("SELECT count(*) FROM migrations WHERE id = 10") == 1
        conn = raw_connection(path)
        try:
            assert snapshot(conn) == before
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        finally:
            conn.close()
        # The FTS indexes still answer, for the rows they had.
        assert [r[0] for r in await db.fetchall(
            "SELECT rowid FROM transcript_fts WHERE transcript_fts MATCH 'kayak'"
            " ORDER BY rowid")] == [1, 2]
        assert [r[0] for r in await db.fetchall(
            "SELECT rowid FROM fact_fts WHERE fact_fts MATCH 'kayak' ORDER BY rowid")] == [1, 2]
        assert await db.fetchval(
            "SELECT rowid FROM episode_fts WHERE episode_fts MATCH 'kayak'") == 1

        # The triggers came back: new rows are indexed, deleted ones leave the FTS and vectors.
        new_row = await db.execute_write(
            "INSERT INTO transcript (channel_id, owner_id, person_id, ts, source, role,"
            " content, turn_id) VALUES (2, 2, 2, ?, 'user', 'user', 'rye and spelt', 't4')",
            (T,))
        # An id freed before the upgrade cannot be known (SQLite kept no record): the
        # sequence starts at the largest id there is.
        assert new_row == 4
        assert await db.fetchval(
            "SELECT rowid FROM transcript_fts WHERE transcript_fts MATCH 'spelt'") == new_row
        await db.execute_write("DELETE FROM facts WHERE id = 3")
        assert await db.fetchval("SELECT count(*) FROM fact_vec WHERE fact_id = 3") == 0
        assert await db.fetchval("SELECT count(*) FROM fact_fts WHERE fact_fts MATCH 'bread'") \
            == 0
        # From now on deleting the newest fact no longer frees its id.
        again = await db.execute_write(
            "INSERT INTO facts (owner_id, kind, text, source, valid_from, created_at,"
            " last_relevant_at) VALUES (2, 'user_specific', 'Bakes rye', 'user', ?, ?, ?)",
            (T, T, T))
        assert again == 4
        # Foreign keys are on and cascade as before.
        assert await db.fetchval("PRAGMA foreign_keys") == 1
        await db.execute_write("DELETE FROM persons WHERE id = 2")
        for table, column in (("channels", "owner_id"), ("transcript", "owner_id"),
                              ("facts", "owner_id"), ("identities", "person_id")):
            assert await db.fetchval(
                f"SELECT count(*) FROM {table} WHERE {column} = 2") == 0, table
        assert await db.fetchval("SELECT count(*) FROM transcript WHERE owner_id = 1") == 2
    finally:
        await db.close()
