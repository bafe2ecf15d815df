"""What recall keeps in memory per owner stays what the database says: the leaves' citations
(read once per leaf) and the row table (rebuilt only when a row recall sees changed)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import numpy as np

from strata.core.clock import ManualClock
from strata.core.types import Channel, Person, RowKind
from strata.memory.engines.db import Database, Params, Row, placeholders
from strata.memory.engines.dialect import Dialect
from strata.memory.recall.index import RowIndex
from strata.memory.recall.leaves import LeafIndex, leaf_signals
from strata.memory.store.episodes import EpisodeRepo, NewEpisode, insert_episode
from strata.memory.store.facts import FactRepo
from strata.memory.store.forgetting.forget import Forgetter
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import channel, embedder_for, filler, person, recall_reads, turn, turns


async def episode(db: Database, owner: Person, ch: Channel, rows: list[int],
                  clock: ManualClock, level: int = 0) -> int:
    new = NewEpisode(owner.id, ch.id, f"talk {rows}", ch.source,
                     clock.now() - timedelta(minutes=5), clock.now(), tuple(rows), level=level,
                     method="extractive")
    async with db.write() as conn:
        return await insert_episode(conn, new, None, clock.now(), db.dim)


async def test_leaf_citations_follow_new_and_rolled_up_leaves(db: Database,
                                                             clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/l", clock)
    ids = await turns(db, ch, alice, [filler(i) for i in range(6)], clock)
    first = await episode(db, alice, ch, ids[:4], clock)
    leaves = LeafIndex(recall_reads(db, db), owners_kept=2)
    got = await leaves.citations(alice.id)
    assert [c.tolist() for c in got.cited] == [ids[:4]]
    clock.advance(days=3)
    await episode(db, alice, ch, ids[4:8], clock)  # a new leaf, fresher than the first
    got = await leaves.citations(alice.id)
    assert [c.tolist() for c in got.cited] == [ids[:4], ids[4:8]]
    weight, _ = leaf_signals(got, np.asarray(ids, dtype=np.int64), clock.now())
    assert np.isnan(weight[8:]).all() and weight[4] > weight[0] > 0
    parent = await episode(db, alice, ch, [], clock, level=1)
    await EpisodeRepo(db).tombstone([first], parent, clock.now())  # rolled up: not a leaf
    got = await leaves.citations(alice.id)
    assert [c.tolist() for c in got.cited] == [ids[4:8]]
    fresh = await LeafIndex(recall_reads(db, db), owners_kept=2).citations(alice.id)
    table_ids = np.asarray(ids, dtype=np.int64)
    for kept, read in zip(leaf_signals(got, table_ids, clock.now()),
                          leaf_signals(fresh, table_ids, clock.now()), strict=True):
        np.testing.assert_array_equal(kept, read)
    assert np.isnan(leaf_signals(got, table_ids, clock.now())[0][:4]).all()


async def test_a_row_recall_never_sees_leaves_the_table_as_it_is(db: Database,
                                                                clock: ManualClock) -> None:
    """A tool row changes the owner's rows but not what recall ranks: the table is not
    rebuilt; a message row is added to it."""
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/t", clock)
    await turns(db, ch, alice, [filler(i) for i in range(5)], clock)
    index = RowIndex(recall_reads(db, db))
    _, before = await index.table(alice.id)
    await turn(db, ch, alice, "looked up the weather", clock, kind=RowKind.TOOL_CALL)
    _, same = await index.table(alice.id)
    assert same is before
    await turn(db, ch, alice, "we met at the harbour", clock)
    _, grown = await index.table(alice.id)
    assert grown.n == before.n + 1 and "harbour" in grown.postings
    _, fresh = await RowIndex(recall_reads(db, db)).table(alice.id)
    assert grown.postings == fresh.postings and grown.words == fresh.words
    np.testing.assert_array_equal(grown.ids, fresh.ids)


async def test_a_forgotten_row_never_comes_back_from_the_cache(
        db: Database, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    """/forget deletes the person's turns: the next search's table is what a fresh load
    gives, without the forgotten rows or any word only they held, while rows said since
    (and a tool row) are there as usual."""
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/g", clock)
    await turns(db, ch, alice, [filler(i) for i in range(4)], clock)
    secret = await turn(db, ch, alice, "my sister Zenobia teaches violin", clock, reply="Oh!")
    await turns(db, ch, alice, [filler(i) for i in range(4, 6)], clock)
    index = RowIndex(recall_reads(db, db))
    _, before = await index.table(alice.id)
    assert "zenobia" in before.words and "zenobia" in before.postings
    forgetter = Forgetter(db, embedder_for(fake_openai), FactRepo(db))
    plan = await forgetter.plan_words(alice.id, "Zenobia")
    assert set(secret) <= plan.row_ids
    await forgetter.forget(plan)
    await turn(db, ch, alice, "looked it up", clock, kind=RowKind.TOOL_CALL)
    said = await turn(db, ch, alice, "the tram was late again", clock)
    _, after = await index.table(alice.id)
    _, fresh = await RowIndex(recall_reads(db, db)).table(alice.id)
    assert "zenobia" not in after.words and "zenobia" not in after.postings
    assert not set(secret) & set(after.ids.tolist())
    assert said[0] in after.ids.tolist()
    np.testing.assert_array_equal(after.ids, fresh.ids)
    assert after.postings == fresh.postings and after.words == fresh.words
    np.testing.assert_array_equal(after.vectors, fresh.vectors)


class RowLandsAfterTheLook:
    """Reads that, right after one look at the owner's rows, let a turn be written: the load
    that follows brings a row the look did not count."""

    def __init__(self, db: Database, write: Callable[[], Awaitable[list[int]]]) -> None:
        self.db = db
        self.write: Callable[[], Awaitable[list[int]]] | None = write
        self.landed: list[int] = []

    @property
    def dialect(self) -> Dialect:
        return self.db.dialect

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        rows = await self.db.fetchall(sql, params)
        if self.write is not None and "AS cv ON" in sql:
            write, self.write = self.write, None
            self.landed = await write()
        return rows


async def test_a_row_deleted_after_a_load_the_look_did_not_count_is_noticed(
        db: Database, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/r", clock)
    await turns(db, ch, alice, [filler(i) for i in range(3)], clock)
    reads = RowLandsAfterTheLook(db, lambda: turn(db, ch, alice, "a quokka smiled", clock))
    index = RowIndex(recall_reads(db, reads))
    _, first = await index.table(alice.id)
    assert reads.landed and reads.landed[0] in first.ids.tolist()
    await db.execute_write(f"DELETE FROM transcript WHERE id IN ({placeholders(reads.landed)})",
                           reads.landed)
    _, after = await index.table(alice.id)
    assert "quokka" not in after.postings and reads.landed[0] not in after.ids.tolist()
