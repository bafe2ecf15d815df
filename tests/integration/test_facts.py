"""The data graph: closed kinds, supersession, retraction, search, decay (real SQLite, fake
embeddings over HTTP)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from strata.app.compose import App
from strata.core.clock import ManualClock
from strata.core.errors import MutedSourceError, UnknownKindError
from strata.core.types import ChannelKind, Person
from strata.memory.engines.db import Database
from strata.memory.facts.fact_store import FactStore
from strata.memory.rules.decay import FACT_TAU_DAYS
from strata.memory.rules.fact_types import FACT_KINDS, NewFact
from strata.memory.store.facts import FactRepo
from tests.engine_views import check_values


async def person(app: App, name: str, clock: ManualClock) -> Person:
    p = await app.persons.get_or_create(f"console:{name}", name, clock.now())
    await app.channels.get_or_create(platform="console", room_ref=f"{name}/default",
                                     owner_id=p.id, kind=ChannelKind.PRIVATE, source="user",
                                     now=clock.now())
    return p


def store(app: App) -> FactStore:
    return FactStore(FactRepo(app.db), app.embedder)


async def count(db: Database, table: str) -> int:
    return int(await db.fetchval(f"SELECT count(*) FROM {table}"))


async def test_kind_set_is_closed_in_code_and_schema(app: App) -> None:
    assert await check_values(app.db, "facts", "kind") == FACT_KINDS
    assert set(FACT_KINDS) <= set(FACT_TAU_DAYS)


async def test_unknown_kind_is_rejected_and_nothing_stored(app: App, clock: ManualClock) -> None:
    alice = await person(app, "alice", clock)
    s = store(app)
    with pytest.raises(UnknownKindError, match="opinion"):
        await s.add(NewFact(alice.id, "opinion", "Thinks tea is overrated", "user"), clock.now())
    with pytest.raises(UnknownKindError):
        await s.repo.add(NewFact(alice.id, "gossip", "x", "user"),
                         np.ones(app.db.dim, dtype=np.float32) / 8, clock.now())
    # The database refuses it too, even when the write API is bypassed.
    with pytest.raises(app.db.integrity_errors):
        await app.db.execute_write(
            "INSERT INTO facts (owner_id, kind, text, source, valid_from, created_at,"
            " last_relevant_at) VALUES (?, 'gossip', 'x', 'user', '', '', '')", (alice.id,))
    keyword_index = ("fact_fts",) if app.db.engine == "sqlite" else ()  # PG's is on `facts`
    for table in ("facts", "fact_vec", "fact_sources", *keyword_index):
        assert await count(app.db, table) == 0
    with pytest.raises(MutedSourceError):
        await s.add(NewFact(alice.id, "user_specific", "Likes jazz", "scheduled"), clock.now())
    assert await count(app.db, "facts") == 0


async def test_supersession_by_key_hides_the_old_fact_at_once(app: App,
                                                             clock: ManualClock) -> None:
    alice = await person(app, "alice", clock)
    s = store(app)
    first = await s.add(NewFact(alice.id, "user_specific", "Lives in Paris", "user",
                                subject="self", attribute="home city", row_ids=(1,)), clock.now())
    assert first.fact_id is not None
    hits = await s.search(alice.id, "where does she live, Paris?")
    assert [h.fact.id for h in hits] == [first.fact_id]
    clock.advance(days=3)
    second = await s.add(NewFact(alice.id, "user_specific", "Lives in Lyon", "user",
                                 subject="self", attribute="home_city"), clock.now())
    assert second.superseded == (first.fact_id,)
    old = await s.repo.get(first.fact_id)
    assert old is not None and old.status == "superseded"
    assert old.superseded_by == second.fact_id and old.invalid_at == clock.now()
    # Hidden at once: not live, not searchable by words or by vector, no vector row left.
    assert [f.text for f in await s.repo.for_owner(alice.id)] == ["Lives in Lyon"]
    hits = await s.search(alice.id, "Lives in Paris")
    assert [h.fact.text for h in hits] == ["Lives in Lyon"]
    assert await app.db.fetchval("SELECT count(*) FROM fact_vec WHERE fact_id = ?",
                                 (first.fact_id,)) == 0
    # Provenance was kept for the old fact.
    assert (await s.repo.sources(first.fact_id)).row_ids == (1,)


async def test_correction_retracts_and_duplicates_fold(app: App, clock: ManualClock) -> None:
    alice = await person(app, "alice", clock)
    s = store(app)
    vegan = await s.add(NewFact(alice.id, "user_specific", "Is vegan", "user",
                                attribute="diet"), clock.now())
    assert vegan.fact_id is not None
    again = await s.add(NewFact(alice.id, "user_specific", "is vegan.", "user",
                                attribute="diet", episode_ids=(7,)), clock.now())
    assert again.fact_id is None and again.duplicate_of == vegan.fact_id
    assert (await s.repo.sources(vegan.fact_id)).episode_ids == (7,)
    fixed = await s.add(NewFact(alice.id, "user_specific", "Is vegetarian", "user"),
                        clock.now(), replaces=[vegan.fact_id, 999], correction=True)
    assert fixed.retracted == (vegan.fact_id,)
    old = await s.repo.get(vegan.fact_id)
    assert old is not None and old.status == "retracted" and old.superseded_by is None


async def test_search_is_per_owner_and_calibrated(app: App, clock: ManualClock) -> None:
    alice, bob = await person(app, "alice", clock), await person(app, "bob", clock)
    s = store(app)
    await s.add(NewFact(alice.id, "user_specific", "Plays the cello in an orchestra", "user"),
                clock.now())
    await s.add(NewFact(alice.id, "place", "Walks in Parc Monceau on Sundays", "user"),
                clock.now())
    await s.add(NewFact(bob.id, "user_specific", "Plays the cello badly", "user"), clock.now())
    hits = await s.search(alice.id, "cello orchestra")
    assert hits and all(h.fact.owner_id == alice.id for h in hits)
    assert hits[0].fact.text.startswith("Plays the cello")
    assert hits[0].coverage == 1.0 and 0.0 < hits[0].relevance <= 1.0
    assert all(0.0 <= h.relevance <= 1.0 for h in hits)
    unrelated = await s.search(alice.id, "quantum chromodynamics")
    assert all(h.relevance < hits[0].relevance for h in unrelated)
    bobs = await s.search(bob.id, "cello orchestra")
    assert [h.fact.text for h in bobs] == ["Plays the cello badly"]


async def test_decay_purges_invalid_facts_only(app: App, clock: ManualClock) -> None:
    alice = await person(app, "alice", clock)
    s = store(app)
    old = await s.add(NewFact(alice.id, "discovery", "A jazz bar opened nearby", "user",
                              attribute="jazz_bar"), clock.now())
    new = await s.add(NewFact(alice.id, "discovery", "The jazz bar closed", "user",
                              attribute="jazz_bar"), clock.now())
    clock.advance(days=5)
    updated, purged = await s.repo.decay(clock.now())
    assert purged == 0 and updated == 2
    live = await s.repo.get(new.fact_id or 0)
    assert live is not None and 0.3 < live.weight < 0.45  # exp(-5/5): a discovery's τ is 5 d
    clock.advance(timedelta(days=10))
    other = await person(app, "bob", clock)
    assert await s.repo.decay(clock.now(), owner_id=other.id) == (0, 0)
    assert await s.repo.get(old.fact_id or 0) is not None
    _, purged = await s.repo.decay(clock.now(), owner_id=alice.id)
    assert purged == 1
    assert await s.repo.get(old.fact_id or 0) is None
    assert await s.repo.get(new.fact_id or 0) is not None


async def test_search_reports_raw_signals_for_recall(app: App, clock: ManualClock) -> None:
    alice = await person(app, "alice", clock)
    s = store(app)
    await s.add(NewFact(alice.id, "place", "Rows on the lake every morning", "user"),
                clock.now())
    oboe = await s.add(NewFact(alice.id, "user_specific", "Plays oboe", "user",
                               attribute="instrument"), clock.now())
    query = "which instrument do I play, the oboe? and do I row on the lake"
    vec = (await app.embedder.embed([query]))[0]
    hits = await s.repo.search(alice.id, query, vec, limit=1)
    everything = await s.repo.search(alice.id, query, vec, limit=5)
    by_id = {h.fact.id: h for h in everything}
    assert by_id[oboe.fact_id or 0].bm25 is not None and by_id[oboe.fact_id or 0].bm25 < 0
    assert all(h.cosine is not None for h in everything)  # keyword hits get a cosine too
    expected = float(np.dot((await app.embedder.embed(["Plays oboe (instrument)"]))[0], vec))
    assert by_id[oboe.fact_id or 0].cosine == pytest.approx(expected, abs=1e-5)
    assert len(hits) == 1


async def test_a_keyword_hit_outside_the_knn_gets_its_stored_vectors_cosine(
        app: App, clock: ManualClock) -> None:
    """One statement finds both (`strata.memory.store.fact_search`): the kNN's nearest with
    the engine's distance, a keyword hit it did not reach with the cosine of its stored
    vector; a retracted fact and another person's never come back from either search."""
    alice, bob = await person(app, "alice", clock), await person(app, "bob", clock)
    s = store(app)
    lake = await s.add(NewFact(alice.id, "place", "Rows on the lake every morning", "user"),
                       clock.now())
    oboe = await s.add(NewFact(alice.id, "user_specific", "Plays oboe", "user",
                               attribute="instrument"), clock.now())
    gone = await s.add(NewFact(alice.id, "user_specific", "Sold the old oboe", "user"),
                       clock.now())
    await s.add(NewFact(bob.id, "user_specific", "Plays oboe", "user", attribute="instrument"),
                clock.now())
    await s.retract(alice.id, [gone.fact_id or 0], clock.now())
    vec = (await app.embedder.embed(["Rows on the lake every morning"]))[0]
    hits = await s.repo.search(alice.id, "oboe", vec, limit=1)
    by_id = {h.fact.id: h for h in hits}
    assert set(by_id) <= {lake.fact_id, oboe.fact_id} and oboe.fact_id in by_id
    found = await s.repo.search(alice.id, "oboe", vec, limit=2)
    assert {h.fact.id for h in found} == {lake.fact_id, oboe.fact_id}
    knn = {h.fact.id: h for h in found}[lake.fact_id]
    assert knn.bm25 is None and knn.cosine == pytest.approx(1.0, abs=1e-5)
    keyword = by_id[oboe.fact_id]
    expected = float(np.dot((await app.embedder.embed(["Plays oboe (instrument)"]))[0], vec))
    assert keyword.bm25 is not None and keyword.cosine == pytest.approx(expected, abs=1e-6)
    assert all(h.fact.owner_id == alice.id for h in [*hits, *found])


async def test_recall_names_where_a_fact_came_from_in_plain_words(app: App,
                                                                 clock: ManualClock) -> None:
    alice = await person(app, "alice", clock)
    chat = await app.channels.get_or_create(platform="console", room_ref="alice/default",
                                            owner_id=alice.id, kind=ChannelKind.PRIVATE,
                                            source="user", now=clock.now())
    s = store(app)
    await s.add(NewFact(alice.id, "user_specific", "Lives in Lyon", "user", subject="self",
                        attribute="home city", channel_id=chat.id), clock.now())
    await s.add(NewFact(alice.id, "user_specific", "Plays the oboe in Lyon", "dmn"),
                clock.now())
    assert app.recall is not None
    result = await app.recall.search(alice.id, "Lyon", clock.now())
    block = result.render() or ""
    # Facts from a chat share the rows' heading for that chat; reflections read as such.
    assert "From the private chat on console:\n- since " in block, block
    assert "From my own reflections:\n- since " in block, block
    assert "from what was said" not in block and "From the from" not in block
