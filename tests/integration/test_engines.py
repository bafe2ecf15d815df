"""The stores on both storage engines: persons, identities and channels, the transcript (with
keyword and vector search), cursors, job runs, reminders, facts and episodes (with recall's
episode search), on SQLite and on PostgreSQL.

test.sh runs every test here once per engine (`STRATA_TEST_ENGINE`, see tests/conftest.py)
against a real database, asserting the same results on both.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import numpy as np
import pytest

from strata.core.clock import ManualClock
from strata.core.types import ChannelKind, NewRow, OwnerKind, Role, RowKind
from strata.memory.coordination.cursors import move_cursor, pending_channels, read_cursor
from strata.memory.coordination.jobruns import JobRunRepo
from strata.memory.engines.db import Database
from strata.memory.recall.sources import EpisodeSource
from strata.memory.recall.types import RecallQuery
from strata.memory.rules.fact_types import NewFact, Sources
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.facts import FactRepo
from strata.memory.store.persons import ChannelRepo, PersonRepo
from strata.memory.store.services.reminders import ReminderRepo
from strata.memory.store.transcript import TranscriptRepo, history_since_watermark
from tests.conftest import TEST_DIM
from tests.memory_helpers import channel, person, recall_reads, turn


async def test_a_person_is_created_once_per_identity_even_when_racing(
        db: Database, clock: ManualClock) -> None:
    repo = PersonRepo(db)
    first, second = await asyncio.gather(
        repo.get_or_create("telegram:7", "Ann", clock.now()),
        repo.get_or_create("telegram:7", "Ann", clock.now()))
    assert first == second
    assert [p.id for p in await repo.all()] == [first.id]
    room = await repo.room_scope("matrix", "!r", "Book club", clock.now())
    assert room.kind is OwnerKind.ROOM and room.id != first.id
    assert await repo.by_identity("room:matrix:!r") == room
    assert await repo.identities(first.id) == ["telegram:7"]
    assert [p.id for p in await repo.all(None)] == [first.id, room.id]
    assert await repo.find("telegram:7") == first
    assert await repo.find("Ann") == first  # a unique name
    assert await repo.find("nobody") is None
    await repo.set_timezone(first.id, "Europe/Paris")
    await repo.mark_active(first.id, clock.now())
    await repo.set_paused(first.id, True)
    got = await repo.get(first.id)
    assert got is not None
    assert (got.timezone, got.paused, got.last_active_at) == ("Europe/Paris", True, clock.now())
    assert await repo.paused_among([first.id, room.id, None]) == {first.id}
    assert await repo.get(10_000) is None


async def test_channels_are_unique_per_platform_room(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    repo = ChannelRepo(db)
    made = await asyncio.gather(*[
        repo.get_or_create(platform="discord", room_ref="dm:1", owner_id=ann.id,
                           kind=ChannelKind.PRIVATE, source="user", now=clock.now(),
                           system_prompt="be brief") for _ in range(3)])
    assert len({c.id for c in made}) == 1
    assert made[0].system_prompt == "be brief" and made[0].memory_seed is True
    assert await repo.by_ref("discord", "dm:1") == made[0]
    assert await repo.by_ref("telegram", "dm:1") is None
    other = await channel(db, ann, "feed", clock, source="feed")
    assert [c.id for c in await repo.for_owner(ann.id)] == [made[0].id, other.id]


async def test_transcript_appends_in_order_and_refuses_an_unknown_channel(
        db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "dm", clock)
    repo = TranscriptRepo(db)
    ids = await turn(db, chat, ann, "50% off, or 'quoted' \"text\"? yes", clock, reply="ok")
    ids += await turn(db, chat, ann, "lone \ud800 surrogate", clock)
    assert ids == sorted(ids)
    rows = await repo.for_channel(chat.id)
    assert [r.content for r in rows] == [
        "50% off, or 'quoted' \"text\"? yes", "ok", "lone \ufffd surrogate"]
    assert [r.id for r in await repo.for_channel(chat.id, limit=2, newest=True)] == ids[1:]
    assert [r.role for r in await repo.by_turn(rows[0].turn_id)] == [Role.USER, Role.ASSISTANT]
    with pytest.raises(ValueError, match="no channel"):
        await repo.append([NewRow(9_999, ann.id, clock.now(), "user", Role.USER, "x", "t9"),])
    assert await repo.count() == 3  # the failed append stored nothing
    got = await repo.get(ids[0])
    assert got is not None and got.ts == clock.now() and got.owner_id == ann.id


async def test_an_append_breaking_another_constraint_raises_the_engines_integrity_error(
        db: Database, clock: ManualClock) -> None:
    """`append` catches only the engine's integrity errors (`Database.integrity_errors`), to
    name an unknown channel; any other violation (here: an author who is no person) comes out
    as the engine raised it, and nothing of the append is stored."""
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "dm", clock)
    repo = TranscriptRepo(db)
    good = NewRow(chat.id, ann.id, clock.now(), "user", Role.USER, "kept out", "t1")
    stranger = NewRow(chat.id, 9_999, clock.now(), "user", Role.USER, "who", "t1")
    with pytest.raises(db.integrity_errors):
        await repo.append([good, stranger])
    with pytest.raises(ValueError, match="no channel 9998"):  # still named, even beside it
        await repo.append([stranger, NewRow(9_998, ann.id, clock.now(), "user", Role.USER,
                                            "x", "t2")])
    assert await repo.count() == 0
    assert await repo.append([good]) != []


async def test_platform_messages_and_stored_replies(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "tg:1", clock, platform="telegram")
    repo = TranscriptRepo(db)
    answered, lost, edit = (
        NewRow(chat.id, ann.id, clock.now(), "user", Role.USER, text, turn_id,
               platform_msg_id=msg)
        for text, turn_id, msg in (("hi", "a", "m1"), ("are you there", "b", "m2"),
                                   ("are you there?", "c", "m2")))
    await repo.append([answered, NewRow(chat.id, None, clock.now(), "user", Role.ASSISTANT,
                                        "hello", "a")])
    await repo.append([lost])
    await repo.append([edit])
    assert [r.content for r in await repo.by_platform_msg(chat.id, "m2")] == [
        "are you there", "are you there?"]
    assert await repo.reply_of("a") == "hello"
    assert await repo.reply_of("b") is None


async def test_keyword_search_stems_ranks_and_stays_with_its_owner(
        db: Database, clock: ManualClock) -> None:
    ann, bob = await person(db, "ann", clock), await person(db, "bob", clock)
    ann_chat, bob_chat = await channel(db, ann, "a", clock), await channel(db, bob, "b", clock)
    await turn(db, ann_chat, ann, "I went running by the river with my sister", clock)
    await turn(db, ann_chat, ann, "the river river river was cold", clock)
    await turn(db, ann_chat, ann, "nothing to see here", clock)
    await turn(db, bob_chat, bob, "bob runs by the river too", clock)
    repo = TranscriptRepo(db)
    hits = await repo.search(ann.id, "Do you remember the rivers I ran by?")
    assert {h.content for h, _ in hits} == {
        "I went running by the river with my sister", "the river river river was cold"}
    assert [score for _, score in hits] == sorted(score for _, score in hits)  # best first
    assert all(score < 0 for _, score in hits)  # lower is better on both engines
    assert [h.content for h, _ in await repo.search(ann.id, "sister")] == [
        "I went running by the river with my sister"]
    for hostile in ("can't", "c++", "*", "NEAR(a b)", '"', "body:x AND", "'; DROP TABLE x"):
        await repo.search(ann.id, hostile)  # user text never breaks the query
    assert await repo.search(ann.id, "") == []
    assert await repo.search(bob.id, "sister") == []


async def test_vectors_round_trip_and_knn_is_exact_per_owner(
        db: Database, clock: ManualClock) -> None:
    ann, bob = await person(db, "ann", clock), await person(db, "bob", clock)
    ann_chat, bob_chat = await channel(db, ann, "a", clock), await channel(db, bob, "b", clock)
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(6, TEST_DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    rows = []
    for i, vec in enumerate(vectors):
        chat, who = (ann_chat, ann) if i < 4 else (bob_chat, bob)
        [row_id] = await turn(db, chat, who, f"message {i}", clock)
        rows.append((row_id, who.id, vec.astype("<f4").tobytes()))
    await db.executemany_write(
        "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)", rows)
    stored = await db.fetchall("SELECT row_id, embedding FROM transcript_vec ORDER BY row_id")
    assert [bytes(r[1]) for r in stored] == [r[2] for r in rows]  # bit for bit
    query = vectors[0] + 0.5 * vectors[2]
    hits = await db.fetchall(db.dialect.knn_sql("transcript_vec", "row_id"),
                             (query.astype("<f4").tobytes(), ann.id, 3))
    expected = sorted(range(4), key=lambda i: -float(vectors[i] @ query)
                      / float(np.linalg.norm(query)))[:3]
    assert [int(h[0]) for h in hits] == [rows[i][0] for i in expected]
    for h, i in zip(hits, expected, strict=True):
        cosine = float(vectors[i] @ query) / float(np.linalg.norm(query))
        assert float(h[1]) == pytest.approx(1 - cosine, abs=1e-5)
    await db.execute_write("DELETE FROM transcript WHERE id = ?", (rows[0][0],))
    assert await db.fetchval("SELECT count(*) FROM transcript_vec") == 5  # left with its row


async def test_cursors_move_by_compare_and_set(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat, quiet = await channel(db, ann, "a", clock), await channel(db, ann, "q", clock)
    ids = await turn(db, chat, ann, "one", clock, reply="two")
    assert await pending_channels(db, "episode_cursors") == [chat.id]
    assert await read_cursor(db, "episode_cursors", chat.id) == 0
    async with db.write() as conn:
        assert await move_cursor(conn, "episode_cursors", chat.id, 0, ids[0])
    async with db.write() as conn:
        assert not await move_cursor(conn, "episode_cursors", chat.id, 0, ids[1])  # stale
        assert await move_cursor(conn, "episode_cursors", chat.id, ids[0], ids[1])
    assert await read_cursor(db, "episode_cursors", chat.id) == ids[1]
    assert await read_cursor(db, "transcript_vec_cursors", chat.id) == 0
    assert await pending_channels(db, "episode_cursors") == []
    assert quiet.id not in await pending_channels(db, "transcript_vec_cursors")
    with pytest.raises(ValueError):
        await read_cursor(db, "persons", chat.id)  # type: ignore[arg-type]


async def test_a_failed_write_transaction_leaves_nothing(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "a", clock)
    with pytest.raises(RuntimeError):
        async with db.write() as conn:
            await conn.execute("UPDATE persons SET name = 'changed' WHERE id = ?", (ann.id,))
            raise RuntimeError("boom")
    got = await PersonRepo(db).get(ann.id)
    assert got is not None and got.name == "ann"
    assert await TranscriptRepo(db).count(channel_id=chat.id) == 0


async def test_job_runs_cursors_failures_and_summary(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    repo = JobRunRepo(db)
    run = await repo.start("digest", ann.id, clock.now())
    await repo.finish(run, now=clock.now(), status="ok", result="done", tokens=40, cursor="c1")
    cursor = await repo.cursor("digest", ann.id)
    assert cursor is not None and (cursor.cursor, cursor.failures) == ("c1", 0)
    clock.advance(minutes=10)
    failed = await repo.start("digest", ann.id, clock.now())
    await repo.finish(failed, now=clock.now(), status="error", error="model down",
                      retry_at=clock.now() + timedelta(minutes=5))
    failed = await repo.start("digest", ann.id, clock.now())
    await repo.finish(failed, now=clock.now(), status="error", error="model down",
                      retry_at=clock.now() + timedelta(minutes=9))
    cursor = await repo.cursor("digest", ann.id)
    assert cursor is not None and cursor.cursor == "c1" and cursor.failures == 2
    assert cursor.retry_at == clock.now() + timedelta(minutes=9)
    await repo.checked("digest", ann.id, clock.now(), "nothing new")
    cursor = await repo.cursor("digest", ann.id)
    assert cursor is not None and cursor.last_check == "nothing new"
    system = await repo.start("janitor", None, clock.now())
    await repo.record_usage("extract:turn", ann.id, clock.now(), tokens=7)
    last = await repo.last("janitor", None)
    assert last is not None and last.id == system and last.status == "running"
    assert await repo.last("janitor", ann.id) is None
    assert await repo.interrupt_stale(clock.now()) == 1
    assert await repo.last_ok_started("digest", ann.id) == clock.now() - timedelta(minutes=10)
    assert [r.job for r in await repo.runs(person_id=ann.id, limit=2)] == [
        "extract:turn", "digest"]
    summary = {(s.job, s.person_id): s for s in await repo.summary()}
    digest = summary[("digest", ann.id)]
    assert (digest.runs, digest.errors, digest.tokens) == (3, 2, 40)
    assert summary[("janitor", None)].last.status == "interrupted"
    assert [s.job for s in await repo.summary(ann.id)] == ["digest", "extract:turn"]


async def test_a_reminder_is_claimed_once_and_completes(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "a", clock)
    repo = ReminderRepo(db)
    due = clock.now() + timedelta(hours=1)
    made = await repo.add(owner_id=ann.id, channel_id=chat.id, kind="reminder", text="tea",
                          due_at=due, timezone="UTC", now=clock.now(), recurrence="daily")
    later = await repo.add(owner_id=ann.id, channel_id=chat.id, kind="prompt", text="news",
                           due_at=due + timedelta(hours=1), timezone="UTC", now=clock.now())
    assert [r.id for r in await repo.upcoming(ann.id)] == [made.id, later.id]
    assert await repo.due(clock.now()) == []
    clock.advance(hours=1)
    [ready] = await repo.due(clock.now())
    claims = await asyncio.gather(*[repo.claim(ready, clock.now()) for _ in range(4)])
    assert sorted(claims) == [False, False, False, True]
    await repo.sending(ready.id, clock.now())
    assert await repo.release_stale_claims() == 1  # a restart: the send may have happened
    again = await repo.get(ready.id)
    assert again is not None and (again.state, again.unconfirmed) == ("pending", 1)
    assert await repo.claim(again, clock.now())
    await repo.failed(again, "429", clock.now() + timedelta(minutes=1))
    assert await repo.due(clock.now()) == []  # backing off
    clock.advance(minutes=1)
    [retry] = await repo.due(clock.now())
    assert retry.attempts == 1 and retry.last_error == "429"
    assert await repo.claim(retry, clock.now())
    await repo.complete(retry, clock.now(), next_due=due + timedelta(days=1))
    done = await repo.get(ready.id)
    assert done is not None
    assert (done.state, done.deliveries, done.attempts, done.due_at) == (
        "pending", 1, 0, due + timedelta(days=1))
    assert await repo.cancel(ann.id, later.id)
    assert not await repo.cancel(ann.id, later.id)
    assert [r.state for r in await repo.for_owner(ann.id)] == ["pending", "cancelled"]


async def test_a_dead_reminder_is_told_once(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "a", clock)
    repo = ReminderRepo(db)
    made = await repo.add(owner_id=ann.id, channel_id=chat.id, kind="reminder", text="tea",
                          due_at=clock.now(), timezone="UTC", now=clock.now())
    assert await repo.claim(made, clock.now())
    await repo.failed(made, "blocked by the user", None)
    told = await asyncio.gather(*[repo.told_dead(made.id, clock.now()) for _ in range(3)])
    assert sorted(told) == [False, False, True]


async def test_history_since_the_watermark(db: Database, clock: ManualClock) -> None:
    ann = await person(db, "ann", clock)
    chat = await channel(db, ann, "a", clock)
    repo = TranscriptRepo(db)
    first = await turn(db, chat, ann, "old", clock, reply="old reply")
    mark, rows = await history_since_watermark(repo, chat.id)
    assert mark is None and [r.id for r in rows] == first
    [summary] = await repo.append([NewRow(chat.id, None, clock.now(), "user", Role.SYSTEM,
                                          "summary of old", "c1", kind=RowKind.COMPACTION)])
    await db.execute_write("UPDATE transcript SET covers_to = ? WHERE id = ?",
                           (first[-1], summary))
    newer = await turn(db, chat, ann, "new", clock)
    mark, rows = await history_since_watermark(repo, chat.id)
    assert mark is not None and mark.id == summary
    assert [r.id for r in rows] == newer


def _unit(i: int) -> np.ndarray:
    return np.eye(TEST_DIM, dtype=np.float32)[i]


async def test_facts_are_found_by_vector_and_keyword_and_superseded(
        db: Database, clock: ManualClock) -> None:
    ann, bob = await person(db, "ann", clock), await person(db, "bob", clock)
    repo = FactRepo(db)
    tea = await repo.add(NewFact(ann.id, "user_specific", "Ann drinks green tea every morning",
                                 "user", attribute="favourite_drink", episode_ids=(5, 3),
                                 row_ids=(9,)), _unit(0), clock.now())
    city = await repo.add(NewFact(ann.id, "place", "Ann lives in Lisbon", "user",
                                  subject="ann", attribute="home_city"), _unit(1), clock.now())
    await repo.add(NewFact(bob.id, "user_specific", "Bob drinks tea too", "user"), _unit(0),
                   clock.now())
    hits = await repo.search(ann.id, "what tea does she drink", _unit(0))
    assert hits[0].fact.id == tea and {h.fact.owner_id for h in hits} == {ann.id}
    assert hits[0].bm25 is not None and hits[0].cosine == pytest.approx(1.0)
    [home] = await repo.search(ann.id, "home city", None)  # the attribute key's words
    assert home.fact.id == city and home.cosine is None
    assert await repo.sources(tea) == Sources((5, 3), (9,))
    clock.advance(days=1)
    moved = await repo.add(NewFact(ann.id, "place", "Ann lives in Porto now", "user",
                                   subject="ann", attribute="home_city"), _unit(1),
                           clock.now(), supersede=[city])
    old = await repo.get(city)
    assert old is not None and old.status == "superseded" and old.superseded_by == moved
    assert await repo.search(ann.id, "Lisbon", None) == []  # no longer live
    found = [h.fact.id for h in await repo.search(ann.id, "where does Ann live", _unit(1))]
    assert found[0] == moved and city not in found
    assert await repo.count(ann.id) == 2
    assert await repo.delete([tea]) == 1
    assert await db.fetchval("SELECT count(*) FROM fact_sources WHERE fact_id = ?", (tea,)) == 0


async def test_recall_finds_episodes_by_vector_and_keyword_for_their_owner_only(
        db: Database, clock: ManualClock) -> None:
    ann, bob = await person(db, "ann", clock), await person(db, "bob", clock)
    ann_chat, bob_chat = await channel(db, ann, "a", clock), await channel(db, bob, "b", clock)
    rows = await turn(db, ann_chat, ann, "we hiked up the volcano", clock)
    repo = EpisodeRepo(db)
    hike = await repo.insert(NewEpisode(ann.id, ann_chat.id, "Ann hiked up a volcano in Chile",
                                        "user", clock.now(), clock.now(), tuple(rows),
                                        key_terms="hiking volcano"), _unit(2), clock.now())
    cake = await repo.insert(NewEpisode(ann.id, ann_chat.id, "Ann baked a lemon cake", "user",
                                        clock.now(), clock.now(), ()), _unit(3), clock.now())
    await repo.insert(NewEpisode(bob.id, bob_chat.id, "Bob climbed a volcano", "user",
                                 clock.now(), clock.now(), ()), _unit(2), clock.now())
    source = EpisodeSource(recall_reads(db, db))
    query = RecallQuery(owner_id=ann.id, text="volcanoes", terms=("volcanoes",),
                        match=db.dialect.keyword_query("volcanoes"), vector=_unit(3),
                        now=clock.now(), k=5)
    found = {c.id: c for c in await source.candidates(query)}
    assert set(found) == {hike, cake}
    assert found[hike].bm25 is not None and found[hike].bm25 < 0  # stemmed: volcano(es)
    assert found[hike].cited_rows == tuple(rows)
    assert found[cake].cosine == pytest.approx(1.0) and found[cake].bm25 is None
