"""The memory layers a model writes without a job turn (fact extraction, continuity summaries,
episode summaries, roll-up parents) go through the grounding rule too: what the fake model
writes as a small model did (another person's facts, a made-up quote, a number nobody said) is
refused, counted for the person, and the extractive text is kept instead."""

from __future__ import annotations

import json
from typing import Any

from strata.app.compose import App
from strata.bot.writers.compaction import compact_channel
from strata.bot.writers.facts import model_completer
from strata.bot.writers.rollup import rollup_channel
from strata.core.clock import ManualClock
from strata.core.types import Role
from strata.memory.checks import grounding as g
from strata.memory.lifecycle.rollup import RollupPolicy
from strata.memory.store.episodes import LEAF, EpisodeRepo
from strata.memory.store.refusals import RefusalRepo
from strata.memory.store.transcript import watermark
from tests.fakes.openai_server import FakeOpenAI
from tests.lifecycle_helpers import add_episode, add_turn, blobs, lifecycle, make_scope
from tests.memory_helpers import channel, person, turns

from .test_compaction_prune import POLICY
from .test_episode_cut import cutter
from .test_fact_extraction import cand, episode, extractor, live_texts, setup


async def counts(app: App, owner: int) -> dict[tuple[str, str], int]:
    return {(c.layer, c.reason): c.count for c in await RefusalRepo(app.db).for_owner(owner)}


async def test_a_fact_whose_text_the_person_never_said_is_refused(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    p, ch = await setup(app, clock)
    ep = await episode(app, clock, p, ch, [
        (Role.USER, "I live in Lyon and work as a pharmacist"),
        (Role.ASSISTANT, "You must love hiking in the Alps then!")])
    fake_openai.reply(json.dumps({"facts": [
        # The evidence is the person's, the text is not (a name from the bot's line).
        cand("Loves hiking in the Alps", "I live in Lyon", episode=ep),
        cand("Lives in Paris", "I live in Lyon", attribute="home_city", episode=ep),
        cand("Works as a pharmacist", "work as a pharmacist", episode=ep)]}))
    report = await extractor(app).run(p.id, model_completer(app.chat), clock.now())
    # "Lives in Lyon" is read without the model (plain_facts), from the person's own line.
    assert sorted(await live_texts(app, p.id)) == ["Lives in Lyon", "Works as a pharmacist"]
    # Refused before the grounding rule, by extraction's own checks; every refusal is counted.
    assert report.rejected == {"evidence from the assistant": 1, "text not in its evidence": 1}
    assert await counts(app, p.id) == {(g.FACTS, "evidence from the assistant"): 1,
                                       (g.FACTS, "text not in its evidence"): 1}


async def test_a_continuity_summary_with_invented_dialogue_is_not_the_history(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "eve", clock.now())
    for n in range(6):
        await add_turn(scope, n, clock.now())
    fake_openai.reply('The person asked questions, then said "please tell me about the '
                      'whereabouts of the answer".')
    result = await compact_channel(lifecycle(app), app.chat, scope.channel.id, clock.now(), POLICY)
    assert result.compacted  # the extractive summary moved the watermark
    mark = await watermark(app.db, scope.channel.id)
    assert mark is not None and "please" not in mark[0].content
    assert await counts(app, scope.person.id) == {(g.CONTINUITY, g.QUOTE): 1}


async def test_an_episode_summary_never_gives_one_speakers_facts_to_another(
        db: Any, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    carol = await person(db, "Carol", clock)
    bob = await person(db, "Bob", clock)
    room = await channel(db, carol, "carol/home", clock)
    await turns(db, room, carol, ["I'm allergic to peanuts and I work as a nurse"], clock)
    await turns(db, room, bob, ["I'm her brother, visiting for the weekend"], clock)
    fake_openai.responder = lambda body: json.dumps({
        "summary": "Bob is allergic to peanuts and works as a nurse.", "salience": 0.7,
        "emotion": {"label": "neutral", "intensity": 0.1}, "key_terms": ["peanuts"]})
    made = await cutter(db, fake_openai, clock, window=2).cut(room.id, clock.now())
    assert len(made) == 1
    stored = await EpisodeRepo(db).get(made[0])
    assert stored is not None and stored.method == "extractive"
    assert "Carol: I'm allergic to peanuts" in stored.summary
    # Asked twice (one retry), refused twice, counted for the channel's owner.
    assert {(c.layer, c.reason): c.count for c in await RefusalRepo(db).for_owner(carol.id)} \
        == {(g.EPISODES, g.MISATTRIBUTED): 2}


async def test_a_rollup_parent_carries_no_number_its_children_lack(
        app: App, fake_openai: FakeOpenAI, clock: ManualClock) -> None:
    scope = await make_scope(app.db, "ron", clock.now())
    for i, v in enumerate(blobs((12, 12, 12, 5, 5, 4), app.db.dim, seed=0)[:50]):
        await add_episode(scope, v, clock.now(), summary=f"Ron went hiking near Oslo, trip {i}.")
    fake_openai.responder = lambda body: json.dumps(
        {"summary": "Ron went hiking near Oslo 300 times with Mia.", "key_terms": ["hiking"]})
    result = await rollup_channel(lifecycle(app), app.chat, scope.channel.id, LEAF,
                                  clock.now(), RollupPolicy())
    assert result.parents and not result.errors
    for parent_id in result.parents:
        parent = await EpisodeRepo(app.db).get(parent_id)
        assert parent is not None and parent.method == "extractive" and "300" not in parent.summary
    assert await counts(app, scope.person.id) == {(g.ROLLUP, g.NUMBER): len(result.parents)}
