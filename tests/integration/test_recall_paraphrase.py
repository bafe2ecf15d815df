"""Asking in other words than were said (issue 37, item 1), on a real database with the fake
server's hashed embeddings (a bag of words: no two words mean the same to it, the worst case):
a hypothetical line (`also`) brings back what the question's words alone cannot, a line that
matches nothing specific leaves recall silent, and a question asking for a kind of fact by name
("job") reaches the line stating one ("pharmacist") through the fact bridge."""

from __future__ import annotations

from dataclasses import replace

import pytest

from strata.bot.llm import OpenAIEmbedder
from strata.core.clock import ManualClock
from strata.memory.engines.db import Database
from strata.memory.recall.search import Recall
from strata.memory.recall.types import RecallResult, RecallTuning
from tests.integration import test_recall
from tests.memory_helpers import channel, filler, person, recall_reads, row_indexer, turn, turns

emb = test_recall.emb  # the fixture: the fake server's hashed embedder

BEAGLE = "We finally adopted a beagle puppy, we call him Biscuit."


async def _memory(db: Database, clock: ManualClock, said: str | None) -> int:
    """Alice's 80 turns of filler, with `said` among them; her id."""
    alice = await person(db, "alice", clock)
    console = await channel(db, alice, "alice/default", clock)
    await turns(db, console, alice, [filler(i) for i in range(40)], clock, minutes=2)
    if said is not None:
        await turn(db, console, alice, said, clock, reply="Nice!")
        clock.advance(minutes=2)
    await turns(db, console, alice, [filler(i) for i in range(40, 80)], clock, minutes=2)
    clock.advance(days=2)
    return alice.id


async def _search(db: Database, emb: OpenAIEmbedder, clock: ManualClock, owner: int,
                  query: str, also: tuple[str, ...] = (), **tuning: object) -> RecallResult:
    await row_indexer(db, emb).index_all()
    recall = Recall(recall_reads(db), emb, clock, replace(RecallTuning(), **tuning))
    try:
        return await recall.search(owner, query, clock.now(), also=also)
    finally:
        await recall.close()


async def test_a_hypothetical_line_finds_what_the_question_words_miss(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    owner = await _memory(db, clock, BEAGLE)
    question = "What is the name of my dog?"
    # The dog bridge off ("beagle" answers "dog"): the question's words alone find nothing.
    alone = await _search(db, emb, clock, owner, question, fact_bridges=False)
    assert BEAGLE not in (alone.render() or "")  # no word in common: nothing comes back
    hinted = await _search(db, emb, clock, owner, question, fact_bridges=False,
                           also=("We adopted a puppy, we call him Rex.",))
    assert BEAGLE in (hinted.render() or ""), hinted.render()
    # The line is a search aid only: it is never quoted.
    assert "Rex" not in (hinted.render() or "")


async def test_a_hypothetical_line_that_matches_nothing_specific_stays_silent(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    owner = await _memory(db, clock, None)
    hinted = await _search(db, emb, clock, owner, "What is the name of my dog?",
                           also=("We adopted a puppy, we call him Rex.",))
    assert hinted.items == ()


async def test_the_hints_words_do_not_count_for_the_gate_unless_asked(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    """The gate's coverage reads the question's own words: a line whose every word is in
    memory, on a question whose words are not, does not open it by keywords alone."""
    owner = await _memory(db, clock, None)
    line = filler(3)  # words memory holds, in one row
    asked = "Which opera did Zoe sing?"
    own = await _search(db, emb, clock, owner, asked, also=(line,), w_semantic=0.0,
                        gate_cosine=0.0)
    assert own.items == ()
    counted = await _search(db, emb, clock, owner, asked, also=(line,), w_semantic=0.0,
                            gate_cosine=0.0, hint_coverage=True, gate_unknown_name=0.0,
                            gate_only_strangers=0.0)
    assert counted.items  # the same line, its words counted, opens the gate


# The hashed vectors are noise to these questions: the bridge is tested on keywords alone.
KEYWORDS_ONLY = {"w_semantic": 0.0, "gate_cosine": 0.0}


@pytest.mark.parametrize("said", ["I work as a pharmacist", "I started as a carpenter last spring",
                                  "Big news, I accepted a position as a surgeon"])
async def test_a_question_about_a_job_reaches_the_line_that_states_one(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, said: str) -> None:
    owner = await _memory(db, clock, said)
    found = await _search(db, emb, clock, owner, "What is my job?", **KEYWORDS_ONLY)
    assert found.items and said in found.items[0].text, found.render()  # first
    without = await _search(db, emb, clock, owner, "What is my job?", fact_bridges=False,
                            **KEYWORDS_ONLY)
    assert without.items == ()


@pytest.mark.parametrize("said", [
    "Cooked soup for the nurse next door, she loved it",  # "cooked" is no profession
    "Turns out I'm allergic to kiwi, the doctor confirmed it",  # a doctor, not a job
    "Work is dragging today",  # work, but no job named
])
async def test_a_question_about_a_job_is_silent_when_no_job_was_said(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, said: str) -> None:
    owner = await _memory(db, clock, said)
    found = await _search(db, emb, clock, owner, "What is my job?", **KEYWORDS_ONLY)
    assert found.items == ()


HARP = "I've been practising the harp every evening."


@pytest.mark.parametrize(("said", "question"), [
    (HARP, "Which musical instrument am I learning?"),
    ("I signed up for accordion lessons, my fingers hurt already.", "What instrument do I play?"),
    (BEAGLE, "What is the name of my dog?"),
    ("Had my first Portuguese lesson today, so hard", "Which languages do I know?"),
])
async def test_a_question_asking_by_kind_reaches_the_line_that_names_one(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, said: str, question: str) -> None:
    owner = await _memory(db, clock, said)
    found = await _search(db, emb, clock, owner, question, **KEYWORDS_ONLY)
    assert found.items and said in found.items[0].text, found.render()  # first
    without = await _search(db, emb, clock, owner, question, fact_bridges=False,
                            **KEYWORDS_ONLY)
    assert without.items == ()


@pytest.mark.parametrize(("said", "question"), [
    # Words that share a stem with an instrument's, or name one with no cue beside it.
    ("Bought organic carrots, and the car horn broke again", "Which instrument am I learning?"),
    ("We had French toast at the new place", "Which language am I learning?"),
    # Memory holds an instrument, but the question is about someone it never mentions.
    (HARP, "Which instrument is Kwame learning?"),
])
async def test_a_question_asking_by_kind_is_silent_when_memory_holds_no_answer(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock, said: str, question: str) -> None:
    owner = await _memory(db, clock, said)
    found = await _search(db, emb, clock, owner, question, **KEYWORDS_ONLY)
    assert found.items == ()
