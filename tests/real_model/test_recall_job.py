"""Issue 37's last check, with the embedded default's e5 embedder and a fresh install: a
person who said "I work as a pharmacist" once, among 200 other turns of everyday chat (each
with the bot's short answer), asks "What is my job?" and recall brings that line back, first;
another person's "I work as a carpenter" never reaches her. The question shares no word with
the line and a small sentence model does not see them as close (the gate was silent before
the fact bridge); the bridge from "job" to the professions the fact reader knows does."""

from __future__ import annotations

import random
import uuid

from strata.app.compose import App
from strata.bot.hypothetical import HypotheticalTurn
from strata.core.clock import ManualClock
from strata.core.types import ChannelKind, NewRow, Role
from strata.evaluation.synth import DID, FELT, REACTIONS, SMALL_TALK, WHEN

QUESTION = "What is my job?"


async def _chat(app: App, clock: ManualClock, name: str, said: str, seed: int) -> int:
    """`name`'s 200 turns of small talk with `said` once among them; her id."""
    who = await app.persons.get_or_create(f"console:{name}", name, clock.now())
    ch = await app.channels.get_or_create(platform="console", room_ref=f"{name}/default",
                                          owner_id=who.id, kind=ChannelKind.PRIVATE,
                                          source="user", now=clock.now(), name=name)
    rng = random.Random(seed)
    lines = [*SMALL_TALK, *(f"{w} I {d}, {f}." for w in WHEN for d in DID for f in FELT)]
    rng.shuffle(lines)
    for i in range(201):
        text = said if i == 120 else lines[i % len(lines)]
        tid = uuid.uuid4().hex
        await app.transcript.append([
            NewRow(ch.id, who.id, clock.now(), ch.source, Role.USER, text, tid),
            NewRow(ch.id, None, clock.now(), ch.source, Role.ASSISTANT, rng.choice(REACTIONS),
                   tid)])
        clock.advance(minutes=6 if i % 20 else 60 * 20)
    return who.id


async def test_what_is_my_job_brings_back_the_line_that_said_it(
        lane_app: App, lane_clock: ManualClock) -> None:
    alice = await _chat(lane_app, lane_clock, "alice", "I work as a pharmacist", 1)
    bob = await _chat(lane_app, lane_clock, "bob", "I work as a carpenter", 2)
    assert lane_app.row_indexer is not None and lane_app.recall is not None
    await lane_app.row_indexer.index_all()
    lane_clock.advance(days=2)
    for owner, said, other in ((alice, "pharmacist", "carpenter"),
                               (bob, "carpenter", "pharmacist")):
        result = await lane_app.recall.search(owner, QUESTION, lane_clock.now())
        block = result.render() or ""
        assert said in result.items[0].text, block  # brought back, first
        assert other not in block  # one person's memory never reaches another


async def test_the_small_models_line_is_one_short_line_and_only_a_search_aid(
        lane_app: App, lane_clock: ManualClock) -> None:
    """The hypothetical turn with a real small model (SmolLM2 in this lane): whatever it
    writes is one short line or nothing, recall with it still brings the person's words back,
    and nothing is stored."""
    alice = await _chat(lane_app, lane_clock, "alice", "I work as a pharmacist", 1)
    assert lane_app.row_indexer is not None and lane_app.recall is not None
    await lane_app.row_indexer.index_all()
    lane_clock.advance(days=2)
    before = await lane_app.transcript.for_owner(alice)
    writer = HypotheticalTurn(lambda _owner: lane_app.chat, seconds=120)
    line = await writer.line(alice, QUESTION)
    assert line is None or (line.strip() and "\n" not in line and len(line) <= 200
                            and not line.endswith("?")), line
    result = await lane_app.recall.search(alice, QUESTION, lane_clock.now(),
                                          also=(line,) if line else ())
    assert "pharmacist" in (result.render() or "")
    assert await lane_app.transcript.for_owner(alice) == before  # the line is stored nowhere
