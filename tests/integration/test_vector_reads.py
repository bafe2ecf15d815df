"""Vectors read back exactly on both engines, whichever way a statement reads them.

On PostgreSQL a read naming the `embedding` column fetches binary results (pgvector's binary
output is copied, its text output parsed); `SELECT *` reads text. Both must give the stored
float32 blob bit for bit, and a `numeric` in a binary read must still be an int or a float,
never a Decimal, as in a text read.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from strata.core.clock import ManualClock
from strata.memory.engines.db import Database
from strata.memory.store.episodes import as_blob
from tests.conftest import TEST_DIM
from tests.memory_helpers import channel, person, turn


async def test_a_vector_reads_back_bit_for_bit_by_name_and_by_star(
        db: Database, clock: ManualClock) -> None:
    p = await person(db, "ann", clock)
    ch = await channel(db, p, "dm", clock)
    row_ids = await turn(db, ch, p, "hello", clock)
    rng = np.random.default_rng(3)
    # Awkward values: tiny, huge, negative zero, many significant digits.
    vec = rng.normal(size=TEST_DIM).astype(np.float32)
    vec[:4] = [1e-38, -3.4e38, -0.0, 0.1]
    await db.execute_write(
        "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
        (row_ids[0], p.id, as_blob(vec)))
    named = await db.fetchall(
        "SELECT row_id, embedding, sum(owner_id) AS total FROM transcript_vec"
        " WHERE row_id = ? GROUP BY row_id, embedding", (row_ids[0],))
    star = await db.fetchone("SELECT * FROM transcript_vec WHERE row_id = ?", (row_ids[0],))
    assert star is not None
    assert named[0]["embedding"] == star["embedding"] == as_blob(vec)
    assert np.frombuffer(named[0]["embedding"], "<f4").tobytes() == vec.astype("<f4").tobytes()
    total = named[0]["total"]
    assert total == p.id and isinstance(total, int) and not isinstance(total, Decimal)
    half = await db.fetchval("SELECT avg(owner_id) / 2.0 FROM transcript_vec"
                             " WHERE embedding IS NOT NULL")
    assert isinstance(half, float) and half == p.id / 2


async def test_text_with_a_nul_reads_back_exactly_beside_a_vector(
        db: Database, clock: ManualClock) -> None:
    # PostgreSQL text cannot hold a NUL, so the engine escapes it on the way in; a binary read
    # (one naming `embedding`) must undo that as a text read does.
    p = await person(db, "ann", clock)
    ch = await channel(db, p, "dm", clock)
    said = "before\x00after \U0010ffff mark"
    row_ids = await turn(db, ch, p, said, clock)
    await db.execute_write(
        "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
        (row_ids[0], p.id, as_blob(np.ones(TEST_DIM, np.float32))))
    [row] = await db.fetchall(
        "SELECT t.content, v.embedding FROM transcript t JOIN transcript_vec v"
        " ON v.row_id = t.id WHERE t.id = ?", (row_ids[0],))
    assert row["content"] == said
    assert await db.fetchval("SELECT content FROM transcript WHERE id = ?",
                             (row_ids[0],)) == said


async def test_vectors_by_key_are_the_stored_ones_for_exactly_the_keys_asked(
        db: Database, clock: ManualClock) -> None:
    """`Dialect.vectors_query`, the one way to read some rows' vectors: each asked key that has
    a vector gets its own, bit for bit; keys without one, and other owners' rows that were
    not asked for, are not returned."""
    ann, bob = await person(db, "ann", clock), await person(db, "bob", clock)
    rng = np.random.default_rng(5)
    stored: dict[int, bytes] = {}
    rows: dict[str, list[int]] = {}
    for who in (ann, bob):
        ch = await channel(db, who, f"dm-{who.name}", clock)
        for i in range(6):
            [row_id] = await turn(db, ch, who, f"message {i}", clock)
            rows.setdefault(who.name, []).append(row_id)
            if i != 3:  # one row the indexer has not reached
                stored[row_id] = as_blob(rng.normal(size=TEST_DIM).astype(np.float32))
                await db.execute_write(
                    "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
                    (row_id, who.id, stored[row_id]))
    ann_rows = rows["ann"]
    asked = [*ann_rows, 10**9]  # and a key that names no row at all
    found = await db.fetchall(*db.dialect.vectors_query("transcript_vec", "row_id", asked))
    got = {int(r[0]): bytes(r[1]) for r in found}
    assert got == {k: v for k, v in stored.items() if k in ann_rows}
    assert len(got) == 5 and len(found) == 5
    assert await db.fetchall(*db.dialect.vectors_query("transcript_vec", "row_id", [])) == []
