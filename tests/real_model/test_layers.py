"""Every model-written layer with the real small model: episode summaries, facts, roll-up
notes, compaction, a DMN reflection and a reminder through the tool. Asserted: validity,
provenance and safety (nothing invalid, nothing of another person's, junk never stored, honest
failures), not prose."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from strata.app.compose import App
from strata.bot.writers.compaction import compact_channel
from strata.bot.writers.rollup import rollup_channel
from strata.core.clock import ManualClock
from strata.core.types import Person
from strata.memory.lifecycle.compaction import CompactionPolicy
from strata.memory.lifecycle.rollup import RollupPolicy
from strata.memory.rules.fact_types import FACT_KINDS
from strata.memory.store.episodes import LEAF
from strata.memory.store.transcript import history_since_watermark
from tests.lifecycle_helpers import add_episode, add_turn, blobs, lifecycle, make_scope

from .test_turn import said

# Text that looks like a JSON answer (or a fragment of one) stored as memory is junk.
_JSONISH = re.compile(r'^\s*[{\[]|"\w+"\s*:')


async def _say(app: App, clock: ManualClock, text: str, user: str) -> Person:
    result = await app.processor.handle(said(text, clock, user))
    assert result is not None and not result.failed and result.reply.strip()
    await app.processor.drain()
    person = await app.persons.find(user)
    assert person is not None
    return person


async def _run(app: App, job: str, person: Person) -> Any:
    assert app.runner is not None
    return await app.runner.run_job(app.runner.registry.get(job), person)


async def test_episodes_and_facts_are_valid_and_only_the_persons_own(
        lane_app: App, lane_clock: ManualClock) -> None:
    alice = await _say(lane_app, lane_clock, "I moved to Lyon last year and I work as a nurse.",
                       "alice")
    await _say(lane_app, lane_clock, "My brother Tom lives in Oslo.", "alice")
    bob = await _say(lane_app, lane_clock, "I am vegetarian.", "bob")
    lane_clock.advance(hours=2)
    report = await _run(lane_app, "extract", alice)
    # The job either worked or says why (junk is an error in `jobs status`, never memory).
    assert report.status in ("ok", "error"), report
    assert report.status == "ok" or report.detail
    assert lane_app.services is not None
    episodes = await lane_app.services.episodes.for_owner(alice.id)
    assert episodes, "the paused conversation was cut into an episode"
    alice_rows = {r.id for r in await lane_app.transcript.for_owner(alice.id)}
    for ep in episodes:
        assert ep.method in ("llm", "extractive") and ep.summary.strip()
        assert not _JSONISH.search(ep.summary), ep.summary
        assert 0.0 <= ep.salience <= 1.0
        cited = await lane_app.services.episodes.cited_rows(ep.id)
        assert cited and set(cited) <= alice_rows
    for fact in await lane_app.facts.repo.for_owner(alice.id):
        assert fact.kind in FACT_KINDS and fact.text.strip()
        assert not _JSONISH.search(fact.text), fact.text
        assert "vegetarian" not in fact.text.lower()  # bob's, never alice's
    assert await lane_app.facts.repo.for_owner(bob.id) == []  # bob's episode is not cut yet


async def test_a_rollup_note_is_the_models_or_the_extractive_one(
        lane_app: App, lane_clock: ManualClock) -> None:
    scope = await make_scope(lane_app.db, "ron", lane_clock.now())
    for i, v in enumerate(blobs((12, 12, 12, 5, 5, 4), lane_app.db.dim, seed=0)[:50]):
        await add_episode(scope, v, lane_clock.now(),
                          summary=f"Ron went hiking near Oslo with Mia, trip {i}.")
    # Short answers keep the lane quick (a 135M model tends to run on to its limit).
    policy = RollupPolicy(summary_words=60, summary_tokens=150)
    result = await rollup_channel(lifecycle(lane_app), lane_app.chat, scope.channel.id, LEAF,
                                  lane_clock.now(), policy)
    assert result.ran and result.parents and not result.errors
    for pid in result.parents:
        parent = await scope.episodes.get(pid)
        assert parent is not None and parent.owner_id == scope.person.id
        assert parent.method in ("llm", "extractive") and parent.summary.strip()
        assert not _JSONISH.search(parent.summary), parent.summary


async def test_compaction_writes_a_summary_or_leaves_the_watermark(
        lane_app: App, lane_clock: ManualClock) -> None:
    scope = await make_scope(lane_app.db, "ann", lane_clock.now())
    for n in range(6):
        await add_turn(scope, n, lane_clock.now())
    policy = CompactionPolicy(trigger_tokens=400, keep_tokens=150, input_tokens=1500,
                              summary_tokens=150)
    result = await compact_channel(lifecycle(lane_app), lane_app.chat, scope.channel.id,
                                   lane_clock.now(), policy)
    mark, rows = await history_since_watermark(lane_app.transcript, scope.channel.id)
    if result.compacted:
        assert mark is not None and mark.content.strip() and rows
    else:  # an honest failure: the reason is given and nothing moved
        assert result.error and mark is None


async def test_a_dmn_reflection_stays_with_its_person_and_sends_nothing(
        lane_app: App, lane_clock: ManualClock) -> None:
    alice = await _say(lane_app, lane_clock, "My marathon in Lyon is in April and my knee hurts",
                       "alice")
    bob = await _say(lane_app, lane_clock, "I keep thinking about chess", "bob")
    lane_clock.advance(hours=2)
    await _run(lane_app, "extract", alice)
    sent: list[str] = []

    async def record(room_id: str, text: str) -> list[str]:
        sent.append(text)
        return ["m1"]

    lane_app.outbound.register("console", record)
    report = await _run(lane_app, "dmn", alice)
    assert report.status in ("ok", "error", "skipped"), report
    await lane_app.processor.drain()
    for fact in await lane_app.facts.repo.for_owner(alice.id, kinds=["reflection"]):
        assert fact.text.strip() and not _JSONISH.search(fact.text)
        assert "chess" not in fact.text.lower()
    assert await lane_app.facts.repo.for_owner(bob.id, kinds=["reflection"]) == []
    assert sent == []  # a reflection is saved, never sent to the chat


async def test_a_reminder_asked_for_is_valid_or_not_set(
        lane_app: App, lane_clock: ManualClock) -> None:
    alice = await _say(lane_app, lane_clock,
                       "Please set a reminder: call mom tomorrow at 9am.", "alice")
    assert lane_app.repos is not None
    for reminder in await lane_app.repos.reminders.for_owner(alice.id):
        assert reminder.text.strip()
        assert reminder.owner_id == alice.id
        assert reminder.due_at > lane_clock.now() - timedelta(minutes=1)
