"""Episode cutting with a real database and the fake model server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from strata.bot.llm import OpenAIChatModel
from strata.bot.writers.episodes import EpisodeCutter
from strata.core.clock import ManualClock
from strata.core.types import ChannelKind, RowKind
from strata.memory.engines.db import Database
from strata.memory.lifecycle.episode_cut import CutSettings
from strata.memory.store.episodes import EpisodeRepo
from strata.memory.store.persons import PersonRepo
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import (
    channel,
    embedder_for,
    episode_cutter,
    filler,
    person,
    row_indexer,
    turn,
    turns,
)

# Every test runs on SQLite and on PostgreSQL (tests/conftest.py).

# Its summary is about the conversation (`grounding.check_summary`): filler(0)'s words.
GOOD = {"summary": f"Alice talked about {filler(0)}.", "salience": 0.8,
        "emotion": {"label": "joy", "intensity": 0.6}, "key_terms": ["garden", "Alice"]}


def cutter(db: Database, fake: FakeOpenAI, clock: ManualClock, *, use_model: bool = True,
           window: int = 4, pause: float = 30.0) -> EpisodeCutter:
    chat = OpenAIChatModel(base_url=fake.base_url, model=fake.model, api_key="t", max_retries=0)
    return episode_cutter(db, embedder_for(fake), clock, chat,
                          CutSettings(window_turns=window, pause_minutes=pause,
                                      use_model=use_model, assistant_name="Strata"))


def summary_requests(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [b for b in fake.chat_requests() if b.get("response_format")]


async def test_windows_of_n_turns_become_llm_episodes(db: Database, fake_openai: FakeOpenAI,
                                                      clock: ManualClock) -> None:
    fake_openai.responder = lambda body: json.dumps(GOOD)
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    ids = await turns(db, ch, alice, [filler(i) for i in range(10)], clock)
    made = await cutter(db, fake_openai, clock).cut(ch.id, clock.now())
    assert len(made) == 2  # 10 turns, windows of 4: two closed, the third still open
    repo = EpisodeRepo(db)
    first = await repo.get(made[0])
    assert first is not None and first.method == "llm" and first.salience == 0.8
    assert first.emotion == "joy" and "garden" in first.key_terms
    assert await repo.cited_rows(made[0]) == ids[:8]
    assert await repo.cited_rows(made[1]) == ids[8:16]
    reqs = summary_requests(fake_openai)
    assert len(reqs) == 2 and reqs[0]["response_format"]["json_schema"]["name"] == "EpisodeSummary"
    assert filler(0) in reqs[0]["messages"][-1]["content"]
    assert (await repo.embeddings(made)).shape == (2, db.dim)
    # Nothing new: the open window waits; after a pause it closes.
    assert await cutter(db, fake_openai, clock).cut(ch.id, clock.now()) == []
    clock.advance(minutes=31)
    third = await cutter(db, fake_openai, clock).cut(ch.id, clock.now())
    assert len(third) == 1 and await repo.cited_rows(third[0]) == ids[16:]


async def test_pause_splits_windows_and_flush_closes_the_open_one(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    a = await turns(db, ch, alice, ["one", "two"], clock)
    clock.advance(hours=2)
    b = await turns(db, ch, alice, ["three"], clock)
    c = cutter(db, fake_openai, clock, use_model=False, window=10)
    made = await c.cut(ch.id, clock.now())
    assert [await EpisodeRepo(db).cited_rows(e) for e in made] == [a]
    flushed = await c.flush(ch.id, clock.now())
    assert [await EpisodeRepo(db).cited_rows(e) for e in flushed] == [b]
    assert fake_openai.chat_requests() == []  # use_model=false never calls the model


async def test_malformed_json_is_retried_once_then_extractive(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    fake_openai.reply("this is not JSON", json.dumps({**GOOD, "salience": 7}))
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    ids = await turns(db, ch, alice, ["I planted tomatoes today!", "my dog Rex dug them up"],
                      clock)
    made = await cutter(db, fake_openai, clock, window=2).cut(ch.id, clock.now())
    assert len(summary_requests(fake_openai)) == 2
    ep = await EpisodeRepo(db).get(made[0])
    assert ep is not None and ep.method == "extractive"
    assert "alice: I planted tomatoes today!" in ep.summary and "Strata: I see." in ep.summary
    assert 0.2 <= ep.salience <= 0.9 and "tomatoes" in ep.key_terms
    assert await EpisodeRepo(db).cited_rows(made[0]) == ids


async def test_model_down_still_gives_an_episode_and_retry_then_success(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    await turns(db, ch, alice, [filler(i) for i in range(4)], clock)
    fake_openai.fail_next(status=500, path="chat")
    fake_openai.reply(json.dumps(GOOD), "not json", "not json")
    made = await cutter(db, fake_openai, clock, window=2).cut(ch.id, clock.now())
    methods = [(await EpisodeRepo(db).get(e)).method for e in made]  # type: ignore[union-attr]
    assert methods == ["llm", "extractive"]


async def test_muted_sources_and_paused_people_make_no_episodes(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    bob = await person(db, "bob", clock)
    sched = await channel(db, alice, "alice/scheduled", clock, kind=ChannelKind.BACKGROUND,
                          source="scheduled")
    await turns(db, sched, alice, ["reminder one", "reminder two", "three"], clock)
    bob_ch = await channel(db, bob, "bob/d", clock)
    await turns(db, bob_ch, bob, ["secret one", "secret two", "three"], clock)
    await PersonRepo(db).set_paused(bob.id, True)
    c = cutter(db, fake_openai, clock, use_model=False, window=1)
    assert await c.cut_all(clock.now(), flush=True) == []
    assert await EpisodeRepo(db).for_owner(alice.id) == []
    assert await EpisodeRepo(db).for_owner(bob.id) == []
    assert await row_indexer(db, embedder_for(fake_openai)).index_all() == 0
    # The cursors moved on: resuming does not resurrect what was said while paused.
    await PersonRepo(db).set_paused(bob.id, False)
    assert await c.cut_all(clock.now(), flush=True) == []
    assert await row_indexer(db, embedder_for(fake_openai)).index_all() == 0


async def test_shared_room_skips_only_the_paused_speaker(
        db: Database, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    bob = await person(db, "bob", clock)
    room_scope = await PersonRepo(db).room_scope("console", "room1", "Room", clock.now())
    room = await channel(db, room_scope, "room1", clock, kind=ChannelKind.SHARED)
    kept = await turn(db, room, alice, "alice likes jazz", clock)
    await turn(db, room, bob, "bob hides his diary", clock)
    await PersonRepo(db).set_paused(bob.id, True)
    made = await cutter(db, fake_openai, clock, use_model=False).flush(room.id, clock.now())
    assert len(made) == 1 and await EpisodeRepo(db).cited_rows(made[0]) == kept
    assert await row_indexer(db, embedder_for(fake_openai)).index_all() == 1


async def test_concurrent_cutters_never_duplicate(db: Database, fake_openai: FakeOpenAI,
                                                  clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    await turns(db, ch, alice, [filler(i) for i in range(12)], clock)
    one = cutter(db, fake_openai, clock, use_model=False, window=2)
    two = cutter(db, fake_openai, clock, use_model=False, window=2)
    made = await asyncio.gather(one.flush(ch.id, clock.now()), two.flush(ch.id, clock.now()))
    episodes = await EpisodeRepo(db).for_owner(alice.id)
    assert len(episodes) == 6 == len(made[0]) + len(made[1])
    cited = [r for e in episodes for r in await EpisodeRepo(db).cited_rows(e.id)]
    assert len(cited) == len(set(cited)) == 24


async def test_tool_and_compaction_rows_are_not_cited(db: Database, fake_openai: FakeOpenAI,
                                                      clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    msg = await turn(db, ch, alice, "hello there", clock, reply="hi")
    await turn(db, ch, None, "summary so far", clock, kind=RowKind.COMPACTION)
    made = await cutter(db, fake_openai, clock, use_model=False).flush(ch.id, clock.now())
    assert await EpisodeRepo(db).cited_rows(made[0]) == msg
    assert await cutter(db, fake_openai, clock).flush(ch.id, clock.now()) == []
