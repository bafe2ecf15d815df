"""The row indexer as the bot runs it (an after-turn hook per turn) and after a crash: every
recallable row gets one vector, the hooks of many turns share one pass, and a row stored
without its vector is indexed later. Real database files, the fake OpenAI server's
embeddings."""

from __future__ import annotations

import asyncio

import pytest

from strata.core.clock import ManualClock
from strata.core.errors import ModelError
from strata.core.types import Channel, NewRow, Person, Role, RowKind
from strata.memory.coordination.cursors import read_cursor
from strata.memory.engines.db import Database
from strata.memory.store.persons import PersonRepo
from strata.memory.store.transcript import TranscriptRepo
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import channel, embedder_for, person, row_indexer, turn


async def vectored(db: Database) -> set[int]:
    return {int(r[0]) for r in await db.fetchall("SELECT row_id FROM transcript_vec")}


def embedding_requests(server: FakeOpenAI) -> int:
    return sum(1 for path, _ in server.requests if path == "embeddings")


async def two_chats(db: Database, clock: ManualClock
                    ) -> tuple[Person, Channel, Person, Channel]:
    ann, bob = await person(db, "ann", clock), await person(db, "bob", clock)
    return ann, await channel(db, ann, "a", clock), bob, await channel(db, bob, "b", clock)


async def test_the_hooks_of_many_turns_share_one_pass_and_every_row_gets_one_vector(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    ann, ann_chat, bob, bob_chat = await two_chats(db, clock)
    indexer = row_indexer(db, embedder_for(fake_openai))
    rows: list[int] = []
    hooks = []
    for i in range(6):
        who, chat = (ann, ann_chat) if i % 2 else (bob, bob_chat)
        rows += await turn(db, chat, who, f"message {i} about gardens", clock, reply="noted")
        hooks.append(indexer(chat, who, f"t{i}"))
    tool = await turn(db, ann_chat, ann, "a tool result", clock, kind=RowKind.TOOL_RESULT)
    hooks.append(indexer(ann_chat, ann, "tool"))
    fake_openai.requests.clear()
    await asyncio.gather(*hooks)  # each returns once its rows have their vectors
    assert embedding_requests(fake_openai) == 1  # one pass, one batch, for seven turns
    assert await vectored(db) == set(rows)  # the tool row is never a recall candidate
    assert await read_cursor(db, "transcript_vec_cursors", ann_chat.id) == tool[0]
    # Nothing new: a later hook embeds nothing and stores nothing twice.
    await indexer(bob_chat, bob, "again")
    assert embedding_requests(fake_openai) == 1 and await vectored(db) == set(rows)


async def test_a_turn_that_ends_during_a_pass_is_indexed_by_the_next_one(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    ann, chat, _, _ = await two_chats(db, clock)
    indexer = row_indexer(db, embedder_for(fake_openai))
    first = await turn(db, chat, ann, "the first turn", clock, reply="one")
    fake_openai.requests.clear()
    running = asyncio.create_task(indexer(chat, ann, "t1"))

    async def embedding() -> None:  # the pass is embedding the first turn's rows
        while not fake_openai.requests:
            await asyncio.sleep(0.001)

    await asyncio.wait_for(embedding(), 10)
    second = await turn(db, chat, ann, "the second turn", clock, reply="two")
    await asyncio.gather(running, indexer(chat, ann, "t2"))
    assert await vectored(db) == set(first + second)


async def test_rows_stored_before_a_crash_are_indexed_after_the_restart(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    ann, ann_chat, bob, bob_chat = await two_chats(db, clock)
    # The process stored these turns and died before their hooks ran.
    lost = await turn(db, ann_chat, ann, "said before the crash", clock, reply="ok")
    lost += await turn(db, bob_chat, bob, "bob too", clock, reply="ok")
    restarted = row_indexer(db, embedder_for(fake_openai))
    later = await turn(db, ann_chat, ann, "said after the restart", clock, reply="ok")
    await restarted(ann_chat, ann, "after")  # the channel's next turn picks its rows up
    assert await vectored(db) == set(lost[:2] + later)
    assert await restarted.index_all() == 2  # and the catch-up every other channel's
    assert await vectored(db) == set(lost + later)


async def test_an_embedder_that_is_down_fails_the_hooks_and_the_rows_wait(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    ann, chat, _, _ = await two_chats(db, clock)
    indexer = row_indexer(db, embedder_for(fake_openai))
    rows = await turn(db, chat, ann, "kept for later", clock, reply="sure")
    fake_openai.fail_next(status=503, path="embeddings")
    with pytest.raises(ModelError):
        await asyncio.gather(indexer(chat, ann, "t1"), indexer(chat, ann, "t1-again"))
    assert await vectored(db) == set()
    assert await read_cursor(db, "transcript_vec_cursors", chat.id) == 0  # not passed over
    await indexer(chat, ann, "t2")
    assert await vectored(db) == set(rows)


async def test_two_processes_indexing_one_database_store_each_vector_once(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    ann, ann_chat, bob, bob_chat = await two_chats(db, clock)
    rows: list[int] = []
    for i in range(4):
        rows += await turn(db, ann_chat, ann, f"ann says {i}", clock, reply="mm")
        rows += await turn(db, bob_chat, bob, f"bob says {i}", clock, reply="mm")
    one = row_indexer(db, embedder_for(fake_openai))
    other = row_indexer(db, embedder_for(fake_openai))
    counts = await asyncio.gather(one.index_all(), other.index_all())
    await asyncio.gather(one(ann_chat, ann, "x"), other(bob_chat, bob, "y"))
    assert await vectored(db) == set(rows)
    assert await db.fetchval("SELECT count(*) FROM transcript_vec") == len(rows)
    assert sum(counts) == len(rows)  # each row's vector stored by one of them


async def test_a_paused_owner_gets_no_vectors_and_is_passed_over(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    ann, ann_chat, bob, bob_chat = await two_chats(db, clock)
    await PersonRepo(db).set_paused(bob.id, True)
    hidden = await turn(db, bob_chat, bob, "bob's secret", clock, reply="ok")
    kept = await turn(db, ann_chat, ann, "ann's plans", clock, reply="ok")
    indexer = row_indexer(db, embedder_for(fake_openai))
    await asyncio.gather(indexer(bob_chat, bob, "b"), indexer(ann_chat, ann, "a"))
    assert await vectored(db) == set(kept)
    assert await read_cursor(db, "transcript_vec_cursors", bob_chat.id) == hidden[-1]


async def test_an_append_of_many_rows_keeps_their_order_and_their_fields(
        db: Database, clock: ManualClock) -> None:
    ann, ann_chat, bob, bob_chat = await two_chats(db, clock)
    repo = TranscriptRepo(db)
    rows = [NewRow(ann_chat.id, ann.id, clock.now(), "user", Role.USER, "here", "t1",
                   lat=52.5, lon=13.4, platform_msg_id="m1"),
            NewRow(bob_chat.id, None, clock.now(), "user", Role.ASSISTANT, "", "t1"),
            NewRow(ann_chat.id, None, clock.now(), "user", Role.TOOL, "{}", "t1",
                   kind=RowKind.TOOL_CALL)]
    ids = await repo.append(rows)
    assert ids == sorted(ids) and len(set(ids)) == 3
    got = [await repo.get(i) for i in ids]
    assert [(g.channel_id, g.owner_id, g.person_id, g.role, g.kind, g.content, g.lat, g.lon,
             g.platform_msg_id) for g in got if g is not None] == [
        (ann_chat.id, ann.id, ann.id, Role.USER, RowKind.MESSAGE, "here", 52.5, 13.4, "m1"),
        (bob_chat.id, bob.id, None, Role.ASSISTANT, RowKind.MESSAGE, "", None, None, None),
        (ann_chat.id, ann.id, None, Role.TOOL, RowKind.TOOL_CALL, "{}", None, None, None)]
    assert await repo.append([]) == []
    with pytest.raises(ValueError, match="no channel 9999"):
        await repo.append([rows[0], NewRow(9_999, None, clock.now(), "user", Role.USER, "x",
                                           "t2")])
    assert await repo.count() == 3  # the failed append stored none of its rows


async def test_a_write_statement_on_postgresql_must_take_the_write_lock(db: Database) -> None:
    sql = "INSERT INTO meta (key, value) SELECT 'probe', 'x' FROM {}(SELECT 1) AS one RETURNING key"
    if db.engine == "postgres":  # autocommit: without the lock, ids could commit out of order
        with pytest.raises(ValueError, match="write lock"):
            await db.write_statement(sql.format(""))
    assert [r[0] for r in await db.write_statement(sql.format(db.dialect.write_lock))] == [
        "probe"]
    assert await db.fetchval("SELECT value FROM meta WHERE key = 'probe'") == "x"
