"""The bot's words are not evidence about the person (issue 34, item 3): on a real database,
with the fake server's embeddings made to see "job" and "work" as one topic (as a sentence
model does), recall for "What is my job?" brings back what the person said, never the bot's
wrong answer to the same question."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import numpy as np
import pytest

from strata.bot.llm import OpenAIEmbedder
from strata.core.clock import ManualClock
from strata.memory.engines.db import Database
from strata.memory.recall.search import Recall
from strata.memory.recall.types import RecallTuning
from tests.conftest import START
from tests.fakes.openai_server import FakeOpenAI, hashed_embedding
from tests.memory_helpers import (
    channel,
    embedder_for,
    filler,
    person,
    recall_reads,
    row_indexer,
    turn,
    turns,
)

PHARMACIST = "I work as a pharmacist"
WRONG = "My job is to help people with their questions."
WORK_WORDS = {"job", "work", "works", "pharmacist", "career"}


def topical(text: str, dim: int) -> np.ndarray:
    """Hashed words, plus one shared topic word for any word about work: what a sentence
    model's "job" ~ "work as a pharmacist" similarity looks like to recall."""
    words = {w.strip("?.,!").lower() for w in text.split()}
    extra = " occupation occupation occupation" if words & WORK_WORDS else ""
    return hashed_embedding(text + extra, dim)


@pytest.fixture
async def emb(fake_openai: FakeOpenAI) -> AsyncIterator[OpenAIEmbedder]:
    fake_openai.embed_fn = topical
    embedder = embedder_for(fake_openai)
    yield embedder
    await embedder.close()


async def _memory(db: Database, clock: ManualClock) -> tuple[int, list[int], list[int]]:
    """Alice said once what she does, among other turns; days later she asked the bot and it
    answered wrongly. Her id, the pharmacist turn's rows and the wrong exchange's rows."""
    alice = await person(db, "alice", clock)
    console = await channel(db, alice, "alice/default", clock)
    await turns(db, console, alice, [filler(i) for i in range(30)], clock, minutes=2)
    said = await turn(db, console, alice, PHARMACIST, clock, reply="That sounds demanding.")
    clock.advance(minutes=2)
    await turns(db, console, alice, [filler(i) for i in range(30, 60)], clock, minutes=2)
    clock.advance(days=3)
    wrong = await turn(db, console, alice, "What is my job?", clock, reply=WRONG)
    clock.advance(minutes=2)
    await turns(db, console, alice, [filler(i) for i in range(60, 70)], clock, minutes=2)
    return alice.id, said, wrong


async def _search(db: Database, emb: OpenAIEmbedder, clock: ManualClock, owner: int,
                  query: str, **tuning: object) -> tuple[list[tuple[int, ...]], str]:
    await row_indexer(db, emb).index_all()
    recall = Recall(recall_reads(db), emb, clock, replace(RecallTuning(), **tuning))
    try:
        result = await recall.search(owner, query, clock.now())
    finally:
        await recall.close()
    return [i.cited_rows for i in result.items], result.render() or ""


async def test_the_persons_words_outrank_the_bots_wrong_answer(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    owner, said, wrong = await _memory(db, clock)
    cited, block = await _search(db, emb, clock, owner, "What is my job?")
    assert cited, "recall found nothing"
    assert said[0] in cited[0], block  # the person's own line is the best item
    assert PHARMACIST in block
    assert "help people" not in block  # the bot's wrong answer is not brought back
    assert not any(wrong[1] in c for c in cited)
    assert "What is my job?" not in block  # nor the question it answered


async def test_where_the_assistant_is_a_person_its_words_stay_evidence(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    """The recall eval's second speaker is a person stored as the assistant: with
    `assistant_as_evidence` its lines rank like anyone's (the previous behaviour)."""
    owner, _, wrong = await _memory(db, clock)
    cited, block = await _search(db, emb, clock, owner, "What is my job?",
                                 assistant_as_evidence=True)
    assert any(wrong[1] in c for c in cited)
    assert "help people" in block


async def test_a_bots_question_is_shown_as_context_for_the_answer_and_marked(
        db: Database, emb: OpenAIEmbedder, clock: ManualClock) -> None:
    """A short answer means something only with the bot's question before it: that question
    counts for the answer's window and is quoted, labelled as the bot's, before it."""
    alice = await person(db, "alice", clock)
    console = await channel(db, alice, "alice/default", clock)
    await turns(db, console, alice, [filler(i) for i in range(20)], clock, minutes=2)
    asked = await turn(db, console, alice, "hello again", clock,
                       reply="Which city do you live in now?")
    clock.advance(minutes=1)
    answer = await turn(db, console, alice, "Porto, since last spring", clock, reply="Nice!")
    clock.advance(minutes=2)
    await turns(db, console, alice, [filler(i) for i in range(20, 40)], clock, minutes=2)
    clock.set(START.replace(day=START.day + 5))
    cited, block = await _search(db, emb, clock, alice.id, "Which city do I live in?")
    assert cited and answer[0] in cited[0], block
    assert asked[1] in cited[0]
    question = block.index("you (the bot): Which city do you live in now?")
    assert question < block.index("alice: Porto, since last spring")
    assert "Nice!" not in block  # the bot's other replies are not shown
