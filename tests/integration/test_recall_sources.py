"""Episodes as recall candidates (strata.memory.recall.sources): one statement finds the
owner's live episodes by vector kNN or keyword search, with each search's own score."""

from __future__ import annotations

from datetime import timedelta

import numpy as np

from strata.core.clock import ManualClock
from strata.core.types import Channel, Person
from strata.core.words import terms
from strata.memory.engines.db import Database
from strata.memory.recall.leaves import LeafIndex
from strata.memory.recall.sources import EpisodeSource
from strata.memory.recall.types import RecallQuery
from strata.memory.store.episodes import EpisodeRepo, NewEpisode, insert_episode
from strata.memory.store.recall_reads import EpisodeSearch
from tests.memory_helpers import channel, person, recall_reads, turns


def unit(seed: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)


async def episode(db: Database, owner: Person, ch: Channel, summary: str, vec: np.ndarray,
                  rows: list[int], clock: ManualClock, level: int = 0) -> int:
    new = NewEpisode(owner.id, ch.id, summary, ch.source, clock.now() - timedelta(minutes=5),
                     clock.now(), tuple(rows), level=level, method="extractive")
    async with db.write() as conn:
        return await insert_episode(conn, new, vec, clock.now(), db.dim)


def query(db: Database, owner: Person, text: str, vector: np.ndarray | None,
          clock: ManualClock) -> RecallQuery:
    return RecallQuery(owner_id=owner.id, text=text, terms=tuple(terms(text)),
                       match=db.dialect.keyword_query(text) if text else None, vector=vector,
                       now=clock.now(), k=40, scan=2000)


async def test_episodes_found_by_vector_or_words_with_each_search_s_score(
        db: Database, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    bob = await person(db, "bob", clock)
    ch = await channel(db, alice, "alice/e", clock)
    rows = await turns(db, ch, alice, ["violin at noon", "the shed", "a parcel"], clock)
    violin = await episode(db, alice, ch, "violin lessons in Lisbon", unit(1, db.dim),
                           rows[:2], clock)
    shed = await episode(db, alice, ch, "the garden shed parcel", unit(2, db.dim),
                         rows[2:4], clock)
    gone = await episode(db, alice, ch, "violin recital", unit(3, db.dim), rows[4:], clock)
    parent = await episode(db, alice, ch, "a month of music", unit(4, db.dim), [], clock, 1)
    await EpisodeRepo(db).tombstone([gone], parent, clock.now())  # rolled up into `parent`
    other = await channel(db, bob, "bob/e", clock)
    await episode(db, bob, other, "violin violin violin", unit(2, db.dim), [], clock)
    source = EpisodeSource(recall_reads(db, db))

    both = await source.candidates(query(db, alice, "violin lessons", unit(2, db.dim), clock))
    assert [c.id for c in both] == sorted([violin, shed, parent])  # never bob's, nor `gone`
    by_id = {c.id: c for c in both}
    assert by_id[violin].bm25 is not None and by_id[violin].cosine is not None
    assert by_id[shed].bm25 is None and by_id[shed].cosine is not None
    assert by_id[shed].cosine > by_id[violin].cosine  # the query's vector is the shed's
    assert by_id[violin].cited_rows == tuple(rows[:2])
    assert by_id[parent].cited_rows == tuple(rows[4:])  # through its rolled-up child

    words = await source.candidates(query(db, alice, "violin lessons", None, clock))
    assert [(c.id, c.cosine) for c in words] == [(violin, None)]
    assert await source.candidates(query(db, alice, "", None, clock)) == []

    # With the leaf index's citations at hand, a leaf's rows need no statement: the same.
    leaves = LeafIndex(recall_reads(db, db), owners_kept=2)
    await leaves.citations(alice.id)
    kept = await EpisodeSource(recall_reads(db, db), leaves).candidates(
        query(db, alice, "violin lessons", unit(2, db.dim), clock))
    assert [(c.id, c.cited_rows, c.cosine, c.bm25) for c in kept] == [
        (c.id, c.cited_rows, c.cosine, c.bm25) for c in both]


async def test_episode_search_looks_up_only_the_episodes_it_found(
        db: Database, clock: ManualClock) -> None:
    """The found episodes are looked up by id, never every owner's episodes scanned (without
    table statistics SQLite would scan them in id order to skip the sort)."""
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/e", clock)
    first = await episode(db, alice, ch, "violin lessons", unit(1, db.dim), [], clock)
    second = await episode(db, alice, ch, "the garden shed", unit(2, db.dim), [], clock)
    reads = recall_reads(db, db)
    for words in (None, "violin"):  # the vector search alone, and with the keyword one
        search = EpisodeSearch(alice.id, unit(1, db.dim), words and reads.keyword_query(words),
                               120, 2000, 40)
        found = await reads.found_episodes(search)
        assert sorted(int(r["id"]) for r in found) == [first, second]
        assert [int(r["id"]) for r in found] == sorted(int(r["id"]) for r in found)
        if db.dialect.name == "sqlite":  # PostgreSQL's planner picks by table statistics
            sql, params = reads.found_query(search)
            plan = [str(r[3]) for r in await db.fetchall("EXPLAIN QUERY PLAN " + sql, params)]
            assert "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)" in plan, plan
            assert "SCAN e" not in plan, plan
