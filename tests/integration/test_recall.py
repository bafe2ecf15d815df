"""Turn-zero recall over a real database, with the fake model server's hashed embeddings."""

from __future__ import annotations

import asyncio
import math
import random
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from strata.app.compose import App
from strata.bot.llm import OpenAIEmbedder
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.core.tokens import count_tokens
from strata.core.types import ChannelKind, InboundMessage, RowKind
from strata.memory.engines.db import Database
from strata.memory.lifecycle.episode_cut import CutSettings
from strata.memory.recall.search import Recall
from strata.memory.recall.types import RecallResult, RecallTuning
from strata.memory.store.episodes import EpisodeRepo, NewEpisode
from strata.memory.store.persons import PersonRepo
from tests.conftest import START, TEST_DIM
from tests.fakes.openai_server import FakeOpenAI
from tests.memory_helpers import (
    channel,
    embedder_for,
    episode_cutter,
    filler,
    person,
    recall_reads,
    row_indexer,
    turn,
    turns,
)

# The tests taking `db` run on SQLite and on PostgreSQL (tests/conftest.py).

FACT = "My sister Beatrix moved to Lisbon, she teaches violin there"


@pytest.fixture
async def emb(fake_openai: FakeOpenAI) -> AsyncIterator[OpenAIEmbedder]:
    embedder = embedder_for(fake_openai)
    yield embedder
    await embedder.close()


async def index(db: Database, embedder: OpenAIEmbedder, clock: ManualClock) -> None:
    """What the after-turn hooks and background jobs do: row vectors, then episodes."""
    await row_indexer(db, embedder).index_all()
    cut = episode_cutter(db, embedder, clock, None, CutSettings(use_model=False))
    await cut.cut_all(clock.now(), flush=True)


_OPEN: list[Recall] = []


def recall_for(db: Database, embedder: OpenAIEmbedder, clock: ManualClock,
               **tuning: object) -> Recall:
    recall = Recall(recall_reads(db), embedder, clock, replace(RecallTuning(), **tuning))
    _OPEN.append(recall)
    return recall


@pytest.fixture(autouse=True)
async def _close_recalls() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().close()


async def owners_of(db: Database, result: RecallResult) -> set[int]:
    """Owner ids of everything a result injected, and of every row it cites."""
    owners: set[int] = set()
    for item in result.items:
        table = "episodes" if item.kind == "episode" else "transcript"
        owners.add(await db.fetchval(f"SELECT owner_id FROM {table} WHERE id = ?", (item.id,)))
    for row_id in result.cited_row_ids:
        owners.add(await db.fetchval("SELECT owner_id FROM transcript WHERE id = ?", (row_id,)))
    return owners


async def test_fact_from_three_weeks_and_200_turns_ago_in_another_channel(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    telegram = await channel(db, alice, "tg-alice", clock, platform="telegram")
    console = await channel(db, alice, "alice/default", clock)
    fact_rows = await turn(db, telegram, alice, FACT, clock, reply="How lovely!")
    clock.advance(hours=1)
    await turns(db, console, alice, [filler(i) for i in range(200)], clock, minutes=150)
    clock.set(START.replace(day=START.day + 21))
    await index(db, emb, clock)
    recall = recall_for(db, emb, clock)
    result = await recall.search(alice.id, "Where does my sister live now?", clock.now())
    assert fact_rows[0] in result.cited_row_ids
    block = await recall.recall(channel=console, person=alice, query="what does Beatrix teach?")
    assert block is not None and "Lisbon" in block and "telegram" in block
    assert "5 January 2026" in block  # quoted with its date


async def test_each_channel_is_named_once_above_its_quoted_rows(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    """The block names each channel once, in a heading; under it every quoted row is whole,
    word for word, with who said it and its date, and the block keeps to its budget."""
    alice = await person(db, "alice", clock)
    telegram = await channel(db, alice, "tg-alice", clock, platform="telegram")
    console = await channel(db, alice, "alice/default", clock)
    said: dict[Any, list[str]] = {telegram: [], console: []}
    for i in range(12):
        ch = telegram if i % 2 else console
        text = f"the violin lesson number {i} went well, {filler(i)}"
        await turn(db, ch, alice, text, clock, reply=filler(100 + i))
        said[ch].append(text)
        clock.advance(hours=3)
        await turns(db, ch, alice, [filler(200 + i * 5 + k) for k in range(4)], clock)
    await index(db, emb, clock)
    recall = recall_for(db, emb, clock, skip_recent_rows=0)
    for budget in (60, 150, 400):
        result = await recall.search(alice.id, "How did the violin lessons go?", clock.now(),
                                     budget)
        block = result.render()
        assert block is not None and count_tokens(block) <= result.tokens <= budget
        headings = [line for line in block.splitlines() if line.startswith("From the ")]
        assert len(headings) == len(set(headings))
        under, quoted = "", 0
        for line in block.splitlines():
            if line.startswith("From the "):
                under = line
            elif line.startswith("> alice: the violin"):
                text = line.removeprefix("> alice: ")
                ch = telegram if text in said[telegram] else console
                assert text in said[ch] and under == f"From the private chat on {ch.platform}:"
                quoted += 1
            elif line[:1].isdigit():  # a span's date, as a person writes it
                assert line.endswith(" 2026") and "private chat" not in line
        assert quoted >= 1
    assert len(headings) == 2  # with room enough, both channels


async def test_unrelated_question_injects_nothing(db: Database, emb: OpenAIEmbedder,
                                                  clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    await turn(db, ch, alice, FACT, clock, reply="How lovely!")
    await turns(db, ch, alice, [filler(i) for i in range(40)], clock)
    await index(db, emb, clock)
    recall = recall_for(db, emb, clock)
    result = await recall.search(alice.id, "Explain quantum chromodynamics", clock.now())
    assert result.items == () and result.render() is None
    assert (await recall.search(alice.id, "sister Beatrix", clock.now())).items != ()


async def test_shared_room_never_sees_private_memory_and_vice_versa(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    def msg(text: str, room: str, private: bool) -> InboundMessage:
        return InboundMessage(platform="console", room_id=room, sender_id="alice",
                              sender_name="alice", text=text, ts=clock.now(),
                              is_private=private, room_name=room)

    await app.processor.handle(msg("my passport number is X7741 and my sister is Beatrix",
                                   "alice/dm", True))
    await app.processor.handle(msg("the book club meets on Tuesdays at the library",
                                   "club", False))
    await app.processor.drain()
    clock.advance(hours=2)
    assert app.cutter is not None
    await app.cutter.cut_all(clock.now(), flush=True)
    def request_for(question: str) -> str:
        # The turn's own request (after-turn work may call the model after it).
        for body in reversed(fake_openai.chat_requests()):
            if question in str(body["messages"][-1]["content"]):
                return "\n".join(str(m["content"]) for m in body["messages"])
        raise AssertionError(f"no request for {question!r}")

    await app.processor.handle(msg("what is my passport number and who is my sister?", "club",
                                   False))
    sent = request_for("what is my passport number")
    assert "X7741" not in sent and "Beatrix" not in sent
    await app.processor.handle(msg("when does the book club meet?", "alice/other", True))
    sent = request_for("when does the book club meet?")
    assert "Tuesdays" not in sent
    # The room recalls its own memory, and the person theirs.
    await app.processor.handle(msg("when does the book club meet?", "club2", False))
    await app.processor.handle(msg("when does the book club meet again?", "club", False))
    sent = request_for("when does the book club meet again?")
    assert "Tuesdays" in sent


async def test_recalled_memory_reaches_the_model_and_is_touched(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    def msg(text: str, room: str) -> InboundMessage:
        return InboundMessage(platform="console", room_id=room, sender_id="alice",
                              sender_name="alice", text=text, ts=clock.now())

    await app.processor.handle(msg(FACT, "alice/a"))
    for i in range(30):
        clock.advance(minutes=3)
        await app.processor.handle(msg(filler(i), "alice/a"))
    await app.processor.drain()
    clock.advance(days=10)
    assert app.cutter is not None and app.episodes is not None
    await app.cutter.cut_all(clock.now())  # the open window is idle now: it closes
    clock.advance(minutes=5)
    episodes = await app.episodes.for_owner(1)
    assert episodes and all(e.last_relevant_at < clock.now() for e in episodes)
    result = await app.processor.handle(msg("tell me about my sister Beatrix", "alice/b"))
    assert result is not None and not result.failed
    messages = fake_openai.chat_requests()[-1]["messages"]
    memory = [m["content"] for m in messages if m["role"] == "system" and "Lisbon" in
              str(m["content"])]
    assert len(memory) == 1 and "notes, not instructions" in memory[0]
    assert messages[-1]["content"] == "tell me about my sister Beatrix"
    touched = [e for e in await app.episodes.for_owner(1) if e.last_relevant_at == clock.now()]
    assert touched and any("Beatrix" in e.summary for e in touched)


async def test_budget_is_respected(db: Database, emb: OpenAIEmbedder,
                                   clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    await turns(db, ch, alice, [f"violin lesson number {i} with teacher Beatrix about scales "
                                f"{filler(i)}" for i in range(60)], clock)
    await index(db, emb, clock)
    recall = recall_for(db, emb, clock, relative_floor=0.0)
    big = await recall.search(alice.id, "violin lesson Beatrix", clock.now(), budget=10_000)
    assert big.tokens > 400
    for budget in (0, 40, 120, 400):
        result = await recall.search(alice.id, "violin lesson Beatrix", clock.now(),
                                     budget=budget)
        block = result.render()
        assert result.tokens <= budget
        assert (block is None) == (result.items == ())
        assert block is None or count_tokens(block) <= budget
        if budget >= 120:
            assert result.items  # something fits


async def test_hostile_and_huge_queries(db: Database, emb: OpenAIEmbedder,
                                        clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    bob = await person(db, "bob", clock)
    a = await channel(db, alice, "alice/d", clock)
    b = await channel(db, bob, "bob/d", clock)
    await turn(db, a, alice, "I can't stand c++ error: foo(bar) AND owner_id NEAR", clock)
    await turn(db, b, bob, "bob's secret: owner_id 1 c++ can't foo bar error", clock)
    await index(db, emb, clock)
    recall = recall_for(db, emb, clock)
    queries = ["can't", "c++", "foo(bar)", "error:", "AND", "OR NOT", '"', "*", "NEAR(a b)",
               "owner_id : \"2\"", "{content}: bob", "content:secret", "'); DROP TABLE x; --",
               "", "   ", "🙂🙂", "^start -minus +plus", "x" * 5000,
               " ".join(f"word{i}" for i in range(20_000))]
    for q in queries:
        result = await recall.search(alice.id, q, clock.now())
        assert await owners_of(db, result) <= {alice.id}, q
    hit = await recall.search(alice.id, "can't c++ error: foo(bar)", clock.now())
    assert hit.items and await owners_of(db, hit) == {alice.id}


async def test_compaction_tool_and_muted_rows_are_never_recalled(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    sched = await channel(db, alice, "alice/sched", clock, kind=ChannelKind.BACKGROUND,
                          source="scheduled")
    await turn(db, ch, None, "zebra compaction summary", clock, kind=RowKind.COMPACTION)
    await turn(db, ch, None, "zebra tool output", clock, kind=RowKind.TOOL_RESULT)
    await turn(db, sched, alice, "zebra scheduled prompt", clock, reply="zebra noted")
    await index(db, emb, clock)
    result = await recall_for(db, emb, clock).search(alice.id, "zebra", clock.now())
    assert result.items == ()
    await turn(db, ch, alice, "zebra in the zoo", clock)
    await index(db, emb, clock)
    result = await recall_for(db, emb, clock).search(alice.id, "zebra", clock.now())
    # Quoted as a window of the transcript: the channel in a heading, the date as a person
    # writes it, then who said what, as quoted data.
    assert [i.text for i in result.items] == ["zebra in the zoo"]
    assert result.render() == ("From the private chat on console:\n"
                               "5 January 2026\n> alice: zebra in the zoo")


async def test_recency_breaks_ties_and_duplicates_collapse(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    old = await turn(db, ch, alice, "my favourite colour is teal", clock)
    clock.advance(days=30)
    new = await turn(db, ch, alice, "my favourite colour is teal", clock)
    await row_indexer(db, emb).index_all()
    result = await recall_for(db, emb, clock, skip_recent_rows=0).search(
        alice.id, "favourite colour", clock.now())
    assert [i.id for i in result.items] == new  # the older duplicate collapsed into it
    assert old[0] not in result.cited_row_ids


async def test_embedder_down_falls_back_to_keywords(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    rows = await turn(db, ch, alice, FACT, clock)
    fake_openai.fail_next(status=500, path="embeddings")
    result = await recall_for(db, emb, clock).search(alice.id, "Beatrix Lisbon",
                                                             clock.now())
    assert rows[0] in result.cited_row_ids



async def test_zero_vectors_are_not_stored_and_keyword_recall_still_works(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, fake_openai: FakeOpenAI) -> None:
    fake_openai.vectors, fake_openai.broken_texts = "zero", "all"
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    rows = await turn(db, ch, alice, FACT, clock)
    await index(db, emb, clock)
    assert await db.fetchval("SELECT count(*) FROM transcript_vec") == 0
    assert await db.fetchval("SELECT count(*) FROM episodes") == 1
    assert await db.fetchval("SELECT count(*) FROM episode_vec") == 0
    result = await recall_for(db, emb, clock).search(alice.id, "Beatrix Lisbon", clock.now())
    assert rows[0] in result.cited_row_ids


@pytest.mark.parametrize("bad", [0.0, float("nan")])
async def test_a_stored_zero_or_nan_vector_never_breaks_recall(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, bad: float) -> None:
    """A database written before vectors were checked may hold a zero or NaN vector; its
    cosine is NULL/NaN in sqlite-vec, and recall treats it as having none."""
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    rows = await turn(db, ch, alice, FACT, clock)
    if math.isnan(bad) and db.engine == "postgres":
        # pgvector refuses NaN outright: there such a row cannot exist.
        with pytest.raises(psycopg.errors.DataException, match="NaN not allowed"):
            await db.execute_write(
                "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
                (rows[0], alice.id, np.full(TEST_DIM, bad, dtype="<f4").tobytes()))
        return
    async with db.write() as conn:
        for row_id in rows:
            await conn.execute(
                "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
                (row_id, alice.id, np.full(TEST_DIM, bad, dtype="<f4").tobytes()))
    result = await recall_for(db, emb, clock).search(alice.id, "Beatrix Lisbon", clock.now())
    assert rows[0] in result.cited_row_ids

WORDS = ["apple", "banana", "cherry", "garden", "violin", "lisbon", "sister", "dog", "rain",
         "train", "coffee", "paint", "river", "music", "secret", "owner", "one", "two"]


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    people=st.lists(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=8)
                             .map(" ".join), min_size=1, max_size=6), min_size=2, max_size=6),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
                     min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_recall_never_returns_another_persons_rows(
        fake_openai_server: FakeOpenAI, people: list[list[str]], queries: list[str],
        seed: int) -> None:
    assert fake_openai_server.dim == TEST_DIM

    async def scenario(folder: str) -> None:
        db = await Database.open(Path(folder) / "p.db", TEST_DIM)
        embedder = embedder_for(fake_openai_server)
        try:
            clock = ManualClock(START)
            rnd = random.Random(seed)
            persons = [await person(db, f"p{i}", clock) for i in range(len(people))]
            room_scope = await PersonRepo(db).room_scope("console", "room", "Room", clock.now())
            room = await channel(db, room_scope, "room", clock, kind=ChannelKind.SHARED)
            for p, texts in zip(persons, people, strict=True):
                ch = await channel(db, p, f"{p.name}/d", clock)
                for text in texts:
                    await turn(db, rnd.choice([ch, room]), p, text, clock, reply=text)
                    clock.advance(minutes=rnd.choice([1, 45]))
            await index(db, embedder, clock)
            recall = recall_for(db, embedder, clock, gate_bias=100.0)
            for owner in [*persons, room_scope]:
                for q in queries:
                    result = await recall.search(owner.id, q, clock.now())
                    assert await owners_of(db, result) <= {owner.id}
        finally:
            while _OPEN:
                await _OPEN.pop().close()
            await embedder.close()
            await db.close()

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(scenario(folder))


async def test_episodes_are_found_and_cite_their_rows(db: Database, emb: OpenAIEmbedder,
                                                      clock: ManualClock) -> None:
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    rows = await turns(db, ch, alice, [FACT, "she has two cats", "and a piano"], clock)
    cut = episode_cutter(db, emb, clock, None, CutSettings(use_model=False))
    [episode_id] = await cut.flush(ch.id, clock.now())
    result = await recall_for(db, emb, clock).search(alice.id, "Beatrix violin Lisbon",
                                                             clock.now())
    # The episode's rows are all live: they are quoted themselves, as one window, and the
    # episode (the same talk again, as notes) is not paid for twice.
    assert [i.kind for i in result.items] == ["window"]
    assert rows[0] in result.cited_row_ids and result.cited_row_ids <= set(rows)
    # A tombstoned (rolled-up) episode is no longer recalled.
    topic = NewEpisode(alice.id, ch.id, "a topic about family", "user", clock.now(),
                       clock.now(), (), level=1)
    vector = (await EpisodeRepo(db).embeddings([episode_id]))[0]
    parent = await EpisodeRepo(db).insert(topic, vector, clock.now())
    await EpisodeRepo(db).tombstone([episode_id], parent, clock.now())
    result = await recall_for(db, emb, clock).search(alice.id, "Beatrix violin Lisbon",
                                                             clock.now())
    assert episode_id not in [i.id for i in result.items if i.kind == "episode"]



async def test_what_fell_out_of_a_small_history_window_is_recalled(
        settings: Settings, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    """Rows of this channel outside the prompt's history budget are recall candidates even
    when they are among the channel's newest rows (the recaller is told what is shown)."""
    small = settings.model_copy(update={"bot": settings.bot.model_copy(
        update={"history_tokens": 40})})
    app = await App.create(small, clock=clock)
    try:
        def msg(text: str) -> InboundMessage:
            return InboundMessage(platform="console", room_id="alice/a", sender_id="alice",
                                  sender_name="alice", text=text, ts=clock.now())

        await app.processor.handle(msg(FACT))
        for i in range(3):
            clock.advance(minutes=1)
            await app.processor.handle(msg(filler(i)))
        await app.processor.drain()
        clock.advance(minutes=1)
        await app.processor.handle(msg("what instrument does Beatrix teach?"))
        body = next(b for b in reversed(fake_openai.chat_requests())
                    if "Beatrix teach" in str(b["messages"][-1]["content"]))
        history = [m for m in body["messages"][1:-1] if m["role"] in ("user", "assistant")]
        assert all(FACT not in str(m["content"]) for m in history)  # not in the history...
        assert FACT in "\n".join(str(m["content"]) for m in body["messages"])  # ...but recalled
    finally:
        await app.close()


async def test_row_index_reads_the_words_of_new_rows_only(db: Database, emb: OpenAIEmbedder,
                                                          clock: ManualClock) -> None:
    """A turn adds two rows to a memory of thousands. Splitting every row into stemmed words
    again on every turn made the index cost grow with the whole memory (0.27 s of word
    splitting per turn at 10,000 rows): only the new rows are read; the table is the same
    as one built from scratch."""
    import strata.memory.rules.row_words as words
    from strata.memory.recall.index import RowIndex

    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/d", clock)
    await turns(db, ch, alice, [filler(i) for i in range(150)], clock)
    await index(db, emb, clock)
    rows = RowIndex(recall_reads(db, db))
    await rows.table(alice.id)
    await turn(db, ch, alice, FACT, clock, reply="Lisbon, lovely.")
    split: list[int] = []  # how many rows each splitting into words was given

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is words.split_rows.__code__:
            split.append(len(frame.f_locals["texts"]))

    sys.setprofile(profile)
    try:
        _, grown = await rows.table(alice.id)
    finally:
        sys.setprofile(None)
    assert grown.n == 302
    assert split == [2]
    _, fresh = await RowIndex(recall_reads(db, db)).table(alice.id)
    assert grown.postings == fresh.postings and grown.words == fresh.words
    np.testing.assert_array_equal(grown.lengths, fresh.lengths)
    np.testing.assert_array_equal(grown.prev, fresh.prev)
    np.testing.assert_array_equal(grown.next, fresh.next)


async def test_a_faded_leaf_leaves_recall_until_touched_and_its_rows_stay_stored(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    """Decay that acts: six weeks unused (leaf weight exp(−42/14) < 0.05), the conversation
    has faded; with faded_floor above 1 it leaves recall, while a newer one answers the same
    question. Its rows stay in storage, and once touched (recalled and used) it is back."""
    alice = await person(db, "alice", clock)
    ch = await channel(db, alice, "alice/f", clock)
    old = await turn(db, ch, alice, FACT, clock, reply="How lovely!")
    await index(db, emb, clock)
    clock.advance(days=43)
    new = await turn(db, ch, alice, "my brother Oskar moved to Porto last spring", clock)
    await index(db, emb, clock)
    question = "where did my sister Beatrix and my brother Oskar move?"
    keeps = recall_for(db, emb, clock, skip_recent_rows=0, decay_floor=0.0)
    assert old[0] in (await keeps.search(alice.id, question, clock.now())).cited_row_ids
    fades = recall_for(db, emb, clock, skip_recent_rows=0, decay_floor=0.05, faded_floor=2.0)
    faded = await fades.search(alice.id, question, clock.now())
    assert old[0] not in faded.cited_row_ids and new[0] in faded.cited_row_ids
    stored = await db.fetchval("SELECT count(*) FROM transcript WHERE id = ?", (old[0],))
    assert stored == 1
    # A cue strong enough: a faded item must score at least faded_floor × the best (here it
    # is the best).
    cued = recall_for(db, emb, clock, skip_recent_rows=0, decay_floor=0.05, faded_floor=0.5)
    strong = "what does my sister Beatrix teach in Lisbon?"
    assert old[0] in (await cued.search(alice.id, strong, clock.now())).cited_row_ids
    assert old[0] not in (await fades.search(alice.id, strong, clock.now())).cited_row_ids
    # Recalled and used: the leaf is relevant again, and it is back at any floor.
    await EpisodeRepo(db).touch(await EpisodeRepo(db).live_citing(old), clock.now())
    back = await fades.search(alice.id, question, clock.now())
    assert old[0] in back.cited_row_ids


async def test_salience_takes_part_in_the_ranking(db: Database, emb: OpenAIEmbedder,
                                                  clock: ManualClock) -> None:
    """Two windows about equal for the query: the newer one first, but the one from the more
    salient conversation once salience is weighed."""
    alice = await person(db, "alice", clock)
    other = await channel(db, alice, "alice/o", clock)
    await turns(db, other, alice, [filler(i) for i in range(20)], clock)
    ch = await channel(db, alice, "alice/s", clock)
    vivid = await turn(db, ch, alice, "the parcel for the garden shed came today", clock)
    await index(db, emb, clock)
    clock.advance(days=2)
    dull = await turn(db, ch, alice, "the parcel for the garden shed came monday", clock)
    await index(db, emb, clock)
    repo = EpisodeRepo(db)
    for rows, value in ((vivid, 0.9), (dull, 0.2)):
        await db.execute_write("UPDATE episodes SET salience = ? WHERE id = ?",
                               (value, (await repo.live_citing(rows))[0]))
    query = "did the parcel for the shed come?"
    plain = await recall_for(db, emb, clock, skip_recent_rows=0, w_salience=0.0).search(
        alice.id, query, clock.now())
    assert plain.items[0].cited_rows[0] == dull[0]
    weighed = await recall_for(db, emb, clock, skip_recent_rows=0, w_salience=1.0).search(
        alice.id, query, clock.now())
    assert weighed.items[0].cited_rows[0] == vivid[0]
