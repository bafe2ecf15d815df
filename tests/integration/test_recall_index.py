"""What recall keeps in memory per owner stays what the database says: the leaves' citations
(read once per leaf) and the row table (rebuilt only when a row recall sees changed)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from strata.core.clock import ManualClock
from strata.core.types import Channel, Person, RowKind
from strata.memory.domain.episodes import EpisodeRepo, NewEpisode, insert_episode
from strata.memory.domain.recall_index import RowIndex
from strata.memory.domain.recall_leaves import LeafIndex, leaf_signals
from strata.memory.engines.db import Database
from tests.memory_helpers import channel, filler, person, turn, turns


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
    leaves = LeafIndex(db, owners_kept=2)
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
    fresh = await LeafIndex(db, owners_kept=2).citations(alice.id)
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
    index = RowIndex(db, db.dim)
    _, before = await index.table(alice.id)
    await turn(db, ch, alice, "looked up the weather", clock, kind=RowKind.TOOL_CALL)
    _, same = await index.table(alice.id)
    assert same is before
    await turn(db, ch, alice, "we met at the harbour", clock)
    _, grown = await index.table(alice.id)
    assert grown.n == before.n + 1 and "harbour" in grown.postings
    _, fresh = await RowIndex(db, db.dim).table(alice.id)
    assert grown.postings == fresh.postings and grown.words == fresh.words
    np.testing.assert_array_equal(grown.ids, fresh.ids)
