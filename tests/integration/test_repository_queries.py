"""The repository methods that replaced SQL in jobs, commands and the CLI, on a real database."""

from __future__ import annotations

import numpy as np

from strata.core.clock import ManualClock
from strata.core.types import NewRow, Role, RowKind
from strata.memory.engines.db import Database
from strata.memory.store.episodes import ApexCount, EpisodeRepo, NewEpisode
from strata.memory.store.persons import PersonRepo
from strata.memory.store.transcript import RowFilter, TranscriptRepo
from tests.conftest import TEST_DIM
from tests.memory_helpers import channel, person, turn


async def test_transcript_filters_counts_and_watermarks(db: Database, clock: ManualClock) -> None:
    alice, bob = await person(db, "alice", clock), await person(db, "bob", clock)
    chat = await channel(db, alice, "alice/dm", clock)
    feed = await channel(db, alice, "alice/feed", clock, source="feed")
    other = await channel(db, bob, "bob/dm", clock)
    repo = TranscriptRepo(db)
    first = await turn(db, chat, alice, "hello", clock, reply="hi")
    clock.advance(minutes=5)
    [located] = await repo.append([NewRow(chat.id, alice.id, clock.now(), "user", Role.USER,
                                          "at the park", "t2", lat=48.85, lon=2.35)])
    [fed] = await turn(db, feed, alice, "news item", clock)
    [bobs] = await turn(db, other, bob, "bob here", clock)

    users = RowFilter(("user",), role=Role.USER, kind=RowKind.MESSAGE)
    assert await repo.newest_id(alice.id, users) == located
    assert await repo.newest_id(alice.id) == fed
    assert await repo.newest_id() == bobs
    assert await repo.newest_id(bob.id, RowFilter(())) is None  # no sources: no rows
    assert [r.id for r in await repo.matching(alice.id, users, limit=10)] == [first[0], located]
    assert [r.id for r in await repo.matching(alice.id, users, after_id=first[0],
                                              limit=10)] == [located]
    assert [r.id for r in await repo.matching(alice.id, users, limit=1, newest=True)] == [located]
    where = RowFilter(("user",), located=True, until=clock.now())
    [place] = await repo.matching(alice.id, where, limit=1, newest=True)
    assert (place.lat, place.lon) == (48.85, 2.35)
    clock.advance(minutes=-60)
    assert await repo.matching(alice.id, RowFilter(("user",), located=True, until=clock.now()),
                               limit=1) == []

    assert await repo.count() == 5
    assert await repo.count(alice.id) == 4
    assert await repo.count(alice.id, messages_only=True) == 4
    assert await repo.count(channel_id=chat.id) == 3
    assert await repo.last_said_at(alice.id) == place.ts
    assert await repo.last_said_at(alice.id, skip=3) is None
    assert await repo.last_user_row_at(bob.id) is not None
    assert await repo.uncut_channels(alice.id, ["user"]) == {chat.id: located}
    assert await repo.uncut_channels(alice.id, []) == {}


async def test_pause_records_where_memory_stopped(db: Database, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    chat = await channel(db, alice, "alice/dm", clock)
    ids = await turn(db, chat, alice, "before the pause", clock, reply="ok")
    persons = PersonRepo(db)
    assert await persons.paused_after(alice.id) is None
    await persons.pause(alice.id, clock.now())
    paused = await persons.get(alice.id)
    assert paused is not None and paused.paused
    assert await persons.paused_after(alice.id) == ids[-1]
    await persons.resume(alice.id)
    resumed = await persons.get(alice.id)
    assert resumed is not None and not resumed.paused
    assert await persons.paused_after(alice.id) is None
    assert (await persons.export(alice.id))["person"]["name"] == "alice"


async def test_episode_counts_and_recent_summaries(db: Database, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    chat = await channel(db, alice, "alice/dm", clock)
    ids = await turn(db, chat, alice, "hello", clock, reply="hi")
    repo = EpisodeRepo(db)
    vec = np.ones(TEST_DIM, dtype=np.float32)
    made = []
    for i, source in enumerate(["user", "user", "dmn"]):
        clock.advance(minutes=10)
        made.append(await repo.insert(NewEpisode(
            owner_id=alice.id, channel_id=chat.id, summary=f"episode {i}", source=source,
            started_at=clock.now(), ended_at=clock.now(), row_ids=tuple(ids)), vec, clock.now()))
    assert await repo.count(alice.id) == 3
    assert await repo.newest_id(alice.id, except_source="dmn") == made[1]
    assert await repo.recent_summaries(alice.id, except_source="dmn", limit=1) == ["episode 1"]
    assert await repo.recent_summaries(alice.id, except_source="dmn", limit=5) == [
        "episode 0", "episode 1"]
    assert await repo.apex_counts(alice.id) == [ApexCount(chat.id, 0, 3)]
    await repo.tombstone(made[:2], made[2], clock.now())
    assert await repo.count(alice.id) == 1
    assert await repo.apex_counts(alice.id) == [ApexCount(chat.id, 0, 1)]
