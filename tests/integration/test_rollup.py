"""Episode roll-up with real UMAP + HDBSCAN (the first fit in a process costs seconds of JIT,
the rest are fast), real SQLite and the fake model server. Embeddings are constructed:
well separated groups, some too small (< 10) to be a topic of their own."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from strata.app.compose import App
from strata.bot.writers.consolidate import consolidate_owner
from strata.bot.writers.rollup import rollup_channel
from strata.core.clock import ManualClock
from strata.core.types import NewRow, Role
from strata.memory.lifecycle.clustering import cluster_labels
from strata.memory.lifecycle.rollup import RollupPolicy
from strata.memory.store.episodes import ERA, LEAF, TOPIC, cited_rows_by_episode
from tests.fakes.openai_server import FakeOpenAI
from tests.lifecycle_helpers import add_episode, add_turn, blobs, lifecycle, make_scope

# Three topics of 12 leaves and three side threads of 5, 5 and 4: the side threads are too
# small for a cluster (min size 10).
SIZES = (12, 12, 12, 5, 5, 4)


def summarise(body: dict[str, Any]) -> str:
    """A summary quoting its first three memories (a model's summary must be about its
    memories and carry no number they lack: `strata.memory.checks.grounding`)."""
    lines = body["messages"][-1]["content"].splitlines()
    quoted = "; ".join(line.partition(") ")[2] for line in lines[1:4])
    return json.dumps({"summary": f"a topic gathering memories: {quoted}",
                       "key_terms": ["topic"]})


@pytest.fixture
def rollup_model(fake_openai: FakeOpenAI) -> FakeOpenAI:
    fake_openai.responder = summarise
    return fake_openai


async def test_fiftieth_leaf_triggers_a_round_noise_stays_apex(
        app: App, rollup_model: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "fay", clock.now())
    vecs = blobs(SIZES, app.db.dim, seed=0)
    rows = [await add_turn(scope, n, clock.now(), words=3) for n in range(len(vecs))]
    ids = [await add_episode(scope, vecs[i], clock.now(), summary=f"leaf {i}", rows=rows[i],
                             salience=0.2 + 0.01 * i)
           for i in range(49)]
    clock.advance(hours=1)
    none = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                clock.now())
    assert not none.ran and none.apexes == 49 and rollup_model.chat_requests() == []

    ids.append(await add_episode(scope, vecs[49], clock.now(), summary="leaf 49", rows=rows[49]))
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now())
    assert result.ran and result.apexes == 50 and not result.errors
    assert len(result.parents) == result.clusters >= 3

    episodes = {e.id: e for e in await scope.episodes.for_owner(scope.person.id,
                                                                live_only=False)}
    # Each of the three topics went whole into one parent of its own.
    topic_parents = []
    for start in (0, 12, 24):
        parents = {episodes[i].parent_id for i in ids[start:start + 12]}
        assert len(parents) == 1 and None not in parents
        topic_parents.append(parents.pop())
    assert len(set(topic_parents)) == 3
    # Noise was not forced anywhere: it is still a live apex leaf, ready for the next round.
    noise = [i for i in ids if episodes[i].parent_id is None]
    assert len(noise) == result.noise >= 1
    assert all(episodes[i].live for i in noise)
    apexes = {e.id for e in await scope.episodes.apexes(scope.channel.id, LEAF)}
    assert apexes == set(noise)
    # Children are tombstoned (hidden from live queries), parents are level-1 apexes.
    live = {e.id for e in await scope.episodes.for_owner(scope.person.id)}
    assert live == set(noise) | set(result.parents)
    assert result.tombstoned == len(ids) - len(noise)
    for pid in result.parents:
        parent = episodes[pid]
        kids = [e for e in episodes.values() if e.parent_id == pid]
        assert parent.level == TOPIC and parent.live and parent.parent_id is None
        assert all(k.tombstoned_at == clock.now() for k in kids)
        # Provenance is links and a span, not inherited row citations: the parent cites no
        # row itself, counts its children, covers their span, and reaches their rows only
        # through them while they are kept.
        assert await scope.episodes.cited_rows(pid) == []
        assert parent.child_count == len(kids)
        kid_rows = {r for k in kids for r in await scope.episodes.cited_rows(k.id)}
        assert kid_rows and set((await cited_rows_by_episode(app.db, [pid]))[pid]) == kid_rows
        assert parent.started_at == min(k.started_at for k in kids)
        assert parent.ended_at == max(k.ended_at for k in kids)
        assert parent.channel_id == scope.channel.id
        assert parent.summary.startswith("a topic gathering memories: ")
        assert parent.child_count == len(kids)
        assert parent.salience >= max(k.salience for k in kids) * 0.7
    # The parent's embedding is its own (of its summary), not a child's.
    own = await scope.episodes.embeddings(list(result.parents))
    assert np.allclose(np.linalg.norm(own, axis=1), 1.0, atol=1e-4)

    # Below the threshold again: the next consolidate pass leaves the noise alone.
    again = await consolidate_owner(lifecycle(app), app.chat, scope.person.id,
                                    clock.now())
    assert again.clusters == 0 and all(not r.ran for r in again.rounds)


async def test_same_input_same_clusters() -> None:
    vecs = blobs(SIZES, 64, seed=0)
    first = cluster_labels(vecs)
    assert (cluster_labels(vecs.copy()) == first).all()
    assert len(set(first.tolist()) - {-1}) >= 3


async def test_era_round_fires_at_25_topics(app: App, rollup_model: FakeOpenAI,
                                            clock: ManualClock) -> None:
    scope = await make_scope(app.db, "gus", clock.now())
    vecs = blobs((13, 12), app.db.dim, seed=1)
    ids = [await add_episode(scope, vecs[i], clock.now(), level=TOPIC) for i in range(24)]
    assert not (await rollup_channel(lifecycle(app), app.chat, scope.channel.id, TOPIC,
                                     clock.now())).ran
    ids.append(await add_episode(scope, vecs[24], clock.now(), level=TOPIC))
    result = await consolidate_owner(lifecycle(app), app.chat, scope.person.id,
                                     clock.now())
    era = next(r for r in result.rounds if r.level == TOPIC)
    assert era.ran and era.clusters >= 1 and era.parents
    for pid in era.parents:
        parent = await scope.episodes.get(pid)
        assert parent is not None and parent.level == ERA
    assert [e.level for e in await scope.episodes.apexes(scope.channel.id, ERA)] \
        == [ERA] * len(era.parents)
    # Era digests never roll up further.
    assert (await rollup_channel(lifecycle(app), app.chat, scope.channel.id, ERA,
                                 clock.now())).ran is False


async def test_failed_summary_keeps_that_cluster_as_apexes(
        app: App, rollup_model: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "hal", clock.now())
    vecs = blobs(SIZES, app.db.dim, seed=0)
    ids = [await add_episode(scope, v, clock.now()) for v in vecs[:50]]
    # The first cluster's summary call fails in a way worth retrying (the endpoint is down).
    rollup_model.fail_next(status=503, path="chat")
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now())
    assert result.ran and len(result.errors) == 1
    assert len(result.parents) == result.clusters - 1
    first_topic = [await scope.episodes.get(i) for i in ids[:12]]
    assert all(e is not None and e.live and e.parent_id is None for e in first_topic)


# The last but one: valid JSON about something else, as SmolLM2-135M wrote for hiking notes.
@pytest.mark.parametrize("answer", ['{"note": "fake model"}', "plain prose, no JSON", "",
                                    '{"summary": "{#13}. [The people at the beach],"}',
                                    "refused"])
async def test_an_answer_off_the_schema_is_never_stored_the_parent_is_extractive(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock, answer: str) -> None:
    scope = await make_scope(app.db, "hap", clock.now())
    vecs = blobs(SIZES, app.db.dim, seed=0)
    for i, v in enumerate(vecs[:50]):
        await add_episode(scope, v, clock.now(), summary=f"Leaf {i} met Quentin in Oslo.")
    if answer == "refused":  # a 400: asking again will not help
        fake_openai.fail_next(status=400, path="chat", times=10)
    else:
        fake_openai.responder = lambda body: answer
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now())
    assert result.ran and result.parents and not result.errors
    assert fake_openai.chat_requests()  # the model was asked …
    for pid in result.parents:  # … and what it said is nowhere in memory
        parent = await scope.episodes.get(pid)
        assert parent is not None and parent.method == "extractive"
        assert "Quentin in Oslo" in parent.summary
        assert "note" not in parent.summary and "prose" not in parent.summary
        assert "beach" not in parent.summary
    stored = await app.db.fetchall("SELECT summary FROM episodes WHERE summary LIKE '%fake%'")
    assert stored == []


async def test_muted_channels_do_not_roll_up(app: App, rollup_model: FakeOpenAI,
                                             clock: ManualClock) -> None:
    scope = await make_scope(app.db, "ivy", clock.now(), source="scheduled")
    for v in blobs(SIZES, app.db.dim, seed=0):
        await add_episode(scope, v, clock.now())
    result = await consolidate_owner(lifecycle(app), app.chat, scope.person.id,
                                     clock.now())
    assert result.rounds == () and rollup_model.chat_requests() == []


async def test_extractive_parents_need_no_model(app: App, fake_openai: FakeOpenAI,
                                                clock: ManualClock) -> None:
    scope = await make_scope(app.db, "jon", clock.now())
    vecs = blobs(SIZES, app.db.dim, seed=0)
    for i, v in enumerate(vecs[:50]):
        await add_episode(scope, v, clock.now(), summary=f"leaf number {i} said something")
    policy = RollupPolicy(use_model=False)
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now(), policy)
    assert result.ran and result.parents and not result.errors
    assert fake_openai.chat_requests() == []
    parent = await scope.episodes.get(result.parents[0])
    assert parent is not None and parent.method == "extractive"
    assert "leaf number 0 said something" in parent.summary  # the first topic's first leaf


async def test_recall_drops_tombstoned_children_at_once_and_never_shows_compactions(
        app: App, rollup_model: FakeOpenAI, clock: ManualClock) -> None:
    from strata.bot.writers.compaction import compact_channel
    from strata.memory.lifecycle.compaction import CompactionPolicy

    scope = await make_scope(app.db, "kay", clock.now())
    vecs = blobs(SIZES, app.db.dim, seed=0)
    ids = [await add_episode(scope, v, clock.now(), summary=f"we talked about quokka{i}")
           for i, v in enumerate(vecs[:50])]

    async def found(word: str) -> list[tuple[str, int]]:
        result = await app.recall.search(scope.person.id, word, clock.now())
        return [(item.kind, item.id) for item in result.items]

    assert ("episode", ids[0]) in await found("quokka0")
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now())
    assert ids[0] in {e.id for e in await scope.episodes.for_owner(scope.person.id,
                                                                   live_only=False)
                      if e.parent_id in result.parents}
    assert ("episode", ids[0]) not in await found("quokka0")  # tombstoned: gone at once

    # A continuity summary mentioning the word is never a recall candidate.
    for n in range(8):
        await add_turn(scope, n, clock.now())
    rollup_model.responder = None
    rollup_model.reply("the summary mentions quokka7 and everything else")
    compaction = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(),
                                       CompactionPolicy(trigger_tokens=100, keep_tokens=0))
    assert compaction.compacted and compaction.row_id is not None
    said = await scope.transcript.append([NewRow(
        scope.channel.id, scope.person.id, clock.now(), "user", Role.USER,
        "the summary mentions quokka7 and everything else", "t-last")])
    quoted = (await app.recall.search(scope.person.id, "quokka7 summary mentions",
                                      clock.now())).cited_row_ids
    assert said[0] in quoted  # a message row with the same words is found (quoted) …
    assert compaction.row_id not in quoted  # … the compaction row is not


async def test_a_huge_cluster_is_summarised_within_the_input_limit(
        app: App, rollup_model: FakeOpenAI, clock: ManualClock) -> None:
    """However long the children's summaries, one parent's summary request stays within
    `input_tokens` (each child gets its share); more children than fit are refused (a round
    splits such a cluster into several parents)."""
    from strata.bot.writers.rollup import write_parent
    from strata.memory.store.episodes import EpisodeRepo

    scope = await make_scope(app.db, "many", clock.now())
    vecs = blobs((100,), app.db.dim, seed=5)
    ids = [await add_episode(scope, v, clock.now(), summary=f"episode {i} " + "words " * 300)
           for i, v in enumerate(vecs)]
    repo = EpisodeRepo(app.db)
    children = [e for i in ids if (e := await repo.get(i)) is not None]
    policy = RollupPolicy(input_tokens=3000)
    parent = await write_parent(lifecycle(app), app.chat, children, clock.now(), policy)
    assert parent > 0
    (size,) = [n for path, n in rollup_model.sizes if path == "chat"]
    assert size < 3000 * 4 + 3000  # 100 × 300 words would be ~190 kB
    sent = rollup_model.chat_requests()[-1]["messages"][-1]["content"]
    assert "episode 0 " in sent and "episode 99 " in sent  # every child keeps a share
    with pytest.raises(ValueError, match="at most 41"):
        await write_parent(lifecycle(app), app.chat, children,
                           clock.now(), RollupPolicy(input_tokens=1000))


async def test_a_long_extractive_parent_is_recalled_by_its_sentences_about_the_query(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    """Without a model a parent keeps half of its children's words, so it is long; recall
    shows the sentences that answer the question, within `NOTE_TOKENS`, not the whole note."""
    from strata.core.tokens import count_tokens
    from strata.memory.recall.focus import NOTE_TOKENS

    scope = await make_scope(app.db, "lux", clock.now())
    vecs = blobs(SIZES, app.db.dim, seed=0)
    for i, v in enumerate(vecs[:50]):
        said = (f"Lena: On walk {i} we saw birch trees number {i} and talked about rain {i}. "
                f"Lena: The bakery {i} on Elm street sold rye loaf {i} that morning.")
        if i == 7:
            said += " Lena: My cousin Ottavio adopted a greyhound called Biscuit in Verona."
        await add_episode(scope, v, clock.now(), summary=said)
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now(), RollupPolicy(use_model=False))
    assert result.parents and not result.errors and fake_openai.chat_requests() == []
    parents = [p for pid in result.parents if (p := await scope.episodes.get(pid)) is not None]
    [holder] = [p for p in parents if "Ottavio adopted a greyhound" in p.summary]
    assert count_tokens(holder.summary) > NOTE_TOKENS  # long: half of its children's words

    found = await app.recall.search(scope.person.id, "which greyhound did Ottavio adopt?",
                                    clock.now())
    [item] = [i for i in found.items if i.kind == "episode" and i.id == holder.id]
    assert "Ottavio adopted a greyhound called Biscuit in Verona" in item.text
    assert count_tokens(item.text) <= NOTE_TOKENS < count_tokens(holder.summary)
    assert "rye loaf" not in item.text  # the sentences about other things are left out
