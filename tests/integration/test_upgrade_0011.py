"""Upgrade to migration 0011 (faults and retries): a database made by the schema before it,
with reminders and job cursors in it, keeps every row and gains the retry columns."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlite_vec

from strata.memory.engines.db import Database
from strata.memory.engines.driver import sqlite_driver
from strata.memory.engines.migrations import available, split_statements
from tests.conftest import TEST_DIM

pytestmark = pytest.mark.sqlite_only(
    "upgrades a SQLite file made by an older SQLite schema; PostgreSQL's schema starts"
    " at its own migration 0001")

T0 = "2026-01-05T09:00:00+00:00"


def previous_schema(path: Path) -> None:
    """Every migration before 0011, applied the way `Database.open` applies them, plus data."""
    driver = sqlite_driver()
    conn = driver.connect(str(path), isolation_level=None)
    conn.enable_load_extension(True)
    sqlite_vec.load(conn)
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                 " applied_at TEXT NOT NULL)")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta (key, value) VALUES ('embed_dim', ?), ('created_at', ?)",
                 (str(TEST_DIM), T0))
    for number, name, sql in available():
        if number >= 11:
            continue
        for statement in split_statements(sql.replace("$DIM", str(TEST_DIM)),
                                          driver.complete_statement):
            conn.execute(statement)
        conn.execute("INSERT INTO migrations VALUES (?, ?, ?)", (number, name, T0))
    conn.execute("INSERT INTO persons (id, kind, name, created_at) VALUES (1, 'person', 'al', ?)",
                 (T0,))
    conn.execute("INSERT INTO channels (id, owner_id, platform, room_ref, kind, source,"
                 " created_at) VALUES (1, 1, 'console', 'al/default', 'private', 'user', ?)",
                 (T0,))
    for rid, state in ((1, "pending"), (2, "claimed"), (3, "delivered"), (4, "cancelled")):
        conn.execute("INSERT INTO reminders (id, owner_id, channel_id, kind, text, due_at,"
                     " timezone, state, deliveries, created_at, turn_id)"
                     " VALUES (?, 1, 1, 'reminder', ?, ?, 'UTC', ?, ?, ?, ?)",
                     (rid, f"text {rid}", T0, state, int(state == "delivered"), T0, f"t{rid}"))
    # (extract: migration 0025 resets the cursors of the jobs whose old output it withdraws)
    conn.execute("INSERT INTO job_cursors (job, person_id, cursor, last_ok_at, last_check)"
                 " VALUES ('extract', 1, 'row:7', ?, 'ran')", (T0,))
    conn.execute("COMMIT")
    conn.close()


async def test_upgrade_to_0011_keeps_reminders_and_job_cursors(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    previous_schema(path)
    db = await Database.open(path, TEST_DIM)
    try:
        assert await db.fetchval("SELECT count(*) FROM migrations WHERE id = 11") == 1
        rows = await db.fetchall(
            "SELECT id, text, state, deliveries, turn_id, attempts, retry_at, unconfirmed"
            " FROM reminders ORDER BY id")
        assert [tuple(r) for r in rows] == [
            (1, "text 1", "pending", 0, "t1", 0, None, 0),
            (2, "text 2", "claimed", 0, "t2", 0, None, 0),
            (3, "text 3", "delivered", 1, "t3", 0, None, 0),
            (4, "text 4", "cancelled", 0, "t4", 0, None, 0),
        ]
        cursor = await db.fetchone("SELECT cursor, failures, retry_at FROM job_cursors")
        assert tuple(cursor) == ("row:7", 0, None)
        # The new state is allowed, and the indexes came back with the rebuilt table.
        await db.execute_write("UPDATE reminders SET state = 'dead' WHERE id = 1")
        indexes = {r[0] for r in await db.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'reminders'")}
        assert {"reminders_due", "reminders_owner"} <= indexes
        assert await db.fetchval("PRAGMA foreign_key_check") is None
    finally:
        await db.close()
