"""A person's prepared recall table (`recall_tables`) and change counter (`recall_epochs`): a
first search reads the stored table and ranks what a load from the rows gives; a deleted or
edited row, a renamed speaker and a person merge move the counter and delete the stored
table, so neither the stored table nor the in-memory one ever gives back what changed."""

from __future__ import annotations

import numpy as np

from strata.core.clock import ManualClock
from strata.core.types import Channel, Person
from strata.memory.engines.db import Database, Params, Row
from strata.memory.engines.dialect import Dialect
from strata.memory.recall.index import RowIndex
from strata.memory.recall.owner_rows import OwnerRows
from strata.memory.recall.prepared import pack, unpack
from strata.memory.rules.row_table import RowTable
from strata.memory.store.facts import FactRepo
from strata.memory.store.forgetting.forget import Forgetter
from strata.memory.store.linking import merge_persons
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import (
    channel,
    embedder_for,
    filler,
    person,
    recall_reads,
    row_indexer,
    turn,
    turns,
)

ARRAYS = ("ids", "channel", "session", "minutes", "vectors", "has_vec", "prev", "next",
          "lengths", "window_norm", "bot", "lead_in", "asked_bot", "padded")


class Reads:
    """The database's reads, noting whether the owner's rows were read from the start."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.full_loads = 0

    @property
    def dialect(self) -> Dialect:
        return self.db.dialect

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        if "AND t.id > ? ORDER BY t.id" in sql and list(params)[-1] == 0:
            self.full_loads += 1
        return await self.db.fetchall(sql, params)


def same_table(got: RowTable, want: RowTable) -> None:
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    assert got.postings == want.postings and got.words == want.words


async def loaded(db: Database, owner: Person) -> tuple[OwnerRows, RowTable, Reads]:
    """The owner's rows as a new index (as in a new process) loads them, over counting reads."""
    reads = Reads(db)
    rows, table = await RowIndex(recall_reads(db, reads)).table(owner.id)
    return rows, table, reads


async def stored(db: Database, owner: Person) -> Row | None:
    return await db.fetchone("SELECT epoch, row_count, body FROM recall_tables WHERE owner = ?",
                             (owner.id,))


async def prepared(db: Database, owner: Person) -> tuple[OwnerRows, RowTable]:
    """The owner's rows loaded and stored as their prepared table."""
    index = RowIndex(recall_reads(db, db), prepare_rows=1)
    rows, table = await index.table(owner.id)
    await index.drain()
    assert await stored(db, owner) is not None
    return rows, table


async def talk(db: Database, clock: ManualClock, fake_openai: FakeOpenAI, who: Person,
               texts: list[str]) -> Channel:
    ch = await channel(db, who, f"{who.name}/p", clock)
    await turns(db, ch, who, texts, clock)
    await row_indexer(db, embedder_for(fake_openai)).index_channel(ch.id)
    return ch


async def test_a_first_search_reads_the_prepared_table_as_the_rows_give_it(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    alice = await person(db, "alice", clock)
    ch = await talk(db, clock, fake_openai, alice, [filler(i) for i in range(6)])
    await turn(db, ch, alice, "my café is in Zürich", clock)  # no vector yet
    rows, built = await prepared(db, alice)
    assert rows.has_vec.count(True) == 12 and rows.settled.count(False) == 1
    again, table, reads = await loaded(db, alice)
    assert reads.full_loads == 0 and again.stored == again.table.n == 13  # type: ignore[union-attr]
    same_table(table, built)
    assert again.texts == rows.texts and again.surface == rows.surface
    # New rows and the late vector come on top of the stored table, as on top of a cache.
    said = await turn(db, ch, alice, "the tram was late again", clock, reply="Oh no.")
    await row_indexer(db, embedder_for(fake_openai)).index_channel(ch.id)
    grown, table, reads = await loaded(db, alice)
    assert reads.full_loads == 0 and set(said) <= set(table.ids.tolist())
    await db.execute_write("DELETE FROM recall_tables")
    _, want, reads = await loaded(db, alice)
    assert reads.full_loads == 1
    same_table(table, want)
    assert all(grown.has_vec)


async def test_a_forgotten_row_leaves_the_prepared_table(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    alice = await person(db, "alice", clock)
    ch = await talk(db, clock, fake_openai, alice, [filler(i) for i in range(4)])
    secret = await turn(db, ch, alice, "my sister Zenobia teaches violin", clock, reply="Oh!")
    index = RowIndex(recall_reads(db, db), prepare_rows=1)
    _, before = await index.table(alice.id)
    await index.drain()
    assert "zenobia" in before.postings and await stored(db, alice) is not None
    forgetter = Forgetter(db, embedder_for(fake_openai), FactRepo(db))
    await forgetter.forget(await forgetter.plan_words(alice.id, "Zenobia"))
    assert await stored(db, alice) is None  # deleted with the rows, in their transaction
    _, after, reads = await loaded(db, alice)
    assert reads.full_loads == 1 and "zenobia" not in after.postings
    assert not set(secret) & set(after.ids.tolist())
    _, cached = await index.table(alice.id)
    assert "zenobia" not in cached.words and not set(secret) & set(cached.ids.tolist())


async def test_a_table_built_before_a_change_is_never_stored(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """A table is stored only if the owner's counter has not moved since the look it was
    built at: one built before a forget (which deleted the stored table) is refused."""
    alice = await person(db, "alice", clock)
    ch = await talk(db, clock, fake_openai, alice, [filler(i) for i in range(3)])
    secret = await turn(db, ch, alice, "the safe code is 4417", clock)
    reads = recall_reads(db, db)
    index = RowIndex(reads, prepare_rows=10**9)  # stores nothing by itself
    rows, _ = await index.table(alice.id)
    await db.execute_write("DELETE FROM transcript WHERE id = ?", (secret[0],))
    assert not await reads.save_prepared(alice.id, rows.fingerprint, index.format, pack(rows))
    assert await stored(db, alice) is None
    _, fresh = await index.table(alice.id)
    assert secret[0] not in fresh.ids.tolist() and "4417" not in fresh.postings
    again, _ = await index.table(alice.id)
    assert await reads.save_prepared(alice.id, again.fingerprint, index.format, pack(again))


async def test_an_edited_row_reaches_the_cached_and_the_stored_table(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    alice = await person(db, "alice", clock)
    ch = await talk(db, clock, fake_openai, alice, [filler(i) for i in range(3)])
    said = await turn(db, ch, alice, "we adopted a ferret", clock)
    index = RowIndex(recall_reads(db, db), prepare_rows=1)
    _, before = await index.table(alice.id)
    await index.drain()
    assert "ferret" in before.postings
    epoch = await db.fetchval("SELECT coalesce(max(epoch), 0) FROM recall_epochs")
    await db.execute_write("UPDATE transcript SET content = ? WHERE id = ?",
                           ("we adopted a hamster", said[0]))
    assert await stored(db, alice) is None
    assert await db.fetchval("SELECT epoch FROM recall_epochs WHERE owner = ?",
                             (alice.id,)) > epoch
    _, cached = await index.table(alice.id)
    assert "ferret" not in cached.postings and "hamster" in cached.postings


async def test_a_renamed_speaker_reaches_the_cached_table(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    alice = await person(db, "alice", clock)
    await talk(db, clock, fake_openai, alice, [filler(i) for i in range(3)])
    index = RowIndex(recall_reads(db, db), prepare_rows=1)
    rows, _ = await index.table(alice.id)
    await index.drain()
    assert any(t.startswith("alice ") for t in rows.texts)
    await db.execute_write("UPDATE persons SET name = ? WHERE id = ?", ("Alicia", alice.id))
    assert await stored(db, alice) is None
    rows, table = await index.table(alice.id)
    assert "alicia" in table.words and not any(t.startswith("alice ") for t in rows.texts)


async def test_a_merge_moves_rows_but_never_a_table(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """Each person's stored table holds their own rows only; merging Bob into Alice deletes
    both tables, and Alice's next table holds both people's rows as a load from them does."""
    alice = await person(db, "alice", clock)
    bob = await person(db, "bob", clock)
    await talk(db, clock, fake_openai, alice, ["alice keeps bees", filler(1)])
    await talk(db, clock, fake_openai, bob, ["bob sails dinghies", filler(2)])
    index = RowIndex(recall_reads(db, db), prepare_rows=1)
    _, bobs = await index.table(bob.id)
    _, alices = await index.table(alice.id)
    await index.drain()
    for who, own, other in ((alice, alices, "dinghi"), (bob, bobs, "bee")):
        kept = await stored(db, who)
        assert kept is not None
        body = unpack(who.id, db.dim, bytes(kept["body"]))
        owned = await db.fetchall("SELECT id FROM transcript WHERE owner_id = ?", (who.id,))
        assert set(body.ids) <= {int(r[0]) for r in owned} and other not in body.postings
        assert other not in own.postings
    await merge_persons(db, alice.id, bob.id)
    assert await stored(db, alice) is None and await stored(db, bob) is None
    _, merged = await index.table(alice.id)
    assert "dinghi" in merged.postings and "bee" in merged.postings
    index2 = RowIndex(recall_reads(db, db))
    _, fresh = await index2.table(alice.id)
    same_table(merged, fresh)


async def test_a_table_of_another_format_is_not_used(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    alice = await person(db, "alice", clock)
    await talk(db, clock, fake_openai, alice, [filler(i) for i in range(3)])
    await prepared(db, alice)
    await db.execute_write("UPDATE recall_tables SET format = 'layout=0'")
    _, _, reads = await loaded(db, alice)
    assert reads.full_loads == 1
    await db.execute_write("UPDATE recall_tables SET format = ?, body = ?",
                           (RowIndex(recall_reads(db, db)).format, memoryview(b"not a table")))
    _, table, reads = await loaded(db, alice)
    assert reads.full_loads == 1 and table.n == 6
