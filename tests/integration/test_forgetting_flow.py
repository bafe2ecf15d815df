"""Memory that really forgets, end to end (docs/lifecycle.md): real turns through the turn
processor, episodes cut after the turns, the consolidate job (compaction, roll-up) and the
decay job 31 days later, all without a chat model for memory (extractive summaries). The
rolled-up leaves' transcript rows are pruned; the topic parent still answers the question
and says where its memory came from (a span and a channel)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from strata.app.compose import App
from strata.bot.prompt import MEMORY_PREAMBLE
from strata.core.clock import ManualClock
from strata.core.config import Settings
from strata.memory.store.episodes import TOPIC
from tests.fakes.openai_server import FakeOpenAI

from .test_turns import msg

KEY_FACT = "My sister Marta turns 41 on 12 March and she lives in Porto."
FILLER = [
    "I am planning the trip to Porto for the family in spring.",
    "We want to visit the Porto riverside and eat pastries on the trip.",
    "The Porto trip needs a hotel near the river for the family.",
    "For the trip to Porto I should book the train tickets early.",
    "The family trip to Porto could include a boat tour on the river.",
    "I keep a list of Porto cafes for the trip with the family.",
]


@pytest.fixture
async def app(settings: Settings, clock: ManualClock) -> AsyncIterator[App]:
    s = settings.model_copy(update={
        "episodes": settings.episodes.model_copy(update={"use_model": False,
                                                          "window_turns": 2}),
        "lifecycle": settings.lifecycle.model_copy(update={
            "compact_tokens": 150, "compact_keep_tokens": 40, "compact_use_model": False,
            "rollup_use_model": False, "leaf_round_at": 10, "min_cluster_size": 3}),
    })
    application = await App.create(s, clock=clock)
    yield application
    await application.close()


async def count(app: App, sql: str, *params: object) -> int:
    return int(await app.db.fetchval(sql, params))


async def test_rolled_up_rows_are_pruned_and_the_parent_still_answers(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    fake_openai.responder = lambda body: "Noted, that sounds lovely."
    texts = [FILLER[0], FILLER[1], KEY_FACT, *(FILLER * 4)[2:24]]
    for text in texts:
        result = await app.processor.handle(msg(text, clock=clock))
        assert result is not None and not result.failed
        await app.processor.drain()
        clock.advance(minutes=2)
    alice = await app.persons.find("alice")
    assert alice is not None and app.runner is not None
    [channel] = await app.channels.for_owner(alice.id)
    ingested = await count(app, "SELECT count(*) FROM transcript WHERE kind = 'message'")
    assert ingested == 2 * len(texts)
    fact_row = await app.db.fetchval(
        "SELECT id FROM transcript WHERE content = ? AND kind = 'message'", (KEY_FACT,))
    assert fact_row is not None

    # An hour of quiet: the consolidate job compacts and rolls the leaves up.
    clock.advance(hours=1)
    consolidated = await app.runner.run_job(app.runner.registry.get("consolidate"), alice)
    assert consolidated.status == "ok", consolidated.detail
    leaf_of_fact = await app.db.fetchval(
        "SELECT episode_id FROM episode_rows WHERE row_id = ?", (fact_row,))
    leaf = await app.episodes.get(leaf_of_fact)
    assert leaf is not None and leaf.parent_id is not None, consolidated.detail
    parent = await app.episodes.get(leaf.parent_id)
    assert parent is not None and parent.level == TOPIC and parent.live
    assert parent.method == "extractive" and parent.child_count >= 3
    assert "12 March" in parent.summary and "Marta" in parent.summary  # the key fact survived
    assert await app.episodes.cited_rows(parent.id) == []  # no inherited citations

    # 31 days on, the decay job deletes the expired tombstones and prunes their rows.
    clock.advance(days=31)
    decayed = await app.runner.run_job(app.runner.registry.get("decay"), alice)
    assert decayed.status == "ok", decayed.detail
    kept = await count(app, "SELECT count(*) FROM transcript WHERE kind = 'message'")
    assert kept < ingested / 2, (kept, ingested)
    assert await count(app, "SELECT count(*) FROM transcript WHERE id = ?", fact_row) == 0
    assert await count(app, "SELECT count(*) FROM episodes WHERE parent_id = ?", parent.id) == 0

    # Provenance without the children: the span and the channel the parent covers.
    stored = await app.episodes.get(parent.id)
    assert stored is not None and stored.live and stored.channel_id == channel.id
    assert stored.started_at <= clock.now() and stored.child_count == parent.child_count
    assert (stored.ended_at - stored.started_at).total_seconds() > 0

    # The question is still answered, from the parent, with its date range as provenance.
    fake_openai.clear()
    question = "when is the birthday of my sister Marta?"
    await app.processor.handle(msg(question, clock=clock))
    [request] = [r for r in fake_openai.chat_requests()
                 if question in str(r["messages"][-1]["content"])]
    block = "\n".join(str(m["content"]) for m in request["messages"]
                      if m["role"] == "system" and MEMORY_PREAMBLE in str(m["content"]))
    assert "12 March" in block
    assert f"{stored.started_at:%Y-%m-%d}" in block and "private chat on console" in block
