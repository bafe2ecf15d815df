"""Compaction and the watermark, transcript pruning, the janitor and the decay pass: real
SQLite, the fake model server, an injected clock."""

from __future__ import annotations

import numpy as np
import pytest

from strata.app.compose import App
from strata.bot.writers.compaction import CompactionHook, compact_channel
from strata.core.clock import ManualClock
from strata.core.types import NewRow, Role
from strata.memory.lifecycle.compaction import CompactionPolicy
from strata.memory.lifecycle.passes import MemoryLifecycle
from strata.memory.rules.decay import episode_weight
from strata.memory.store.episodes import TOPIC, as_blob
from strata.memory.store.forgetting.janitor import decay_pass
from strata.memory.store.forgetting.prune import prune_channel, prune_owner
from strata.memory.store.transcript import history_since_watermark, watermark
from tests.fakes.openai_server import FakeOpenAI
from tests.lifecycle_helpers import add_episode, add_turn, lifecycle, lifecycle_store, make_scope

POLICY = CompactionPolicy(trigger_tokens=400, keep_tokens=150, input_tokens=2000)


async def test_compaction_folds_previous_summary_and_keeps_the_tail(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "ann", clock.now())
    ids = [await add_turn(scope, n, clock.now()) for n in range(6)]  # ~6 × 110 tokens
    fake_openai.reply("Summary one: questions and answers.")
    first = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert first.compacted and first.covers_to is not None
    # Whole turns only, and the newest talk stays verbatim above the watermark.
    assert first.covers_to in {turn[-1] for turn in ids}
    assert first.covers_to < ids[-1][-1]
    mark, rows = await history_since_watermark(app.transcript, scope.channel.id)
    assert mark is not None and mark.content == "Summary one: questions and answers."
    assert rows and rows[0].id == first.covers_to + 1 and rows[-1].id == ids[-1][-1]
    assert mark.id > rows[-1].id  # the tail was written before the summary, yet it is shown

    for n in range(6, 12):
        await add_turn(scope, n, clock.now())
    fake_openai.reply("Summary two: more questions and answers.")
    second = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert second.compacted
    sent = fake_openai.chat_requests()[-1]["messages"][-1]["content"]
    assert "Summary one: questions and answers." in sent  # folded in
    assert "question 0:" not in sent  # already covered by the first summary
    assert f"question {len(ids) - 1}:" in sent or "question 6:" in sent
    found = await watermark(app.db, scope.channel.id)
    assert found is not None and found[1] == second.covers_to


async def test_under_budget_does_nothing(app: App, fake_openai: FakeOpenAI,
                                         clock: ManualClock) -> None:
    scope = await make_scope(app.db, "bea", clock.now())
    await add_turn(scope, 0, clock.now())
    result = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert not result.compacted and result.error is None
    assert fake_openai.chat_requests() == []


async def test_failing_summary_leaves_the_watermark_an_empty_one_falls_back(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "cat", clock.now())
    for n in range(6):
        await add_turn(scope, n, clock.now())
    fake_openai.reply("first summary of the questions")
    first = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    for n in range(6, 12):
        await add_turn(scope, n, clock.now())
    before = await watermark(app.db, scope.channel.id)

    # The endpoint is down: nothing is stored, the next check tries again.
    fake_openai.fail_next(status=500, times=5, path="chat")
    failed = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert not failed.compacted and failed.error
    after = await watermark(app.db, scope.channel.id)
    assert before is not None and after is not None
    assert after[0].id == before[0].id and after[1] == first.covers_to

    # The model answers nothing usable: the extractive summary moves the watermark.
    fake_openai.clear()
    fake_openai.reply("   ")
    empty = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert empty.compacted and not empty.error and empty.covers_to is not None
    assert empty.covers_to > first.covers_to  # type: ignore[operator]
    moved = await watermark(app.db, scope.channel.id)
    assert moved is not None and moved[1] == empty.covers_to
    assert "first summary of the questions" in moved[0].content
    assert any(f"question {n}:" in moved[0].content for n in range(6, 12))
    assert len(moved[0].content.split()) <= POLICY.summary_words


async def test_compaction_without_a_model_is_extractive_and_advances(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "cay", clock.now())
    ids = [await add_turn(scope, n, clock.now()) for n in range(6)]
    policy = CompactionPolicy(trigger_tokens=400, keep_tokens=150, input_tokens=2000,
                              summary_words=60, use_model=False)
    done = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), policy)
    assert done.compacted and done.covers_to in {turn[-1] for turn in ids}
    assert fake_openai.chat_requests() == []
    mark = await watermark(app.db, scope.channel.id)
    assert mark is not None and mark[1] == done.covers_to
    assert "question 0:" in mark[0].content and len(mark[0].content.split()) <= 60


@pytest.mark.parametrize("bulk", [False, True], ids=["batches", "bulk"])
async def test_pruning_keeps_cited_and_unreached_rows_and_drops_the_rest(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock, bulk: bool) -> None:
    db = app.db
    scope = await make_scope(db, "dan", clock.now())
    turns = [await add_turn(scope, n, clock.now(), tool=n in (1, 2)) for n in range(8)]
    # Vectors for every row, as recall keeps them for live transcript rows.
    vec = np.ones(db.dim, dtype=np.float32) / np.sqrt(db.dim)
    async with db.write() as conn:
        await conn.executemany(
            "INSERT INTO transcript_vec (row_id, owner_id, embedding) VALUES (?, ?, ?)",
            [(r, scope.person.id, as_blob(vec)) for t in turns for r in t])
    # Turn 0 is cited by a live episode; turn 2's user row by one; turn 3 only by a tombstone.
    await add_episode(scope, vec, clock.now(), rows=turns[0])
    await add_episode(scope, vec, clock.now(), rows=[turns[2][0]])
    dead = await add_episode(scope, vec, clock.now(), rows=turns[3])
    parent = await add_episode(scope, vec, clock.now(), level=TOPIC, rows=[])
    await scope.episodes.tombstone([dead], parent, clock.now())
    async with db.write() as conn:  # the episode cutter has reached turn 6
        await conn.execute("INSERT INTO episode_cursors (channel_id, last_row_id) VALUES (?, ?)",
                           (scope.channel.id, turns[6][-1]))

    nothing = await prune_channel(db, scope.channel.id, "user")
    assert nothing.limit == 0 and nothing.deleted == 0  # no watermark, nothing below it

    fake_openai.reply("summary of every question and answer")
    policy = CompactionPolicy(trigger_tokens=10, keep_tokens=0, input_tokens=100_000)
    done = await compact_channel(MemoryLifecycle(lifecycle_store(db), app.embedder), app.chat,
                                 scope.channel.id, clock.now(), policy)
    assert done.covers_to == turns[7][-1]
    if bulk:  # one transaction that rebuilds the FTS indexes instead of per-row triggers
        [result] = await prune_owner(db, scope.person.id, bulk_min_rows=1)
    else:
        result = await prune_channel(db, scope.channel.id, "user")
    assert result.limit == turns[6][-1]  # the cursor bounds pruning, not only the watermark

    left = {r[0] for r in await db.fetchall("SELECT id FROM transcript")}
    kept = set(turns[0]) | {turns[2][0], *turns[2][1:3]} | set(turns[7])
    gone = set(turns[1]) | {turns[2][-1]} | set(turns[3]) | set(turns[4]) | set(turns[5]) \
        | set(turns[6])
    assert kept <= left
    assert not gone & left
    assert done.row_id in left  # compaction rows persist
    assert result.tool_rows_deleted == 2 and result.messages_deleted == len(gone) - 2
    assert result.vectors_deleted == len(gone)
    vec_left = {r[0] for r in await db.fetchall("SELECT row_id FROM transcript_vec")}
    assert vec_left == {r for t in turns for r in t} - gone
    # The FTS index forgot the pruned rows and still finds the kept ones.
    assert await app.transcript.search(scope.person.id, "word4x1") == []
    hits = {r.id for r, _ in await app.transcript.search(scope.person.id, "word0x1")}
    assert hits == set(turns[0])
    # SQLite: the FTS5 index itself, not a join (PostgreSQL's is on `transcript`).
    if db.engine == "sqlite":
        assert await db.fetchall(
            "SELECT rowid FROM transcript_fts WHERE transcript_fts MATCH 'word4x1'") == []
        indexed = {r[0] for r in await db.fetchall("SELECT id FROM transcript_fts_docsize")}
        assert indexed == left
    # The per-row triggers still work afterwards (the bulk path drops and recreates them).
    async with db.write() as conn:
        await conn.execute("DELETE FROM transcript WHERE turn_id = 'turn7'")
    assert await app.transcript.search(scope.person.id, "word7x1") == []
    vec_after = {r[0] for r in await db.fetchall("SELECT row_id FROM transcript_vec")}
    assert vec_after == vec_left - set(turns[7])
    if db.engine == "sqlite":  # PostgreSQL has no such triggers (nor a bulk path to drop them)
        triggers = {r[0] for r in await db.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'transcript'")}
        assert {"transcript_fts_delete", "transcript_vec_follow_row"} <= triggers


async def test_janitor_deletes_tombstones_after_30_days_and_decay_updates_weights(
        app: App, clock: ManualClock) -> None:
    db = app.db
    scope = await make_scope(db, "eve", clock.now())
    vec = np.eye(db.dim, dtype=np.float32)
    kids = [await add_episode(scope, vec[i], clock.now()) for i in range(3)]
    parent = await add_episode(scope, vec[5], clock.now(), level=TOPIC)
    await scope.episodes.tombstone(kids, parent, clock.now())

    clock.advance(days=29, hours=23)
    early = await decay_pass(db, clock.now(), scope.person.id)
    assert early.episodes_deleted == 0
    assert early.weights_updated == 4
    stored = await scope.episodes.get(parent)
    assert stored is not None
    assert abs(stored.weight - episode_weight(TOPIC, stored.last_relevant_at, clock.now())) < 1e-6
    kid = await scope.episodes.get(kids[0])
    assert kid is not None and kid.weight < 0.02  # tombstoned: τ = 7 days

    clock.advance(hours=1)
    late = await decay_pass(db, clock.now(), scope.person.id)
    assert late.episodes_deleted == 3 and late.vectors_deleted == 3
    assert [e.id for e in await scope.episodes.for_owner(scope.person.id, live_only=False)] \
        == [parent]
    left = {r[0] for r in await db.fetchall("SELECT episode_id FROM episode_vec")}
    assert left == {parent}


async def test_after_turn_hook_waits_after_a_failure(app: App, fake_openai: FakeOpenAI,
                                                     clock: ManualClock) -> None:
    scope = await make_scope(app.db, "fin", clock.now())
    for n in range(6):
        await add_turn(scope, n, clock.now())
    hook = CompactionHook(lifecycle(app), app.chat, clock, POLICY)
    fake_openai.fail_next(status=503, path="chat")  # down: worth trying again later
    await hook(scope.channel, scope.person, "t")
    await hook(scope.channel, scope.person, "t")  # within 10 minutes: not asked again
    assert len(fake_openai.chat_requests()) == 1
    assert await watermark(app.db, scope.channel.id) is None
    clock.advance(minutes=11)
    fake_openai.reply("a summary of the questions at last")
    await hook(scope.channel, scope.person, "t")
    found = await watermark(app.db, scope.channel.id)
    assert found is not None and found[0].content == "a summary of the questions at last"


async def test_a_20_mb_message_never_goes_whole_into_the_compaction_request(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    """`input_tokens` bounds the summary call's input: a huge row is cut to its share, the
    summary is written and the watermark moves past it (compaction is not blocked)."""
    scope = await make_scope(app.db, "huge", clock.now())
    big = "lorem ipsum " * 1_750_000  # 21 MB
    [big_id] = await scope.transcript.append([NewRow(
        scope.channel.id, scope.person.id, clock.now(), "user", Role.USER, big, "big")])
    for n in range(4):
        await add_turn(scope, n, clock.now())
    fake_openai.reply("The person pasted lorem ipsum and asked questions.")
    result = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert result.compacted and result.covers_to is not None and result.covers_to >= big_id
    (size,) = [n for path, n in fake_openai.sizes if path == "chat"]
    # 2000 tokens ≈ 8000 characters of transcript, plus the instructions and JSON framing.
    assert size < 2000 * 4 + 3000
    sent = fake_openai.chat_requests()[-1]["messages"][-1]["content"]
    assert "lorem ipsum" in sent and sent.count("lorem") < 2000  # a share of it, not all
